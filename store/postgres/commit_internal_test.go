package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/storetest"
)

// lossyProxy forwards TCP connections to PostgreSQL and, once armed for a
// client connection, loses the next exchange on it: dropAfter forwards
// the client's next bytes (the batch carrying COMMIT) and closes both
// sides when the server answers, so the commit happens and the client
// never hears of it; dropBefore closes both sides instead of forwarding,
// so the server aborts the transaction.
type lossyProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	armed map[string]lossMode // by the client's address
	down  bool                // new connections are closed at once
	fired chan lossMode
}

// setDown makes the database unreachable through the proxy (new
// connections are closed) or reachable again.
func (p *lossyProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

type lossMode int

const (
	dropAfter lossMode = iota + 1
	dropBefore
)

func newLossyProxy(t *testing.T, target string) *lossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{ln: ln, target: target, armed: map[string]lossMode{}, fired: make(chan lossMode, 16)}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *lossyProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

// arm makes the next exchange of the connection whose client end is
// local be lost as mode says.
func (p *lossyProxy) arm(local net.Addr, mode lossMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed[local.String()] = mode
}

func (p *lossyProxy) take(client string) lossMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.armed[client]
	delete(p.armed, client)
	return m
}

func (p *lossyProxy) pipe(c net.Conn) {
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	if down {
		c.Close()
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	var (
		once     sync.Once
		poisoned = make(chan struct{})
	)
	closeBoth := func() { c.Close(); s.Close() }
	client := c.RemoteAddr().String()
	go func() { // server to client
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				select {
				case <-poisoned:
					closeBoth()
					p.fired <- dropAfter
					return
				default:
				}
				if _, werr := c.Write(buf[:n]); werr != nil {
					closeBoth()
					return
				}
			}
			if err != nil {
				closeBoth()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			switch p.take(client) {
			case dropBefore:
				closeBoth()
				p.fired <- dropBefore
				return
			case dropAfter:
				once.Do(func() { close(poisoned) })
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				closeBoth()
				return
			}
		}
		if err != nil {
			closeBoth()
			return
		}
	}
}

func testDSN(t *testing.T) string {
	t.Helper()
	d := os.Getenv("PLATFORM_POSTGRES_DSN")
	if d == "" {
		t.Skip("PLATFORM_POSTGRES_DSN not set")
	}
	return d
}

