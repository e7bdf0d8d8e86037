package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/internal/tracing"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/store/sqlite"
)

// spans is a platform's tracing in a test: the SDK with every span
// sampled and exported at its end to an in-memory exporter, plus a
// signal on each end so that tests wait for spans without sleeping.
type spans struct {
	exp   *tracetest.InMemoryExporter
	ended chan struct{}
}

func (s *spans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *spans) OnEnd(sdktrace.ReadOnlySpan) {
	select {
	case s.ended <- struct{}{}:
	default:
	}
}
func (s *spans) Shutdown(context.Context) error   { return nil }
func (s *spans) ForceFlush(context.Context) error { return nil }

// newSpans returns a tracer provider sampling every span, and its spans.
func newSpans(t *testing.T) (*spans, *sdktrace.TracerProvider) {
	t.Helper()
	s := &spans{exp: tracetest.NewInMemoryExporter(), ended: make(chan struct{}, 1)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(s.exp)), sdktrace.WithSpanProcessor(s))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return s, tp
}

// tracedEnv is a latchkeytest.Env with tracing on.
func tracedEnv(t *testing.T, opts ...latchkeytest.Option) (*latchkeytest.Env, *spans) {
	t.Helper()
	s, tp := newSpans(t)
	e := latchkeytest.New(t, append([]latchkeytest.Option{func(c *latchkey.Config) { c.TracerProvider = tp }}, opts...)...)
	return e, s
}

// await returns the exported spans once cond holds for them (a span ends
// after its response is sent, so a test that has the answer may not have
// the span yet). It gives up after a real-time guard of 10 seconds.
func (s *spans) await(t *testing.T, what string, cond func(tracetest.SpanStubs) bool) tracetest.SpanStubs {
	t.Helper()
	guard := time.NewTimer(10 * time.Second)
	defer guard.Stop()
	for {
		got := s.exp.GetSpans()
		if cond(got) {
			return got
		}
		select {
		case <-s.ended:
		case <-guard.C:
			t.Fatalf("no %s among the spans:\n%s", what, names(got))
		}
	}
}

func names(ss tracetest.SpanStubs) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "%s %s/%s parent %s\n", s.Name, s.SpanContext.TraceID(), s.SpanContext.SpanID(), s.Parent.SpanID())
	}
	return b.String()
}

