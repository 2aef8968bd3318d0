package localcloud_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"

	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// proxyReader listens on addr and answers each connection with the
// source and destination its PROXY protocol header names, or "none".
func proxyReader(t *testing.T, addr string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				h, err := proxyproto.Read(bufio.NewReader(c))
				if err != nil {
					_, _ = fmt.Fprintf(c, "none: %v\n", err)
					return
				}
				_, _ = fmt.Fprintf(c, "v%d %s %s\n", h.Version, h.SourceAddr, h.DestinationAddr)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestLoadBalancerProxyProtocol: with the proxy-protocol annotation the
// load balancer opens each connection to a node with a PROXY protocol
// header of the version asked for, naming the client and the VIP, and
// reports ipMode Proxy; changing the version updates it in place.
func TestLoadBalancerProxyProtocol(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	a := e.instance(t, "a")
	port := proxyReader(t, a.Addresses.Internal)
	lbs, _ := e.cloud.LoadBalancer()
	svc := service(port, corev1.ProtocolTCP)
	svc.Annotations[lcprovider.AnnotationProxyProtocol] = "v2"
	nodes := []*corev1.Node{node("a", "localcloud://"+a.ID)}
	ensure := func() *corev1.LoadBalancerStatus {
		t.Helper()
		var st *corev1.LoadBalancerStatus
		err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			st, err = lbs.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
			var retry *cloudproviderapi.RetryError
			if err != nil && !errors.As(err, &retry) {
				return false, err
			}
			return st != nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := ensure()
	if len(st.Ingress) != 1 || st.Ingress[0].IPMode == nil || *st.Ingress[0].IPMode != corev1.LoadBalancerIPModeProxy {
		t.Fatalf("status %+v: want ipMode Proxy", st)
	}
	vip := st.Ingress[0].IP
	ask := func() string {
		t.Helper()
		c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(e.ctx, "tcp", net.JoinHostPort(vip, strconv.Itoa(svcPort)))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s|%s", line, c.LocalAddr())
	}
	check := func(version string) {
		t.Helper()
		got := ask()
		var v, src, dst, local string
		if _, err := fmt.Sscanf(got, "%s %s %s\n|%s", &v, &src, &dst, &local); err != nil {
			t.Fatalf("the node got %q: %v", got, err)
		}
		if v != version || src != local || dst != net.JoinHostPort(vip, strconv.Itoa(svcPort)) {
			t.Errorf("header %s from %s to %s; want %s from the client %s to the VIP %s:%d", v, src, dst, version, local, vip, svcPort)
		}
	}
	check("v2")
	svc.Annotations[lcprovider.AnnotationProxyProtocol] = "v1"
	ensure()
	check("v1")
	// Without it, the node gets the client's bytes and no header.
	delete(svc.Annotations, lcprovider.AnnotationProxyProtocol)
	if st := ensure(); *st.Ingress[0].IPMode != corev1.LoadBalancerIPModeVIP {
		t.Errorf("without PROXY protocol ipMode %s, want VIP", *st.Ingress[0].IPMode)
	}
	done := make(chan string, 1)
	go func() {
		c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(e.ctx, "tcp", net.JoinHostPort(vip, strconv.Itoa(svcPort)))
		if err != nil {
			done <- err.Error()
			return
		}
		defer func() { _ = c.Close() }()
		_, _ = c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		done <- line
	}()
	if got := <-done; got == "" || got[:4] != "none" {
		t.Errorf("without the annotation the node got %q, want no header", got)
	}
}
