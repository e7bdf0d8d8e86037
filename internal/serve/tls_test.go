package serve

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultPublicURL(t *testing.T) {
	for _, tt := range []struct {
		scheme, addr, want string
		wildcard           bool
	}{
		{"http", "127.0.0.1:8080", "http://127.0.0.1:8080", false},
		{"http", ":8080", "http://localhost:8080", true},
		{"http", "0.0.0.0:8080", "http://localhost:8080", true},
		{"http", "[::]:8080", "http://localhost:8080", true},
		{"https", "[::1]:8443", "https://[::1]:8443", false},
		{"https", "id.example:443", "https://id.example:443", false},
	} {
		got, wildcard := DefaultPublicURL(tt.scheme, tt.addr)
		if got != tt.want || wildcard != tt.wildcard {
			t.Errorf("DefaultPublicURL(%q, %q) = %q, %v; want %q, %v", tt.scheme, tt.addr, got, wildcard, tt.want, tt.wildcard)
		}
	}
}

// TestTLSProfile: the HTTPS listener offers TLS 1.3 and, in TLS 1.2, only
// ECDHE AEAD suites (Mozilla "intermediate"): a client that offers only CBC
// suites, or only TLS 1.1, fails the handshake; HTTP/2 is negotiated
// through ALPN.
func TestTLSProfile(t *testing.T) {
	cert, err := serverCertificate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(r.Proto)) }), TLSConfig: TLSConfig(cert)}
	go srv.ServeTLS(ln, "", "")
	defer srv.Close()
	addr := ln.Addr().String()
	handshake := func(c *tls.Config) (tls.ConnectionState, error) {
		c.InsecureSkipVerify = true
		conn, err := tls.Dial("tcp", addr, c)
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer conn.Close()
		return conn.ConnectionState(), nil
	}
	cbc := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
		tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256}
	for _, tt := range []struct {
		name   string
		client *tls.Config
		ok     bool
	}{
		{"TLS 1.3", &tls.Config{MinVersion: tls.VersionTLS13}, true},
		{"TLS 1.2 AEAD", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}, true},
		{"TLS 1.2 ChaCha20", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}}, true},
		{"TLS 1.2 CBC only", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: cbc}, false},
		{"TLS 1.1", &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := handshake(tt.client)
			if tt.ok != (err == nil) {
				t.Fatalf("handshake: %v (suite %s), want ok=%v", err, tls.CipherSuiteName(st.CipherSuite), tt.ok)
			}
		})
	}
	t.Run("HTTP/2 through ALPN", func(t *testing.T) {
		st, err := handshake(&tls.Config{NextProtos: []string{"h2", "http/1.1"}})
		if err != nil || st.NegotiatedProtocol != "h2" {
			t.Fatalf("ALPN %q, %v; want h2", st.NegotiatedProtocol, err)
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Proto != "HTTP/2.0" {
			t.Errorf("proto %s, want HTTP/2.0", resp.Proto)
		}
	})
}

// TestIssuerOfAWildcardAddress: a server started on a wildcard address
// without -public-url calls itself localhost (with a warning), never
// "[::]", and its metadata names the TLS listener's endpoints as
// mtls_endpoint_aliases.
func TestIssuerOfAWildcardAddress(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() {
		done <- Run(ctx, Config{Addr: ":0", TLSAddr: "127.0.0.1:0", DataDir: t.TempDir(), AdminPassword: "wildcard-admin-1",
			Logger: slog.New(slog.NewTextHandler(logs, nil)), Ready: func(h, s string) { ready <- [2]string{h, s} }})
	}()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("server exited: %v", err)
	}
	defer func() {
		cancel()
		<-done
	}()
	_, port, _ := net.SplitHostPort(addrs[0])
	resp, err := http.Get("http://127.0.0.1:" + port + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	got := map[string]any{"issuer": md["issuer"], "token_endpoint": md["token_endpoint"], "mtls": md["mtls_endpoint_aliases"].(map[string]any)["token_endpoint"]}
	want := map[string]any{"issuer": "http://localhost:" + port, "token_endpoint": "http://localhost:" + port + "/oauth/v1/token", "mtls": "https://" + addrs[1] + "/oauth/v1/token"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("metadata (-want +got):\n%s", d)
	}
	if !strings.Contains(logs.String(), "use localhost") {
		t.Errorf("no warning about the wildcard address in the log:\n%s", logs.String())
	}
}

// syncBuffer is a log destination the server writes from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
