package bench_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/sqlite"
)

// env is a platform on the default store (SQLite, synchronous=FULL: every
// acknowledged audit record is on disk) behind a loopback HTTP server.
type env struct {
	p      *latchkey.Platform
	srv    *httptest.Server
	client *http.Client
	root   identity.Tenant
	admin  identity.Principal
	dbPath string // the SQLite file, for newEnv's platforms
}

func newEnv(b *testing.B, params identity.PasswordParams, opts ...func(*latchkey.Config)) *env {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	e := newEnvOn(b, st, params, opts...)
	e.dbPath = path
	return e
}

// newEnvOn is newEnv on a store the caller opened (and closes).
func newEnvOn(b *testing.B, st latchkey.Store, params identity.PasswordParams, opts ...func(*latchkey.Config)) *env {
	b.Helper()
	ctx := context.Background()
	cfg := latchkey.Config{Store: st, MasterKey: seal.NewKey(), PasswordParams: params, AllowWeakPasswordHashing: true}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := latchkey.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	boot, err := p.Bootstrap(ctx, "bench-password-1")
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(p, httpapi.Defaults()))
	b.Cleanup(srv.Close)
	admin := identity.Principal{Kind: identity.KindUser, TenantID: boot.Tenant.ID, TenantCode: boot.Tenant.Code, Roles: []string{identity.RoleTenantAdmin}}
	return &env{p: p, srv: srv, client: loopbackClient(), root: boot.Tenant, admin: admin}
}

// loopbackClient keeps enough idle connections for parallel benchmarks, so
// they measure requests rather than TCP handshakes.
func loopbackClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
}

func drain(b *testing.B, resp *http.Response, err error) {
	if err != nil {
		b.Error(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		b.Errorf("status %d", resp.StatusCode)
	}
}

func postForm(c *http.Client, u string, form url.Values) (*http.Response, error) {
	return c.Post(u, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
}
