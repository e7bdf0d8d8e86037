package httpapi

import (
	"bytes"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
)

// Headers of safe retries (API.md "Beyond the specification: safe
// retries and acknowledged retrieval").
const (
	hdrIdempotencyKey = "Idempotency-Key"
	hdrReplayed       = "Idempotent-Replayed"
)

// idempotent makes h, a creating POST, honour Idempotency-Key (see package
// idempotency): the key is reserved before h runs, h runs with the claim
// in its context (so the store binds the key in h's write transaction),
// and h's answer is buffered, kept (or the key released, for a 5xx or
// 429) and only then sent, so a retry can never see the key done without
// its answer. Without the header h runs as it is.
func (s *Server) idempotent(st style, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		vals := r.Header.Values(hdrIdempotencyKey)
		if len(vals) == 0 {
			return h(w, r)
		}
		if len(vals) > 1 {
			return fault.E(fault.Invalid, "send one Idempotency-Key header")
		}
		key, err := idempotency.ParseKey(vals[0])
		if err != nil {
			return err
		}
		body, err := readBody(r)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		outcome, e, claim, err := s.p.Idempotency.Begin(r.Context(), credentialScope(principal(r)), key, fingerprint(r, body))
		if err != nil {
			return err
		}
		switch outcome {
		case idempotency.Replay:
			if e.ContentType != "" {
				w.Header().Set("Content-Type", e.ContentType)
			}
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set(hdrReplayed, "true")
			w.WriteHeader(e.Status)
			w.Write(e.Body)
			return nil
		case idempotency.Mismatch:
			s.writeProblem(w, r, st, http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED", "invalid_request", "",
				"this Idempotency-Key was used for a different request (method, path or body)")
			return nil
		case idempotency.InFlight:
			return fault.E(fault.Conflict, "a request with this Idempotency-Key is still being processed; retry later")
		case idempotency.Lost:
			return fault.E(fault.Conflict, "the request with this Idempotency-Key was stored, but its answer was lost; it is not run again")
		}
		bw := &bufferedWriter{header: http.Header{}, status: http.StatusOK}
		r = r.WithContext(idempotency.WithClaim(r.Context(), claim))
		defer func() {
			// A handler that panics answers 500 (ServeHTTP): release the
			// key at once rather than when its lease lapses.
			if v := recover(); v != nil {
				s.p.Idempotency.Finish(r.Context(), claim, http.StatusInternalServerError, "", nil)
				panic(v)
			}
		}()
		if hook := s.idemHook.Load(); hook != nil {
			(*hook)(r)
		}
		if err := h(bw, r); err != nil {
			s.writeError(bw, r, st, err)
		}
		if err := s.p.Idempotency.Finish(r.Context(), claim, bw.status, bw.header.Get("Content-Type"), bw.body.Bytes()); err != nil {
			// The answer stands (its write is stored or not as it says);
			// a retry finds the key without an answer (409) or released.
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "idempotency: keeping the answer failed", slog.String("path", r.URL.Path), slog.Any("err", err))
		}
		for k, v := range bw.header {
			w.Header()[k] = v
		}
		w.WriteHeader(bw.status)
		w.Write(bw.body.Bytes())
		return nil
	}
}

// credentialScope names whose keys a request's key is among: its tenant
// and the credential it authenticated with, so two callers never share
// a key's answer.
func credentialScope(p identity.Principal) string {
	switch {
	case p.APIKeyID != "":
		return p.TenantID + "/apikey:" + p.APIKeyID
	case p.UserID != "":
		return p.TenantID + "/user:" + p.UserID
	default:
		return p.TenantID + "/client:" + p.ClientID
	}
}

// fingerprint is the SHA-256 of what makes a request the same request:
// method, path and query, content type, the virtual-token headers (a PFX
// import's password travels in one) and the body.
func fingerprint(r *http.Request, body []byte) []byte {
	h := sha256.New()
	field := func(s string) {
		io.WriteString(h, s)
		h.Write([]byte{0})
	}
	field(r.Method)
	field(r.URL.EscapedPath())
	field(r.URL.RawQuery)
	field(r.Header.Get("Content-Type"))
	var names []string
	for k := range r.Header {
		if strings.HasPrefix(k, "X-Virtualtoken-") {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		field(k)
		field(strings.Join(r.Header.Values(k), "\x00"))
	}
	h.Write(body)
	return h.Sum(nil)
}

// bufferedWriter holds an answer until its key's record is written.
type bufferedWriter struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(code int) {
	if !b.wrote {
		b.status, b.wrote = code, true
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.wrote = true
	return b.body.Write(p)
}
