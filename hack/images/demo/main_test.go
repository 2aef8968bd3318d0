package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"
)

const greeting = "hello from pod p on node n\n"

func listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go serveTCP(ln, greeting)
	return ln.Addr().String()
}

// TestAnswerHTTP: an HTTP GET gets a 200 with the greeting, and GET
// /clientip the address the connection came from, here the test's own
// loopback address.
func TestAnswerHTTP(t *testing.T) {
	addr := listen(t)
	for path, want := range map[string]string{"/": greeting, "/clientip": "127.0.0.1\n"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("GET %s: got %d %q, want 200 %q", path, resp.StatusCode, body, want)
		}
	}
}

// TestAnswerClientIPFromProxyHeader: behind a load balancer that speaks
// PROXY protocol, /clientip is the client the header names, in both
// versions, and a header before a silent client still gets the line.
func TestAnswerClientIPFromProxyHeader(t *testing.T) {
	addr := listen(t)
	for _, v := range []byte{1, 2} {
		for _, path := range []string{"/clientip", "/proxyclient"} {
			if got := getPath(t, addr, v, path); !strings.HasSuffix(got, "\r\n\r\n203.0.113.7\n") {
				t.Errorf("v%d: %s got %q, want the header's source 203.0.113.7", v, path, got)
			}
		}
		c := dialWithHeader(t, addr, v)
		line, _ := bufio.NewReader(c).ReadString('\n')
		_ = c.Close()
		if line != greeting {
			t.Errorf("v%d, silent client: got %q, want %q", v, line, greeting)
		}
	}
}

// dialWithHeader connects to addr and, unless v is 0, sends a PROXY
// protocol header of version v from 203.0.113.7 as a load balancer would.
func dialWithHeader(t *testing.T, addr string, v byte) net.Conn {
	t.Helper()
	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if v != 0 {
		src := &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 41000}
		dst := &net.TCPAddr{IP: net.ParseIP("10.250.0.130"), Port: 80}
		if _, err := proxyproto.HeaderProxyFromAddrs(v, src, dst).WriteTo(c); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// getPath GETs path on addr, after a PROXY protocol header of version v
// unless v is 0, and returns the whole response.
func getPath(t *testing.T, addr string, v byte, path string) string {
	t.Helper()
	c := dialWithHeader(t, addr, v)
	defer func() { _ = c.Close() }()
	_, _ = c.Write([]byte("GET " + path + " HTTP/1.0\r\n\r\n"))
	b, _ := io.ReadAll(c)
	return string(b)
}

// TestAnswerProxyClientWithoutHeader: /proxyclient says when there was no
// header, rather than the connection's own source.
func TestAnswerProxyClientWithoutHeader(t *testing.T) {
	if got := getPath(t, listen(t), 0, "/proxyclient"); !strings.HasSuffix(got, "\r\n\r\nno PROXY header\n") {
		t.Errorf("/proxyclient without a header: got %q", got)
	}
}

func TestAnswerLineToSilentClient(t *testing.T) {
	addr := listen(t)
	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "hello from ") || line != greeting {
		t.Fatalf("got %q, want %q", line, greeting)
	}
}

func TestEchoUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go echoUDP(pc)
	c, err := (&net.Dialer{}).DialContext(t.Context(), "udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "ping" {
		t.Fatalf("echo: got %q", buf[:n])
	}
}

// The client mode succeeds on the server's greeting and reports, when the
// text never comes, what it got instead.
func TestGetUntil(t *testing.T) {
	addr := listen(t)
	var out strings.Builder
	if err := getUntil(t.Context(), "http://"+addr+"/", "hello from pod p", &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != greeting {
		t.Errorf("printed %q, want %q", out.String(), greeting)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	err := getUntil(ctx, "http://"+addr+"/", "not there", io.Discard)
	if err == nil || !strings.Contains(err.Error(), "lacks") {
		t.Errorf("want an error saying the body lacks the text, got %v", err)
	}
}
