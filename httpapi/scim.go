package httpapi

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/scim"
)

// The SCIM 2.0 service provider (RFC 7643, RFC 7644) at {scim_url},
// /scim/v2. The tenant is the credential's: an API key of area scim, or an
// access token with scope scim:provisioning, as a bearer token.
const (
	scimBase        = "/scim/v2"
	scimContentType = "application/scim+json"
	// Each credential may send scimRate requests a second, scimBurst at once.
	scimRate  = 50
	scimBurst = 200
)

func (s *Server) registerSCIM() {
	a := s.scimAuth()
	b := scimBase
	s.handle("GET", b+"/ServiceProviderConfig", a, s.scimServiceProviderConfig)
	s.handle("GET", b+"/ResourceTypes", a, s.scimResourceTypes)
	s.handle("GET", b+"/ResourceTypes/{resourceType}", a, s.scimResourceType)
	s.handle("GET", b+"/Schemas", a, s.scimSchemas)
	s.handle("GET", b+"/Schemas/{schemaUrn}", a, s.scimSchema)
	for _, res := range []scimResource{scimUsers, scimGroups} {
		c := b + "/" + res.name
		item := c + "/{" + res.param + "}"
		s.handle("GET", c, a, s.scimList(res))
		s.handle("POST", c+"/.search", a, s.scimSearch(res))
		s.handle("POST", c, a, s.scimCreate(res))
		s.handle("GET", item, a, s.scimGet(res))
		s.handle("PUT", item, a, s.scimWrite(res, res.replace))
		s.handle("PATCH", item, a, s.scimWrite(res, res.patch))
		s.handle("DELETE", item, a, s.scimDelete(res))
	}
	s.handle("POST", b+"/Bulk", a, s.scimNotImplemented)
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		s.handle(m, b+"/Me", a, s.scimNotImplemented)
	}
}

// scimAuth authenticates a SCIM client: a bearer API key (lk_…) of area
// scim, or an access token with scope scim:provisioning; then the
// credential's rate limit.
func (s *Server) scimAuth() routeOpts {
	limiter := newRateLimiter(scimRate, scimBurst)
	return routeOpts{style: styleSCIM, name: "scim", auth: func(r *http.Request) (identity.Principal, error) {
		tok, scheme, ok := credential(r)
		var (
			p   identity.Principal
			err error
			key string
		)
		switch {
		case ok && scheme == identity.SchemeBearer && strings.HasPrefix(tok, "lk_"):
			p, err = s.p.Identity.AuthenticateAPIKey(r.Context(), tok)
			if err != nil {
				return p, challenged(identity.SchemeBearer, "invalid_token", "", err)
			}
			if !p.HasArea(identity.AreaSCIM) {
				return p, challenged(identity.SchemeBearer, "insufficient_scope", "", fault.E(fault.Forbidden, "the API key lacks area scim"))
			}
			key = "key:" + p.APIKeyID
		default:
			var sch string
			p, sch, err = s.tokenAuth(r, identity.AccessToken)
			if err != nil {
				return p, err
			}
			if !p.HasScope(identity.ScopeSCIM) {
				return p, challenged(sch, "insufficient_scope", identity.ScopeSCIM, fault.E(fault.Forbidden, "the access token lacks scope "+identity.ScopeSCIM))
			}
			key = "client:" + p.TenantID + "/" + p.ClientID
		}
		if wait, ok := limiter.allow(key, s.p.Clock().Now()); !ok {
			return p, fault.E(fault.TooManyRequests, "too many SCIM requests; try again in "+retrySeconds(wait)+" seconds")
		}
		return p, nil
	}}
}

func retrySeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// writeSCIM answers with a SCIM resource or message in SCIM's media type.
func writeSCIM(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", scimContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	e := jsonEncoders.Get().(*jsonEncoder)
	e.buf.Reset()
	e.enc.Encode(v)
	w.Write(e.buf.Bytes())
	if e.buf.Cap() <= maxPooledJSON {
		jsonEncoders.Put(e)
	}
}

