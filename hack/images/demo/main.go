// Command demo is the server behind the sandbox's demo Services on real
// nodes. It speaks as the sandbox's stand-in responder does, so the same
// probes work against either: on TCP it answers an HTTP request with an
// HTTP response and anything else (or silence) with one line, "hello from
// pod P on node N"; on UDP it echoes. GET /clientip answers with the
// address the connection came from, as the pod sees it: what tells a load
// balancer that keeps the client's address from one that does not. A
// connection that starts with a PROXY protocol header (v1 or v2) is
// answered the same way, and /clientip is then the header's source;
// /proxyclient is the header's source too, or "no PROXY header", which
// tells a connection that came through such a load balancer from one that
// did not. POD_NAME and NODE_NAME come from the
// downward API.
//
// With -get URL it is a client instead, for a pod that checks what it
// reaches (a load balancer's address, say): it GETs the URL until the body
// contains -want or -timeout passes, prints the last body or error, and
// exits 0 only on a match.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pires/go-proxyproto"
)

func main() {
	tcpAddr := flag.String("tcp", ":8080", "TCP address to answer on")
	udpAddr := flag.String("udp", ":7", "UDP address to echo on (empty: none)")
	getURL := flag.String("get", "", "client mode: GET this URL instead of serving")
	want := flag.String("want", "hello from", "client mode: the text the body must contain")
	timeout := flag.Duration("timeout", time.Minute, "client mode: how long to keep trying")
	flag.Parse()
	if *getURL != "" {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		err := getUntil(ctx, *getURL, *want, os.Stdout)
		cancel()
		if err != nil {
			log.Fatalf("demo: %v", err)
		}
		return
	}
	greeting := fmt.Sprintf("hello from pod %s on node %s\n", envOr("POD_NAME", "unknown"), envOr("NODE_NAME", "unknown"))

	ln, err := net.Listen("tcp", *tcpAddr)
	if err != nil {
		log.Fatalf("demo: listen tcp %s: %v", *tcpAddr, err)
	}
	go serveTCP(ln, greeting)
	if *udpAddr != "" {
		pc, err := net.ListenPacket("udp", *udpAddr)
		if err != nil {
			log.Fatalf("demo: listen udp %s: %v", *udpAddr, err)
		}
		go echoUDP(pc)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func serveTCP(ln net.Listener, greeting string) {
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		go answer(c, greeting)
	}
}

// answer waits briefly for a request line: a client that speaks first
// (HTTP) gets an HTTP response, one that only reads gets the bare line.
func answer(c net.Conn, greeting string) {
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	br := bufio.NewReader(c)
	client, fromHeader := c.RemoteAddr(), "no PROXY header"
	if h := proxyHeader(br); h != nil {
		client = h.SourceAddr
		fromHeader, _, _ = net.SplitHostPort(client.String())
	}
	line, _ := br.ReadString('\n')
	_ = c.SetReadDeadline(time.Time{})
	if isHTTP(line) {
		body := greeting
		if f := strings.Fields(line); len(f) > 1 && f[1] == "/clientip" {
			host, _, _ := net.SplitHostPort(client.String())
			body = host + "\n"
		} else if len(f) > 1 && f[1] == "/proxyclient" {
			body = fromHeader + "\n"
		}
		_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			len(body), body)
		return
	}
	_, _ = c.Write([]byte(greeting))
}

// proxyHeader reads a PROXY protocol header if the connection starts with
// one (a load balancer with the proxy-protocol annotation sends it), and
// leaves every other first byte unread.
func proxyHeader(br *bufio.Reader) *proxyproto.Header {
	start, err := br.Peek(5)
	if err != nil || (string(start) != "PROXY" && string(start) != "\r\n\r\n\x00") {
		return nil
	}
	h, err := proxyproto.Read(br)
	if err != nil {
		return nil
	}
	return h
}

func isHTTP(line string) bool {
	for _, m := range []string{"GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS "} {
		if strings.HasPrefix(line, m) {
			return true
		}
	}
	return false
}

func echoUDP(pc net.PacketConn) {
	buf := make([]byte, 64<<10)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		_, _ = pc.WriteTo(buf[:n], addr)
	}
}

// getUntil GETs url every half second until a body contains want, which
// it writes to out; otherwise the last failure when ctx ends.
func getUntil(ctx context.Context, url, want string, out io.Writer) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var last error
	for {
		body, err := getOnce(ctx, client, url)
		if err == nil && strings.Contains(body, want) {
			_, _ = io.WriteString(out, body)
			return nil
		}
		if err == nil {
			err = fmt.Errorf("GET %s: body %q lacks %q", url, body, want)
		}
		last = err
		select {
		case <-ctx.Done():
			return last
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func getOnce(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	return string(b), nil
}
