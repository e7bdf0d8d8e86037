// Package httpapi serves the platform over net/http. Handlers decode the
// request, call one Platform method and encode the answer; authentication,
// tracing, body limits and the error table live here once.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/tracing"
)

// Options configure the HTTP layer. Each area's base URL is a path prefix
// on this handler; the defaults are those of API.md.
type Options struct {
	BaseURL          string // {base_url}, default "/api/v1"
	AuthURL          string // {auth_url}, default "" (root)
	AuditURL         string // {audit_url}, default "/audit"
	AuthenticatorURL string // {authenticator_url}, default "" (root)
	NotificationURL  string // {notification_url}, default "/notification"
	EventStreamURL   string // {eventstream_url}, default "/eventstream"
	EventsURL        string // {events_url}, default "/events"
	ProvisioningURL  string // {provisioning_url}, default "" (root)

	// PublicURL is the server's external origin (scheme://host[:port]), used
	// in absolute links and the authorization server metadata.
	PublicURL string
	// MTLSURL is the external origin of the listener where clients present
	// certificates (the example server's HTTPS listener): the metadata's
	// mtls_endpoint_aliases (RFC 8705 §5) of both discovery documents name
	// the token, introspection, revocation, PAR and device authorization
	// endpoints there. Empty: no aliases are published.
	MTLSURL string
	// MaxBodyBytes bounds JSON request bodies; default 1 MiB.
	MaxBodyBytes int64
	Logger       *slog.Logger

	// TrustedProxies opts in to client certificates forwarded by a
	// TLS-terminating proxy: only requests whose RemoteAddr is in one of
	// these prefixes may carry ClientCertHeader; from anywhere else the
	// header is ignored. Empty (the default) means no proxy is trusted.
	TrustedProxies []netip.Prefix
	// ClientCertHeader is the header holding the forwarded client
	// certificate as URL-escaped PEM; default DefaultClientCertHeader.
	ClientCertHeader string
}

// Defaults returns API.md's default options.
func Defaults() Options {
	return Options{
		BaseURL: "/api/v1", AuditURL: "/audit", NotificationURL: "/notification",
		EventStreamURL: "/eventstream", EventsURL: "/events",
		PublicURL: "http://127.0.0.1:8080", MaxBodyBytes: 1 << 20,
	}
}

// Route describes one registered route; Routes lists them so tests can walk
// every route (tenant isolation, fuzzing) without a list kept by hand.
type Route struct {
	Method  string
	Pattern string // net/http pattern path, e.g. /api/v1/admin/tenants/{tenantId}
	Auth    string // "none", "platform-jwt", "oauth:<scope>", "apikey:<area>", "signed-url", ...
	// Idempotent marks a creating POST that honours Idempotency-Key.
	Idempotent bool
}

// Server is the platform's http.Handler.
type Server struct {
	p      *latchkey.Platform
	opts   Options
	log    *slog.Logger
	tracer trace.Tracer // nil when tracing is off
	mux    *http.ServeMux
	routes []Route
	styles map[string]style // error style by registered path pattern
	// idemHook, set by tests only, runs when a request has reserved its
	// Idempotency-Key, before its handler: a retry sent from it finds the
	// first still running.
	idemHook atomic.Pointer[func(*http.Request)]
}

// New returns a Server for p.
func New(p *latchkey.Platform, opts Options) *Server {
	d := Defaults()
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = d.MaxBodyBytes
	}
	if opts.PublicURL == "" {
		opts.PublicURL = d.PublicURL
	}
	opts.PublicURL = strings.TrimSuffix(opts.PublicURL, "/")
	opts.MTLSURL = strings.TrimSuffix(opts.MTLSURL, "/")
	if opts.Logger == nil {
		opts.Logger = p.Logger()
	} else {
		opts.Logger = slog.New(tracing.LogHandler(opts.Logger.Handler(), audit.TraceID))
	}
	s := &Server{p: p, opts: opts, log: opts.Logger, tracer: p.Tracer(), mux: http.NewServeMux(), styles: map[string]style{}}
	s.registerPlatform()
	s.registerOAuthClientAdmin()
	s.registerPAR()
	s.registerDevice()
	s.registerClients()
	s.registerVault()
	s.registerOAuth()
	s.registerOIDC()
	s.registerMisc()
	s.registerAudit()
	s.registerEvents()
	s.registerNotify()
	s.registerVToken()
	s.registerAuthenticators()
	s.registerPasskeys()
	s.registerMFA()
	s.registerGuide()
	s.registerEventStream()
	s.registerSCIM()
	s.registerGroups()
	s.registerFederation()
	s.registerFederationLinks()
	s.mux.HandleFunc("/", s.instrumented("any", "unmatched", s.fallback))
	return s
}