// find returns the first span named name in trace tid (any trace when tid
// is zero).
func find(ss tracetest.SpanStubs, tid trace.TraceID, name string) (tracetest.SpanStub, bool) {
	for _, s := range ss {
		if s.Name == name && (!tid.IsValid() || s.SpanContext.TraceID() == tid) {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// tree renders the spans of trace tid as an outline, one span a line,
// children indented under their parent in name order: the shape of the
// trace, without the ids and times that change from run to run.
func tree(ss tracetest.SpanStubs, tid trace.TraceID) string {
	in := map[trace.SpanID]bool{}
	kids := map[trace.SpanID][]tracetest.SpanStub{}
	var roots []tracetest.SpanStub
	for _, s := range ss {
		if s.SpanContext.TraceID() == tid {
			in[s.SpanContext.SpanID()] = true
		}
	}
	for _, s := range ss {
		if s.SpanContext.TraceID() != tid {
			continue
		}
		if in[s.Parent.SpanID()] {
			kids[s.Parent.SpanID()] = append(kids[s.Parent.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func([]tracetest.SpanStub, string)
	walk = func(level []tracetest.SpanStub, indent string) {
		slices.SortFunc(level, func(a, b tracetest.SpanStub) int { return strings.Compare(a.Name, b.Name) })
		for _, s := range level {
			b.WriteString(indent + s.Name + "\n")
			walk(kids[s.SpanContext.SpanID()], indent+"  ")
		}
	}
	walk(roots, "")
	return b.String()
}

func attr(s tracetest.SpanStub, key attribute.Key) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	traceparent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// TestTracingTokenRequest follows a client_credentials token request on
// the SQLite store: its span continues the caller's traceparent (the
// audit record's traceID, X-Trace-Id and the span share the caller's
// trace id), is named after the route, and holds the signature; the
// audit group commit that stored its record is a trace of its own linked
// to the request's span, with the store's transaction under it.
func TestTracingTokenRequest(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "latchkey.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, s := tracedEnv(t, func(c *latchkey.Config) { c.Store = st })
	acme := e.NewTenant("Acme")
	id, secret := e.OAuthClient(acme, "tenant-admin", "audit:export")
	// A first request fills the identity service's client and tenant
	// caches, so the one followed below is the steady state of P1.
	e.AccessToken(id, secret)

	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	req, _ := http.NewRequest("POST", e.Server.URL+"/oauth/v1/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("traceparent", traceparent)
	resp, err := e.Server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Trace-Id") != callerTrace {
		t.Fatalf("token: %d, X-Trace-Id %q; want 200 and the caller's trace id", resp.StatusCode, resp.Header.Get("X-Trace-Id"))
	}
	tid, _ := trace.TraceIDFromHex(callerTrace)
	got := s.await(t, "request span and the commit of its record", func(ss tracetest.SpanStubs) bool {
		request, ok := find(ss, tid, "POST /oauth/v1/token")
		if !ok {
			return false
		}
		_, ok = commitOf(ss, "audit.commit", request)
		return ok
	})
	want := "POST /oauth/v1/token\n  identity.sign_token\n"
	if diff := cmp.Diff(want, tree(got, tid)); diff != "" {
		t.Errorf("span tree of the request (-want +got):\n%s", diff)
	}
	root, _ := find(got, tid, "POST /oauth/v1/token")
	if root.Parent.SpanID().String() != callerSpan || !root.Parent.IsRemote() || root.SpanKind != trace.SpanKindServer {
		t.Errorf("request span: parent %v (remote %v), kind %v; want the caller's span %s, remote, server", root.Parent.SpanID(), root.Parent.IsRemote(), root.SpanKind, callerSpan)
	}
	for key, want := range map[attribute.Key]attribute.Value{
		"http.route": attribute.StringValue("/oauth/v1/token"), "http.request.method": attribute.StringValue("POST"),
		"http.response.status_code": attribute.IntValue(200),
	} {
		if v, _ := attr(root, key); v != want {
			t.Errorf("request span %s = %v, want %v", key, v.Emit(), want.Emit())
		}
	}
	commit, _ := commitOf(got, "audit.commit", root)
	if diff := cmp.Diff("audit.commit\n  store.AppendAuditRecords\n", tree(got, commit.SpanContext.TraceID())); diff != "" {
		t.Errorf("span tree of the audit commit (-want +got):\n%s", diff)
	}
	if commit.SpanContext.TraceID() == tid {
		t.Error("the audit commit continued the request's trace; it serves many requests and links to them instead")
	}
	// The audit record of the issuance carries the caller's trace id.
	n := 0
	for r, err := range st.ScanAuditRecords(t.Context(), acme.ID, audit.ExportRequest{From: latchkeytest.Start.Add(-time.Hour), To: latchkeytest.Start.Add(time.Hour)}) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Action == "oauth.token" && r.TraceID == callerTrace {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d oauth.token records with the caller's trace id, want 1", n)
	}
}

// commitOf returns the group commit span called name that links to
// request.
func commitOf(ss tracetest.SpanStubs, name string, request tracetest.SpanStub) (tracetest.SpanStub, bool) {
	for _, s := range ss {
		if s.Name != name {
			continue
		}
		for _, l := range s.Links {
			if l.SpanContext.SpanID() == request.SpanContext.SpanID() && l.SpanContext.TraceID() == request.SpanContext.TraceID() {
				return s, true
			}
		}
	}
	return tracetest.SpanStub{}, false
}

// TestTracingDelivery follows an event from the request that appends it
// to its receiver, for a webhook subscription (a posted external event)
// and a directory-sync push (a native event emitted by the host): the
// delivery attempt is a client span beginning a trace of its own, linked
// to the appending request's span, and the receiver gets that attempt's
// traceparent.
func TestTracingDelivery(t *testing.T) {
	for _, tc := range []struct {
		name      string
		subscribe func(s *streamEnv, endpoint string) latchkeytest.Response
		append    func(s *streamEnv) (route string, r latchkeytest.Response)
		kind      string
	}{
		{
			name: "webhook",
			subscribe: func(s *streamEnv, endpoint string) latchkeytest.Response {
				return s.e.Do("POST", "/eventstream/v1/tenants/"+s.acme.Code+"/subscriptions", map[string]any{"endpoint": endpoint, "eventTypes": []string{"10001"}}, bearerH(s.admin))
			},
			append: func(s *streamEnv) (string, latchkeytest.Response) {
				return "POST /events/v1/events", s.e.Do("POST", "/events/v1/events", map[string]any{"a": map[string]any{"event_type_id": "10001"}}, bearerH(s.admin), "traceparent: "+traceparent)
			},
			kind: "stream",
		},
		{
			name: "directory sync",
			subscribe: func(s *streamEnv, endpoint string) latchkeytest.Response {
				return s.e.Do("POST", "/eventstream/v1/directory-sync", map[string]any{"connect": map[string]any{"idpUri": endpoint + "/scim", "clientId": "idp-1"},
					"groupConfig": []map[string]any{{"nodeType": "user", "relationshipType": "member"}}}, bearerH(s.admin), "acting-tenant-id: "+s.acme.Code)
			},
			append: func(s *streamEnv) (string, latchkeytest.Response) {
				return "POST /api/v1/admin/tenants/{tenantId}/events", s.e.Do("POST", "/api/v1/admin/tenants/"+s.acme.ID+"/events",
					map[string]any{"event_type_id": "401", "username": "dora", "new_state": "active"}, bearerH(s.acme.AdminToken), "traceparent: "+traceparent)
			},
			kind: "directory-sync",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, tp := newSpans(t)
			s := newStreamEnv(t, func(c *latchkey.Config) { c.AllowPrivateEndpoints, c.TracerProvider = true, tp })
			got := make(chan string, 10)
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Header.Get("traceparent")
			}))
			defer rcv.Close()
			if r := tc.subscribe(s, rcv.URL); r.Status != 201 {
				t.Fatalf("subscribe: %d %s", r.Status, r.Body)
			}
			s.e.RunWorkers()
			route, r := tc.append(s)
			if r.Status/100 != 2 {
				t.Fatalf("append: %d %s", r.Status, r.Body)
			}
			var header string
			select {
			case header = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("nothing delivered")
			}
			sc, ok := tracing.ParseTraceParent(header)
			if !ok {
				t.Fatalf("the delivery's traceparent %q is not valid", header)
			}
			caller, _ := trace.TraceIDFromHex(callerTrace)
			ss := sp.await(t, "delivery span and appending request span", func(ss tracetest.SpanStubs) bool {
				_, ok1 := find(ss, caller, route)
				_, ok2 := find(ss, sc.TraceID(), "eventstream.deliver")
				return ok1 && ok2
			})
			request, _ := find(ss, caller, route)
			deliver, _ := find(ss, sc.TraceID(), "eventstream.deliver")
			if deliver.SpanContext.SpanID() != sc.SpanID() {
				t.Errorf("the receiver got span %s, the delivery span is %s", sc.SpanID(), deliver.SpanContext.SpanID())
			}
			if sc.TraceID() == caller || deliver.Parent.IsValid() || deliver.SpanKind != trace.SpanKindClient {
				t.Errorf("delivery span: trace %s, parent %v, kind %v; want a client span beginning a trace of its own", sc.TraceID(), deliver.Parent, deliver.SpanKind)
			}
			var linked []string
			for _, l := range deliver.Links {
				linked = append(linked, l.SpanContext.TraceID().String()+"/"+l.SpanContext.SpanID().String())
			}
			if diff := cmp.Diff([]string{callerTrace + "/" + request.SpanContext.SpanID().String()}, linked); diff != "" {
				t.Errorf("links of the delivery span, want the appending request's span (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff("eventstream.deliver\n", tree(ss, sc.TraceID())); diff != "" {
				t.Errorf("span tree of the delivery (-want +got):\n%s", diff)
			}
			for key, want := range map[attribute.Key]attribute.Value{
				"latchkey.subscription.kind": attribute.StringValue(tc.kind), "http.response.status_code": attribute.IntValue(200),
				"latchkey.delivery.attempt": attribute.IntValue(0),
			} {
				if v, _ := attr(deliver, key); v != want {
					t.Errorf("delivery span %s = %v, want %v", key, v.Emit(), want.Emit())
				}
			}
		})
	}
}

// TestTracingSpanNamesAreBounded: whatever a caller sends (ids in paths,
// unknown paths, unknown methods), span names come from the route table,
// the method list and the code, and http.route and http.request.method
// take values from bounded sets, so a tracing backend's name index
// cannot be grown from outside.
func TestTracingSpanNamesAreBounded(t *testing.T) {
	e, s := tracedEnv(t)
	const marker = "zq7marker"
	tok := e.AdminToken()
	requests := []struct{ method, path string }{
		{"GET", "/api/v1/admin/tenants/" + marker},
		{"GET", "/api/v1/admin/tenants/" + marker + "-2"},
		{"DELETE", "/api/v1/vault/keys2/" + marker},
		{"GET", "/" + marker},
		{"BREW", "/api/v1/" + marker},
		{"POST", "/healthz/" + marker},
		{"GET", "/audit/v1/audit-log-exports/" + marker},
	}
	for _, rq := range requests {
		e.Do(rq.method, rq.path, nil, bearerH(tok))
	}
	allowed, patterns := map[string]bool{}, map[string]bool{}
	for _, r := range e.Handler.Routes() {
		allowed[r.Method+" "+r.Pattern] = true
		patterns[r.Pattern] = true
	}
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "HTTP"} {
		allowed[m] = true
	}
	for _, n := range []string{"audit.commit", "audit.export", "events.commit", "identity.sign_token", "identity.hash_password", "identity.verify_password", "vtoken.sign", "notify.wait", "eventstream.deliver"} {
		allowed[n] = true
	}
	got := s.await(t, "span of every request", func(ss tracetest.SpanStubs) bool {
		n := 0
		for _, sp := range ss {
			if sp.SpanKind == trace.SpanKindServer {
				n++
			}
		}
		return n >= len(requests)+1 // and the login
	})
	methods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "_OTHER"}
	for _, sp := range got {
		if !allowed[sp.Name] || strings.Contains(sp.Name, marker) {
			t.Errorf("span name %q is not from the route table, the method list or the code", sp.Name)
		}
		if v, ok := attr(sp, "http.route"); ok && !patterns[v.AsString()] {
			t.Errorf("http.route %q is not a registered pattern", v.AsString())
		}
		if v, ok := attr(sp, "http.request.method"); ok && !slices.Contains(methods, v.AsString()) {
			t.Errorf("http.request.method %q is not from the method list", v.AsString())
		}
	}
	if _, ok := find(got, trace.TraceID{}, "GET /api/v1/admin/tenants/{tenantId}"); !ok {
		t.Errorf("no span named after the tenant route:\n%s", names(got))
	}
}

// TestTracingWorkSpans: the spans of the work beyond a token request
// exist where the issue lists them and hang where they belong — password
// verification under a login, the wait of a notification long poll under
// its retrieval, and an export job as a trace of its own linked to the
// request that created it.
func TestTracingWorkSpans(t *testing.T) {
	caller, _ := trace.TraceIDFromHex(callerTrace)
	t.Run("password login", func(t *testing.T) {
		e, s := tracedEnv(t)
		r := e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": latchkeytest.AdminPassword, "auth_domain": "root"}, "traceparent: "+traceparent)
		if r.Status != 200 {
			t.Fatalf("login: %d %s", r.Status, r.Body)
		}
		got := s.await(t, "login span", func(ss tracetest.SpanStubs) bool { _, ok := find(ss, caller, "POST /api/v1/auth/tokens/"); return ok })
		want := "POST /api/v1/auth/tokens/\n  identity.sign_token\n  identity.verify_password\n"
		if diff := cmp.Diff(want, tree(got, caller)); diff != "" {
			t.Errorf("span tree of a login (-want +got):\n%s", diff)
		}
	})
	t.Run("event post", func(t *testing.T) {
		e, s := tracedEnv(t)
		acme := e.NewTenant("Acme")
		producer := bearerH(e.AuditClient(acme, "", "event:event:producer"))
		if r := e.Do("POST", "/events/v1/events", map[string]any{"a": map[string]any{"event_type_id": "10001"}}, producer, "traceparent: "+traceparent); r.Status != 200 {
			t.Fatalf("post: %d %s", r.Status, r.Body)
		}
		got := s.await(t, "post span and its group commit", func(ss tracetest.SpanStubs) bool {
			request, ok := find(ss, caller, "POST /events/v1/events")
			if !ok {
				return false
			}
			_, ok = commitOf(ss, "events.commit", request)
			return ok
		})
		if diff := cmp.Diff("POST /events/v1/events\n", tree(got, caller)); diff != "" {
			t.Errorf("span tree of an event post (-want +got):\n%s", diff)
		}
	})
	t.Run("notification long poll", func(t *testing.T) {
		e, s := tracedEnv(t)
		acme := e.NewTenant("Acme")
		admin := bearerH(e.AuditClient(acme, "", "notification:consent:administrator", "event:event:producer"))
		id, secret := e.OAuthClient(acme, "", "notification:consent:consumer")
		r := e.Do("POST", "/notification/v1/subscriptions", map[string]any{"event_type_ids": []string{"10001"}, "client_id": id}, admin)
		if r.Status != 201 {
			t.Fatalf("subscribe: %d %s", r.Status, r.Body)
		}
		e.Do("POST", "/events/v1/events", map[string]any{"a": map[string]any{"event_type_id": "10001"}}, admin)
		r = e.Do("GET", "/notification/v1/subscriptions/"+r.JSON()["id"].(string)+"/notifications?wait=5", nil, bearerH(e.AccessToken(id, secret)), "traceparent: "+traceparent)
		if r.Status != 200 {
			t.Fatalf("retrieve: %d %s", r.Status, r.Body)
		}
		route := "GET /notification/v1/subscriptions/{id}/notifications"
		got := s.await(t, "retrieval span", func(ss tracetest.SpanStubs) bool { _, ok := find(ss, caller, route); return ok })
		if diff := cmp.Diff(route+"\n  notify.wait\n", tree(got, caller)); diff != "" {
			t.Errorf("span tree of a long poll (-want +got):\n%s", diff)
		}
		wait, _ := find(got, caller, "notify.wait")
		if v, _ := attr(wait, "latchkey.notify.outcome"); v.AsString() != "found" {
			t.Errorf("notify.wait outcome %q, want found", v.AsString())
		}
	})
	t.Run("export job", func(t *testing.T) {
		e, s := tracedEnv(t, latchkeytest.WithArchiveDir(t.TempDir()))
		acme := e.NewTenant("Acme")
		tok := e.AuditClient(acme, "tenant-admin", "audit:export")
		e.Clock.Advance(time.Second)
		from, to := latchkeytest.Start.Add(-time.Hour).Format(time.RFC3339), latchkeytest.Start.Add(time.Hour).Format(time.RFC3339)
		r := e.Do("POST", exportsPath, map[string]any{"from": from, "to": to}, bearerH(tok), "traceparent: "+traceparent)
		if r.Status != 202 {
			t.Fatalf("start export: %d %s", r.Status, r.Body)
		}
		if n := e.RunExports(); n != 1 {
			t.Fatalf("%d jobs run, want 1", n)
		}
		got := s.await(t, "export request and job spans", func(ss tracetest.SpanStubs) bool {
			_, ok1 := find(ss, caller, "POST "+exportsPath)
			_, ok2 := find(ss, trace.TraceID{}, "audit.export")
			return ok1 && ok2
		})
		request, _ := find(got, caller, "POST "+exportsPath)
		job, _ := find(got, trace.TraceID{}, "audit.export")
		if job.SpanContext.TraceID() == caller || job.Parent.IsValid() {
			t.Errorf("the export job's span continues trace %s (parent %v); want a trace of its own", job.SpanContext.TraceID(), job.Parent)
		}
		if len(job.Links) != 1 || job.Links[0].SpanContext.SpanID() != request.SpanContext.SpanID() {
			t.Errorf("export job links %v, want the creating request's span %s", job.Links, request.SpanContext.SpanID())
		}
		if v, _ := attr(job, "latchkey.audit.trace_id"); v.AsString() != callerTrace {
			t.Errorf("latchkey.audit.trace_id = %q, want the creating request's %s (the job's audit records carry it)", v.AsString(), callerTrace)
		}
		if diff := cmp.Diff("audit.export\n", tree(got, job.SpanContext.TraceID())); diff != "" {
			t.Errorf("span tree of an export job (-want +got):\n%s", diff)
		}
	})
}
