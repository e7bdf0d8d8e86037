package main

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves a line echo on loopback.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string) (string, error) {
	t.Helper()
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestProxyForwardsDropsAndStalls(t *testing.T) {
	p, err := newProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(t, c, r, "one"); err != nil || got != "one\n" {
		t.Fatalf("through the proxy: %q %v", got, err)
	}

	// A stall holds the answer until it ends, then lets it through.
	p.Stall(300 * time.Millisecond)
	start := time.Now()
	if got, err := roundTrip(t, c, r, "two"); err != nil || got != "two\n" {
		t.Fatalf("after a stall: %q %v", got, err)
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("a stalled connection answered in %v", took)
	}

	// A drop closes the connection.
	if n := p.Drop(); n != 1 {
		t.Errorf("dropped %d connections, want 1", n)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := roundTrip(t, c, r, "three"); err == nil {
		t.Error("a dropped connection still answers")
	}
}