// probeMethods are the methods fallback tries when it looks for the
// methods a path is served with.
var probeMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}

// fallback answers the requests no route matches, in JSON rather than the
// mux's plain text: a path that some route serves with other methods is 405
// with Allow, in the error shape of that route's area; any other path is 404
// in the shape of the area whose base URL it falls under (areaStyle), else
// in the platform shape. It is registered on "/" and is not a Route.
func (s *Server) fallback(w http.ResponseWriter, r *http.Request) {
	var allow []string
	st := stylePlatform
	for _, m := range probeMethods {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
			_, path, _ := strings.Cut(pattern, " ")
			st = s.styles[path]
		}
	}
	if len(allow) == 0 {
		s.writeProblem(w, r, s.areaStyle(r.URL.Path), http.StatusNotFound, codeOf[fault.NotFound], "invalid_request", "", "no such resource: "+r.URL.Path)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	s.writeProblem(w, r, st, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "invalid_request", "", r.Method+" is not allowed here; use "+strings.Join(allow, ", "))
}

// areaStyle is the error style of the area whose base URL (one of those
// mounted below the root) prefixes path, so that a client of that area
// parses a 404 for a wrong path in the shape API.md gives the area, e.g.
// {code, description} under {notification_url}; stylePlatform otherwise.
func (s *Server) areaStyle(path string) style {
	for _, base := range []string{s.opts.NotificationURL, s.opts.EventStreamURL, s.opts.AuditURL, s.opts.EventsURL, scimBase} {
		base = strings.TrimSuffix(base, "/")
		if base == "" || !strings.HasPrefix(path, base+"/") {
			continue
		}
		for pattern, st := range s.styles {
			if strings.HasPrefix(pattern, base+"/") {
				return st
			}
		}
	}
	return stylePlatform
}

// Routes returns every registered route.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// ServeHTTP implements http.Handler: it assigns the trace id, starts the
// request's span when tracing is on, recovers from panics (a 500, never a
// dropped connection) and dispatches.
//
// The trace id is the one of an incoming W3C traceparent, else a new
// one; with tracing on it is the request span's, which continues that
// traceparent's trace, so the audit records' traceID, the X-Trace-Id
// header, error bodies' traceId and the exported spans agree.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var traceID string
	if s.tracer != nil {
		var span trace.Span
		ctx, span = s.startSpan(ctx, r)
		defer span.End()
		if sc := span.SpanContext(); sc.IsValid() {
			traceID = sc.TraceID().String()
		}
	}
	if traceID == "" {
		traceID = traceIDFrom(r.Header.Get("traceparent"))
	}
	w.Header().Set("X-Trace-Id", traceID)
	ctx = audit.WithTraceID(ctx, traceID)
	r = r.WithContext(ctx)
	r = s.blankEmptyAuthnSegments(r)
	if s.emptyVTokenSegment(r.URL.Path) {
		// ServeMux would redirect (307) to the path with "//" cleaned,
		// which names another resource or none.
		s.writeError(w, r, styleProvisioning, fault.E(fault.Invalid, "the path has an empty segment: tenant, user, token and label cannot be empty"))
		return
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			s.writeError(w, r, stylePlatform, fault.E(fault.Internal, fmt.Errorf("panic: %v", v)))
		}
	}()
	if !s.log.Enabled(ctx, slog.LevelDebug) {
		s.mux.ServeHTTP(w, r)
		return
	}
	// The access log is at debug level, and only then is the writer wrapped.
	// The query string is left out: it can carry a signed URL's signature.
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	start := time.Now()
	s.mux.ServeHTTP(sw, r)
	s.log.LogAttrs(ctx, slog.LevelDebug, "request", slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", sw.status), slog.Duration("took", time.Since(start)))
}