// writeSCIMError answers with the RFC 7644 §3.12 error body.
func (s *Server) writeSCIMError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf[fault.KindOf(err)]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	switch {
	case errors.Is(err, scim.ErrPrecondition):
		status = http.StatusPreconditionFailed
	case errors.Is(err, errSCIMNotImplemented):
		status = http.StatusNotImplemented
	}
	msg := messageOf(err, status)
	if status >= 500 && status != http.StatusNotImplemented {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	var ch *challenge
	if errors.As(err, &ch) && (status == http.StatusUnauthorized || status == http.StatusForbidden) {
		w.Header().Set("WWW-Authenticate", ch.header(msg))
	}
	if status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="latchkey"`)
	}
	if status == http.StatusTooManyRequests {
		if secs := retryAfter(msg); secs != "" {
			w.Header().Set("Retry-After", secs)
		}
	}
	body := map[string]any{"schemas": []string{scim.URNError}, "status": strconv.Itoa(status), "detail": msg}
	t := scim.TypeOf(err)
	var syn *scimSyntax
	if t == "" && errors.As(err, &syn) {
		t = scim.TypeInvalidSyntax
	}
	if t != "" && (status == http.StatusBadRequest || status == http.StatusConflict) {
		body["scimType"] = t
	}
	writeSCIM(w, status, body)
}

var errSCIMNotImplemented = errors.New("not implemented")

func (s *Server) scimNotImplemented(w http.ResponseWriter, r *http.Request) error {
	what := "Bulk operations are"
	if strings.HasSuffix(r.URL.Path, "/Me") {
		what = "/Me is"
	}
	return fault.E(fault.Invalid, what+" not supported (see /ServiceProviderConfig)", errSCIMNotImplemented)
}

// scimBody reads a SCIM request body: application/scim+json or
// application/json.
func scimBody(r *http.Request) ([]byte, error) {
	b, err := readJSONBody(r)
	if fault.Is(fault.Invalid, err) {
		return nil, &scimSyntax{err}
	}
	return b, err
}

// scimSyntax is a body refused before SCIM reads it: invalidSyntax.
type scimSyntax struct{ err error }

func (e *scimSyntax) Error() string { return e.err.Error() }
func (e *scimSyntax) Unwrap() error { return e.err }

func (s *Server) scimServiceProviderConfig(w http.ResponseWriter, r *http.Request) error {
	writeSCIM(w, http.StatusOK, scim.ServiceProviderConfig(s.p.SCIM.Base()))
	return nil
}

func (s *Server) scimResourceTypes(w http.ResponseWriter, r *http.Request) error {
	var out []map[string]any
	for _, rt := range scim.ResourceTypes() {
		out = append(out, scim.ResourceTypeResource(rt, s.p.SCIM.Base()))
	}
	writeSCIM(w, http.StatusOK, scim.Page(out, len(out), 1))
	return nil
}

func (s *Server) scimResourceType(w http.ResponseWriter, r *http.Request) error {
	rt, err := scim.FindResourceType(r.PathValue("resourceType"))
	if err != nil {
		return err
	}
	writeSCIM(w, http.StatusOK, scim.ResourceTypeResource(rt, s.p.SCIM.Base()))
	return nil
}

func (s *Server) scimSchemas(w http.ResponseWriter, r *http.Request) error {
	var out []map[string]any
	for _, sc := range scim.Schemas() {
		out = append(out, scim.SchemaResource(sc, s.p.SCIM.Base()))
	}
	writeSCIM(w, http.StatusOK, scim.Page(out, len(out), 1))
	return nil
}

func (s *Server) scimSchema(w http.ResponseWriter, r *http.Request) error {
	sc, err := scim.FindSchema(r.PathValue("schemaUrn"))
	if err != nil {
		return err
	}
	writeSCIM(w, http.StatusOK, scim.SchemaResource(sc, s.p.SCIM.Base()))
	return nil
}

// writeResource answers with one resource and its ETag, or 304 when
// If-None-Match names its version.
func writeResource(w http.ResponseWriter, r *http.Request, status int, doc map[string]any) {
	m, _ := doc["meta"].(map[string]any)
	etag, _ := m["version"].(string)
	if inm := r.Header.Get("If-None-Match"); inm != "" && r.Method == http.MethodGet {
		vs, star, _ := scim.ParseETag(inm)
		if cur, _, ok := scim.ParseETag(etag); ok && (star || len(cur) == 1 && containsInt(vs, cur[0])) {
			w.Header().Set("ETag", etag)
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if status == http.StatusCreated {
		if loc, _ := m["location"].(string); loc != "" {
			w.Header().Set("Location", loc)
		}
	}
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	writeSCIM(w, status, doc)
}

func containsInt(l []int64, v int64) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

// rateLimiter is a token bucket per key: rate tokens a second, burst at
// most. Keys idle long enough to have refilled are dropped when the map
// grows, so it stays small.
type rateLimiter struct {
	rate, burst float64
	mu          sync.Mutex
	buckets     map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimiter(rate, burst float64) *rateLimiter {
	return &rateLimiter{rate: rate, burst: burst, buckets: map[string]*bucket{}}
}

// allow takes a token for key at now; when there is none it returns how
// long until there is.
func (l *rateLimiter) allow(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= 10_000 {
			full := time.Duration(l.burst / l.rate * float64(time.Second))
			for k, o := range l.buckets {
				if now.Sub(o.last) >= full {
					delete(l.buckets, k)
				}
			}
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = math.Min(l.burst, b.tokens+el.Seconds()*l.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) / l.rate * float64(time.Second)), false
	}
	b.tokens--
	return 0, true
}

// scimResource is a SCIM resource type's collection at /{name}, its
// resources at /{name}/{param}, and the service's methods for them: Users
// and Groups are served by the same handlers.
type scimResource struct {
	name, param string
	list        func(*scim.Service, context.Context, identity.Principal, scim.ListRequest) (scim.ListResponse, error)
	get         func(s *scim.Service, ctx context.Context, p identity.Principal, id string, attributes, excluded []string) (map[string]any, error)
	create      func(s *scim.Service, ctx context.Context, p identity.Principal, body []byte) (map[string]any, error)
	// replace (PUT) and patch (PATCH) take the body and If-Match.
	replace, patch scimWriter
	delete         func(s *scim.Service, ctx context.Context, p identity.Principal, id, ifMatch string) error
}

type scimWriter func(s *scim.Service, ctx context.Context, p identity.Principal, id string, body []byte, ifMatch string) (map[string]any, error)

var (
	scimUsers = scimResource{name: "Users", param: "userId", list: (*scim.Service).ListUsers, get: (*scim.Service).GetUser,
		create: (*scim.Service).CreateUser, replace: (*scim.Service).ReplaceUser, patch: (*scim.Service).PatchUser, delete: (*scim.Service).DeleteUser}
	scimGroups = scimResource{name: "Groups", param: "groupId", list: (*scim.Service).ListGroups, get: (*scim.Service).GetGroup,
		create: (*scim.Service).CreateGroup, replace: (*scim.Service).ReplaceGroup, patch: (*scim.Service).PatchGroup, delete: (*scim.Service).DeleteGroup}
)

// scimList is GET /{name}: a filtered, sorted page.
func (s *Server) scimList(res scimResource) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		q, err := scim.ParseListQuery(r.URL.Query())
		if err != nil {
			return err
		}
		return s.scimPage(w, r, res, q)
	}
}

// scimPage writes the page q selects of res's resources.
func (s *Server) scimPage(w http.ResponseWriter, r *http.Request, res scimResource, q scim.ListRequest) error {
	out, err := res.list(s.p.SCIM, r.Context(), principal(r), q)
	if err != nil {
		return err
	}
	writeSCIM(w, http.StatusOK, out)
	return nil
}

// scimSearch is POST /{name}/.search: a list whose query is the body.
func (s *Server) scimSearch(res scimResource) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		body, err := scimBody(r)
		if err != nil {
			return err
		}
		q, err := scim.DecodeSearch(body)
		if err != nil {
			return err
		}
		return s.scimPage(w, r, res, q)
	}
}

func (s *Server) scimGet(res scimResource) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		q, err := scim.ParseListQuery(r.URL.Query())
		if err != nil {
			return err
		}
		doc, err := res.get(s.p.SCIM, r.Context(), principal(r), r.PathValue(res.param), q.Attributes, q.ExcludedAttributes)
		if err != nil {
			return err
		}
		writeResource(w, r, http.StatusOK, doc)
		return nil
	}
}

func (s *Server) scimCreate(res scimResource) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		body, err := scimBody(r)
		if err != nil {
			return err
		}
		doc, err := res.create(s.p.SCIM, r.Context(), principal(r), body)
		if err != nil {
			return err
		}
		writeResource(w, r, http.StatusCreated, doc)
		return nil
	}
}

// scimWrite is PUT or PATCH of /{name}/{param}, with If-Match.
func (s *Server) scimWrite(res scimResource, write scimWriter) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		body, err := scimBody(r)
		if err != nil {
			return err
		}
		doc, err := write(s.p.SCIM, r.Context(), principal(r), r.PathValue(res.param), body, r.Header.Get("If-Match"))
		if err != nil {
			return err
		}
		writeResource(w, r, http.StatusOK, doc)
		return nil
	}
}

func (s *Server) scimDelete(res scimResource) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := res.delete(s.p.SCIM, r.Context(), principal(r), r.PathValue(res.param), r.Header.Get("If-Match")); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}
