package server_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tcpBackend greets every connection with its name, then echoes.
type tcpBackend struct {
	name string
	ln   net.Listener
	wg   sync.WaitGroup
}

func startTCPBackend(t *testing.T, ip string, port int, name string) *tcpBackend {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("backend %s: %v", name, err)
	}
	b := &tcpBackend{name: name, ln: ln}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.WriteString(c, name+"\n")
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(b.stop)
	return b
}

func (b *tcpBackend) port() int { return b.ln.Addr().(*net.TCPAddr).Port }

func (b *tcpBackend) stop() {
	_ = b.ln.Close()
	b.wg.Wait()
}

// udpBackend answers each datagram with "name:payload".
func startUDPBackend(t *testing.T, ip string, port int, name string) *net.UDPConn {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip), Port: port})
	if err != nil {
		t.Fatalf("udp backend %s: %v", name, err)
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteToUDP([]byte(name+":"+string(buf[:n])), from)
		}
	}()
	t.Cleanup(func() { _ = pc.Close() })
	return pc
}

// tcpConn is a client connection through the load balancer.
type tcpConn struct {
	net.Conn
	r       *bufio.Reader
	backend string
}

// dialLB connects from src (empty: any) and reads the backend's greeting.
func dialLB(vip string, port int, src string) (*tcpConn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c, err := d.Dial("tcp", net.JoinHostPort(vip, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &tcpConn{Conn: c, r: r, backend: strings.TrimSpace(line)}, nil
}

func (c *tcpConn) echo(msg string) error {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return err
	}
	got, err := c.r.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(got) != msg {
		return errors.New("echo mismatch: " + got)
	}
	return nil
}

func udpAsk(vip string, port int, src, msg string) (string, error) {
	var laddr *net.UDPAddr
	if src != "" {
		laddr = &net.UDPAddr{IP: net.ParseIP(src)}
	}
	c, err := net.DialUDP("udp", laddr, &net.UDPAddr{IP: net.ParseIP(vip), Port: port})
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