// startSpan starts the span of a request, continuing the trace of its
// W3C traceparent header when it has a valid one, or, when the handler
// is mounted behind an embedder's own instrumentation (otelhttp), the
// span it put in the request's context. Its name is "HTTP" until the
// route is known (instrumented renames it): a name from the route table
// or the method list, never from the request's path.
func (s *Server) startSpan(ctx context.Context, r *http.Request) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = tracing.Extract(ctx, r.Header)
	}
	scheme := semconv.URLScheme("http")
	if r.TLS != nil {
		scheme = semconv.URLScheme("https")
	}
	ctx, span := s.tracer.Start(ctx, "HTTP", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(methodAttr(r.Method), scheme))
	return tracing.WithTracer(ctx, s.tracer), span
}

// methodAttr is the http.request.method of a request: its method when
// it is one of HTTP's, else "_OTHER" (OpenTelemetry's HTTP conventions),
// so a caller cannot grow the set of attribute values.
func methodAttr(method string) attribute.KeyValue {
	if knownMethod(method) {
		return semconv.HTTPRequestMethodKey.String(method)
	}
	return semconv.HTTPRequestMethodOther
}

func knownMethod(m string) bool {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return true
	}
	return false
}

// spanMethod is the method a span name holds: method itself when known,
// else "HTTP" (no route and an unknown method).
func spanMethod(method string) string {
	if knownMethod(method) {
		return method
	}
	return "HTTP"
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// traceIDFrom takes the trace id of a W3C traceparent header
// (version-traceid-parentid-flags) or makes a new one.
func traceIDFrom(tp string) string {
	// Cut rather than Split: most requests have no traceparent, and none
	// needs its fields in a slice.
	version, rest, ok := strings.Cut(strings.TrimSpace(tp), "-")
	id, rest, ok2 := strings.Cut(rest, "-")
	_, _, ok3 := strings.Cut(rest, "-") // a parent id and flags follow
	if ok && ok2 && ok3 && len(version) == 2 && version != "ff" && len(id) == 32 && isLowerHex(id) && id != zeroTraceID {
		return id
	}
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// zeroTraceID is the invalid all-zero trace id of W3C Trace Context.
const zeroTraceID = "00000000000000000000000000000000"

func isLowerHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// handlerFunc is a handler that returns its error for the route's style.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// authFunc authenticates a request and returns its principal.
type authFunc func(r *http.Request) (identity.Principal, error)

type routeOpts struct {
	style style
	auth  authFunc
	name  string // Route.Auth
	limit int64  // body limit; 0 means Options.MaxBodyBytes
	idem  bool   // a creating POST: honours Idempotency-Key
	page  bool   // a browser route: its errors are pages (errorPage)
}

// creating returns o for a creating POST, which honours Idempotency-Key
// (see idempotent).
func (o routeOpts) creating() routeOpts {
	o.idem = true
	return o
}

// handle registers h for method and path (relative to a prefix already
// applied) with its authentication and error style.
func (s *Server) handle(method, path string, o routeOpts, h handlerFunc) {
	if o.name == "" {
		o.name = "none"
	}
	limit := o.limit
	if limit == 0 {
		limit = s.opts.MaxBodyBytes
	}
	route := Route{Method: method, Pattern: strings.TrimSuffix(path, "{$}"), Auth: o.name, Idempotent: o.idem}
	if o.idem {
		h = s.idempotent(o.style, h)
	}
	s.routes = append(s.routes, route)
	s.styles[path] = o.style
	tooLarge := fault.E(fault.TooLarge, fmt.Sprintf("the request body is over this route's limit of %d bytes", limit))
	s.mux.HandleFunc(method+" "+path, s.instrumented(method, route.Pattern, func(w http.ResponseWriter, r *http.Request) {
		// A declared body over the limit is refused at once, before any
		// of it is read: net/http sends "100 Continue" only when the
		// handler first reads, so a client that asked for it never sends
		// the body, and one that did not gets the 413 instead of a
		// connection closed under its upload.
		if r.ContentLength > limit {
			if o.page {
				s.errorPage(w, r, tooLarge)
			} else {
				s.writeError(w, r, o.style, tooLarge)
			}
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if o.auth != nil {
			p, err := o.auth(r)
			if err != nil {
				if fault.Is(fault.Forbidden, err) && p.TenantID != "" {
					err = s.recordRefusal(r, p, route, ActionAccessDenied, err)
				}
				s.writeError(w, r, o.style, err)
				return
			}
			ctx := audit.WithActor(withPrincipal(r.Context(), p), actorOf(p), p.ClientID)
			ctx, recorded := audit.WithMark(ctx)
			r = r.WithContext(ctx)
			if err := h(w, r); err != nil {
				if !recorded.Load() && p.TenantID != "" && !fault.Is(fault.Unavailable, err) {
					err = s.recordRefusal(r, p, route, ActionRequestRefused, err)
				}
				s.writeError(w, r, o.style, err)
			}
			return
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, o.style, err)
		}
	}))
}

// ActionAccessDenied is the audit action of a request an authenticated
// caller may not make because its token lacks the route's scope: that
// refusal happens here, before any area's service, and the areas audit
// only what their services refuse.
const ActionAccessDenied = "access.denied"

// ActionRequestRefused is the audit action of an authenticated request
// refused before any area's service saw it (a body that does not decode,
// one over the route's limit, a malformed path or query parameter): the
// HTTP layer records it when no area recorded anything for the request,
// so that every refused action has its failed record.
const ActionRequestRefused = "request.refused"

// actorOf is the audit actor of a caller: its user, else its client, else
// its API key.
func actorOf(p identity.Principal) string {
	switch {
	case p.UserID != "":
		return p.UserID
	case p.ClientID != "":
		return p.ClientID
	}
	return "apikey:" + p.APIKeyID
}

// recordRefusal audits a refusal (action) of route to the authenticated
// caller p in its tenant, under the area the route belongs to, and returns
// err (or the audit log's unavailability, as every area does when its
// record cannot be written).
func (s *Server) recordRefusal(r *http.Request, p identity.Principal, route Route, action string, err error) error {
	ctx := audit.WithActor(r.Context(), actorOf(p), p.ClientID)
	meta := map[string]any{"method": route.Method, "route": route.Pattern}
	if p.ClientID != "" {
		meta["client_id"] = p.ClientID
	}
	return audit.Outcome(ctx, s.p.Audit(), audit.Entry{TenantID: p.TenantID, Source: s.sourceOf(route.Pattern), Action: action, Err: err, Meta: meta})
}

// sourceOf is the audit source of the area a route pattern belongs to.
func (s *Server) sourceOf(pattern string) string {
	for _, a := range []struct{ prefix, source string }{
		{s.opts.AuditURL + "/", audit.SourceAudit},
		{s.opts.NotificationURL + "/", audit.SourceNotification},
		{s.opts.EventStreamURL + "/", audit.SourceEventStream},
		{s.opts.EventsURL + "/", audit.SourceEvents},
	} {
		if a.prefix != "/" && strings.HasPrefix(pattern, a.prefix) {
			return a.source
		}
	}
	return audit.SourcePlatform
}

type principalKey struct{}

func withPrincipal(ctx context.Context, p identity.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principal returns the authenticated caller of a request.
func principal(r *http.Request) identity.Principal {
	p, _ := r.Context().Value(principalKey{}).(identity.Principal)
	return p
}

// NewHTTPServer returns an http.Server with the timeouts and header limit
// that keep slow or huge requests from exhausting the process.
func NewHTTPServer(addr string, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      120 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
