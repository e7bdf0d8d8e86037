package main

import (
	"net"
	"sync"
	"time"
)

// proxy forwards TCP connections from its loopback listener to target (a
// server process's connections to the database), and injects the network
// faults: Drop closes every connection at once, as a reset would; Stall
// stops forwarding, both ways, for a while, as a congested or partitioned
// network does, without closing anything.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	gate  chan struct{} // non-nil while stalled; closed when the stall ends
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p, nil
}

// Port is the listener's port.
func (p *proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Close stops accepting and drops every connection.
func (p *proxy) Close() {
	p.ln.Close()
	p.Drop()
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *proxy) handle(c net.Conn) {
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		p.pipe(s, c)
		close(done)
	}()
	p.pipe(c, s)
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// pipe copies src to dst, waiting at the gate before each write, and
// closes both when either side ends.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) wait() {
	p.mu.Lock()
	g := p.gate
	p.mu.Unlock()
	if g != nil {
		<-g
	}
}

// Drop closes every open connection.
func (p *proxy) Drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns) / 2
	for c := range p.conns {
		c.Close()
	}
	return n
}

// Stall holds every byte, both ways and on every connection (new ones
// too), for d.
func (p *proxy) Stall(d time.Duration) {
	p.mu.Lock()
	if p.gate != nil {
		p.mu.Unlock()
		return
	}
	g := make(chan struct{})
	p.gate = g
	p.mu.Unlock()
	time.AfterFunc(d, func() {
		p.mu.Lock()
		p.gate = nil
		p.mu.Unlock()
		close(g)
	})
}