// proxied opens a store on a fresh schema through a lossyProxy.
func proxied(t *testing.T) (*Store, *lossyProxy) {
	t.Helper()
	d := testDSN(t)
	u, err := url.Parse(d)
	if err != nil {
		t.Fatal(err)
	}
	p := newLossyProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	// One exchange per batch, as in production once statements are
	// cached: no prepare round trip before the batch carrying COMMIT.
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	b := make([]byte, 8)
	rand.Read(b)
	schema := "lk_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, d)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	})
	s, err := Open(t.Context(), u.String(), Options{Schema: schema, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p
}

// armClaimed makes the proxy lose the commit of the next write
// transaction that carries an Idempotency-Key claim.
func armClaimed(s *Store, p *lossyProxy, mode lossMode) {
	var once sync.Once
	hook := func(ctx context.Context, conn *pgx.Conn, _ int64) {
		if len(idempotency.Pending(ctx)) > 0 {
			once.Do(func() { p.arm(conn.PgConn().Conn().LocalAddr(), mode) })
		}
	}
	s.conn.commitHook.Store(&hook)
}

func fired(t *testing.T, p *lossyProxy, want lossMode) {
	t.Helper()
	select {
	case got := <-p.fired:
		if got != want {
			t.Fatalf("proxy lost %v, want %v", got, want)
		}
	default:
		t.Fatal("the proxy lost no commit")
	}
}

// A commit whose connection is lost after the server committed is
// resolved as the success it was, on both write paths (Pipeline, Tx); one
// lost before the server saw COMMIT is the 503 it was, storing nothing.
// The Idempotency-Key bound in the lost commit keeps a retry from
// storing again.
func TestLostCommitIsResolved(t *testing.T) {
	s, p := proxied(t)
	ctx := t.Context()
	tn := storetest.NewTenant("LOST000001")
	if err := s.CreateTenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	k := &idempotency.Keeper{Store: s, Clock: clocktest.New(storetest.Epoch)}
	count := func() int {
		evs, _, err := s.QueryEvents(ctx, tn.ID, events.Query{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	ev := func() []*events.Event {
		return []*events.Event{storetest.NewEvent(t, tn.ID, `{"event_type_id":"10001","end_user":{"id":"u"}}`, storetest.Epoch)}
	}

	t.Run("pipeline committed", func(t *testing.T) {
		_, _, cl, err := k.Begin(ctx, "sc", "after", []byte("fp"))
		if err != nil {
			t.Fatal(err)
		}
		armClaimed(s, p, dropAfter)
		err = s.AppendEventsAudited(idempotency.WithClaim(ctx, cl), ev(), nil)
		fired(t, p, dropAfter)
		if err != nil {
			t.Fatalf("append whose commit took place: %v, want success", err)
		}
		if !cl.Bound() || count() != 1 {
			t.Fatalf("bound %v, %d events stored; want bound, 1", cl.Bound(), count())
		}
		// The retry with the key does not run again.
		if o, _, _, err := k.Begin(ctx, "sc", "after", []byte("fp")); err != nil || o != idempotency.InFlight {
			t.Errorf("retry before the answer is kept: %v %v, want InFlight", o, err)
		}
		if err := k.Finish(ctx, cl, 200, "application/json", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if o, _, _, err := k.Begin(ctx, "sc", "after", []byte("fp")); err != nil || o != idempotency.Replay {
			t.Errorf("retry: %v %v, want Replay", o, err)
		}
		// Even a write that still carries the claim stores nothing.
		err = s.AppendEventsAudited(idempotency.WithClaim(ctx, &idempotency.Claim{Scope: "sc", Key: "after", Token: cl.Token}), ev(), nil)
		if !fault.Is(fault.Conflict, err) || count() != 1 {
			t.Errorf("second write under the key: %v, %d events; want Conflict, 1", err, count())
		}
	})

	t.Run("pipeline lost before commit", func(t *testing.T) {
		_, _, cl, err := k.Begin(ctx, "sc", "before", []byte("fp"))
		if err != nil {
			t.Fatal(err)
		}
		armClaimed(s, p, dropBefore)
		err = s.AppendEventsAudited(idempotency.WithClaim(ctx, cl), ev(), nil)
		fired(t, p, dropBefore)
		if !fault.Is(fault.Unavailable, err) || cl.Bound() || count() != 1 {
			t.Fatalf("append lost before its commit: %v, bound %v, %d events; want Unavailable, unbound, 1", err, cl.Bound(), count())
		}
		// A 5xx releases the key; the retry runs and stores once.
		if err := k.Finish(ctx, cl, 503, "", nil); err != nil {
			t.Fatal(err)
		}
		o, _, retry, err := k.Begin(ctx, "sc", "before", []byte("fp"))
		if err != nil || o != idempotency.Proceed {
			t.Fatalf("retry: %v %v, want Proceed", o, err)
		}
		if err := s.AppendEventsAudited(idempotency.WithClaim(ctx, retry), ev(), nil); err != nil || count() != 2 {
			t.Errorf("retry: %v, %d events; want 2", err, count())
		}
	})

	t.Run("outcome unknown", func(t *testing.T) {
		// The database stays out of reach after the lost commit: the
		// outcome cannot be learnt, and the answer says so (503) after
		// asking for a while.
		_, _, cl, err := k.Begin(ctx, "sc", "unknown", []byte("fp"))
		if err != nil {
			t.Fatal(err)
		}
		s.conn.resolveFor = 200 * time.Millisecond
		defer func() { s.conn.resolveFor = 0 }()
		var once sync.Once
		hook := func(ctx context.Context, conn *pgx.Conn, _ int64) {
			if len(idempotency.Pending(ctx)) > 0 {
				once.Do(func() {
					p.setDown(true)
					p.arm(conn.PgConn().Conn().LocalAddr(), dropAfter)
				})
			}
		}
		s.conn.commitHook.Store(&hook)
		err = s.AppendEventsAudited(idempotency.WithClaim(ctx, cl), ev(), nil)
		fired(t, p, dropAfter)
		p.setDown(false)
		if !fault.Is(fault.Unavailable, err) || !strings.Contains(err.Error(), "outcome could not be learnt") {
			t.Fatalf("append of unknown outcome: %v, want Unavailable naming the unknown outcome", err)
		}
		// The request answers 503, which releases its key, but the commit
		// took place and bound it: the key stays, and the retry that
		// follows the 503 does not store the events again.
		before := count()
		if err := k.Finish(ctx, cl, 503, "", nil); err != nil {
			t.Fatal(err)
		}
		if o, _, _, err := k.Begin(ctx, "sc", "unknown", []byte("fp")); err != nil || o != idempotency.InFlight {
			t.Errorf("retry after the 503: %v %v, want InFlight (stored, not run again)", o, err)
		}
		if count() != before {
			t.Errorf("events stored by the retry")
		}
	})

	t.Run("tx committed", func(t *testing.T) {
		_, _, cl, err := k.Begin(ctx, "sc", "tx", []byte("fp"))
		if err != nil {
			t.Fatal(err)
		}
		armClaimed(s, p, dropAfter)
		other := storetest.NewTenant("LOST000002")
		err = s.CreateTenant(idempotency.WithClaim(ctx, cl), other)
		fired(t, p, dropAfter)
		if err != nil || !cl.Bound() {
			t.Fatalf("create whose commit took place: %v, bound %v", err, cl.Bound())
		}
		if _, err := s.GetTenant(ctx, other.ID); err != nil {
			t.Error(err)
		}
	})
}

// The case end to end: the database connection is lost while an
// event post's commit is in flight, after PostgreSQL committed it. The
// client gets its 200 (not 503), the events are stored once, and a retry
// with the same Idempotency-Key is answered the same, storing nothing.
func TestEventPostWithLostCommitAnswersSuccess(t *testing.T) {
	s, p := proxied(t)
	plat, err := latchkey.New(t.Context(), latchkey.Config{Store: s, MasterKey: seal.NewKey(), Issuer: "test",
		PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plat.Close() })
	if _, err := plat.Bootstrap(t.Context(), "correct-horse-1"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(plat, httpapi.Defaults()))
	t.Cleanup(srv.Close)
	do := func(method, path, body string, header ...string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for _, h := range header {
			k, v, _ := strings.Cut(h, ": ")
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	field := func(body, name string) string {
		var m map[string]any
		json.Unmarshal([]byte(body), &m)
		v, _ := m[name].(string)
		return v
	}
	_, _, login := do("POST", "/api/v1/auth/tokens/", `{"name":"admin","password":"correct-horse-1","auth_domain":"root"}`)
	admin := "Authorization: Bearer " + field(login, "jwt")
	root, err := s.GetTenantByCode(t.Context(), identity.RootTenantCode)
	if err != nil {
		t.Fatal(err)
	}
	_, _, cl := do("POST", "/api/v1/admin/tenants/"+root.ID+"/oauth-clients", `{"name":"poster","scopes":["event:event:producer"]}`, admin)
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {field(cl, "client_id")}, "client_secret": {field(cl, "client_secret")}}
	resp, err := srv.Client().PostForm(srv.URL+"/oauth/v1/token", form)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	producer := "Authorization: Bearer " + tok.AccessToken

	body := `{"a":{"event_type_id":"10001","end_user":{"id":"alice"}}}`
	armClaimed(s, p, dropAfter)
	status, _, first := do("POST", "/events/v1/events", body, producer, "Idempotency-Key: lost-commit")
	fired(t, p, dropAfter)
	if status != 200 {
		t.Fatalf("post whose commit took place: %d %s, want 200", status, first)
	}
	status, h, again := do("POST", "/events/v1/events", body, producer, "Idempotency-Key: lost-commit")
	if status != 200 || h.Get("Idempotent-Replayed") != "true" || again != first {
		t.Errorf("retry: %d %v %s, want the first answer replayed", status, h, again)
	}
	evs, _, err := s.QueryEvents(t.Context(), root.ID, events.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.TypeID == "10001" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d posted events stored, want 1", n)
	}
}
