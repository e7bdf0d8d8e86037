package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
	"github.com/latchkey/latchkey/scim"
)

// style is the error body shape of an area (API.md).
type style uint8

const (
	stylePlatform     style = iota // {code, codeDesc, message}
	styleOAuth                     // RFC 6749 §5.2 {error, error_description}
	styleProblem                   // {title, status, detail, traceId}: authenticator, audit, events, event stream
	styleNotification              // {code, description}
	styleProvisioning              // {code, message}
	styleFIDO                      // {status:"failed", errorMessage}: the FIDO conformance server routes of area C
	styleSCIM                      // RFC 7644 §3.12 {schemas, status, scimType, detail}, application/scim+json
)

// statusOf is the one table from error kinds to HTTP statuses.
var statusOf = map[fault.Kind]int{
	fault.Invalid:         http.StatusBadRequest,
	fault.Unauthenticated: http.StatusUnauthorized,
	fault.Forbidden:       http.StatusForbidden,
	fault.NotFound:        http.StatusNotFound,
	fault.Conflict:        http.StatusConflict,
	fault.TooLarge:        http.StatusRequestEntityTooLarge,
	fault.TooManyRequests: http.StatusTooManyRequests,
	fault.Unavailable:     http.StatusServiceUnavailable,
	fault.Expired:         http.StatusForbidden,
	fault.Internal:        http.StatusInternalServerError,
}

// codeOf names each kind in bodies that carry a machine-readable code.
var codeOf = map[fault.Kind]string{
	fault.Invalid:         "INVALID_REQUEST",
	fault.Unauthenticated: "UNAUTHORIZED",
	fault.Forbidden:       "FORBIDDEN",
	fault.NotFound:        "NOT_FOUND",
	fault.Conflict:        "CONFLICT",
	fault.TooLarge:        "PAYLOAD_TOO_LARGE",
	fault.TooManyRequests: "TOO_MANY_REQUESTS",
	fault.Unavailable:     "SERVICE_UNAVAILABLE",
	fault.Expired:         "EXPIRED",
	fault.Internal:        "INTERNAL_ERROR",
}

// StatusOf returns the HTTP status for err.
func StatusOf(err error) int { return statusOf[fault.KindOf(err)] }

func messageOf(err error, status int) string {
	if m := fault.MessageOf(err); m != "" {
		return m
	}
	if status == http.StatusInternalServerError {
		return "Internal Server Error."
	}
	return http.StatusText(status)
}

// writeError answers with err in the area's shape. Only internal errors are
// logged in full: the others are the client's doing and are in the audit log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, st style, err error) {
	if st == styleSCIM {
		s.writeSCIMError(w, r, err)
		return
	}
	kind := fault.KindOf(err)
	status := statusOf[kind]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if status >= 500 {
		// A client that hung up is not the server's failure: the answer
		// goes nowhere, and logging it as an error would page an operator
		// for every closed browser tab.
		level := slog.LevelError
		if errors.Is(r.Context().Err(), context.Canceled) {
			level = slog.LevelInfo
		}
		s.log.LogAttrs(r.Context(), level, "request failed", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Any("err", err))
	}
	msg := messageOf(err, status)
	oauthCode := "invalid_request"
	for _, e := range []error{identity.ErrInvalidClient, identity.ErrInvalidGrant, identity.ErrInvalidScope, identity.ErrUnsupportedGrantType,
		identity.ErrInvalidTarget, identity.ErrUnauthorizedClient, identity.ErrInvalidDPoPProof, oidc.ErrInvalidRequestObject,
		oidc.ErrAuthorizationPending, oidc.ErrSlowDown, oidc.ErrAccessDenied, oidc.ErrExpiredToken, identity.ErrInvalidRequest} {
		if errors.Is(err, e) {
			oauthCode = e.Error()
			break
		}
	}
	var up *identity.StepUp
	if errors.As(err, &up) && status == http.StatusUnauthorized {
		// RFC 9470 §3: the token is good but the sign-in behind it is
		// not strong or recent enough.
		_, scheme, ok := credential(r)
		if !ok {
			scheme = identity.SchemeBearer
		}
		err = stepUpChallenge(scheme, up, err)
	}
	var ch *challenge
	if errors.As(err, &ch) && (status == http.StatusUnauthorized || status == http.StatusForbidden) {
		w.Header().Set("WWW-Authenticate", ch.header(msg))
		if ch.code != "" {
			oauthCode = ch.code // an OAuth-shaped body says what the challenge says
		}
	}
	code := codeOf[kind]
	if c := fault.CodeOf(err); c != "" && status < 500 {
		code = c
	}
	var extra map[string]any
	if fe := fieldsError(nil); errors.As(err, &fe) && st == stylePlatform && status < 500 {
		extra = fe.Fields()
	}
	s.writeProblemFields(w, r, st, status, code, oauthCode, fault.FieldOf(err), msg, extra)
}

// stepUpChallenge wraps a step-up refusal with the RFC 9470 challenge:
// insufficient_user_authentication, naming the acr_values and max_age
// that would satisfy it.
func stepUpChallenge(scheme string, up *identity.StepUp, err error) error {
	return &challenge{scheme: scheme, code: "insufficient_user_authentication", acr: up.ACR, maxAge: int64(up.MaxAge / time.Second), err: err}
}

// challenge carries the WWW-Authenticate challenge of a refused token
// (RFC 6750 §3, RFC 9449 §7.1) to writeError, wrapping the refusal.
type challenge struct {
	scheme string // Bearer or DPoP
	code   string // invalid_token, insufficient_scope, invalid_dpop_proof; "" when no token was sent
	scope  string // the scope needed, with insufficient_scope
	// acr and maxAge are what an insufficient_user_authentication
	// challenge asks for (RFC 9470 §3); empty and 0 for none.
	acr    string
	maxAge int64
	err    error
}

func (c *challenge) Error() string { return c.err.Error() }
func (c *challenge) Unwrap() error { return c.err }

// header is the challenge's WWW-Authenticate value. Without a code (no
// token was sent) it is the bare challenge RFC 6750 §3.1 asks for; a DPoP
// challenge names the accepted algorithms (RFC 9449 §7.1).
func (c *challenge) header(desc string) string {
	var b strings.Builder
	b.WriteString(c.scheme)
	b.WriteString(` realm="latchkey"`)
	if c.scheme == identity.SchemeDPoP {
		b.WriteString(`, algs="` + strings.Join(identity.DPoPAlgorithms, " ") + `"`)
	}
	if c.code != "" {
		b.WriteString(`, error="` + c.code + `"`)
		if desc != "" {
			b.WriteString(`, error_description=` + strconv.Quote(challengeText(desc)))
		}
	}
	if c.scope != "" {
		b.WriteString(`, scope="` + c.scope + `"`)
	}
	if c.acr != "" {
		b.WriteString(`, acr_values="` + c.acr + `"`)
	}
	if c.maxAge > 0 {
		b.WriteString(`, max_age="` + strconv.FormatInt(c.maxAge, 10) + `"`)
	}
	return b.String()
}

// challengeText keeps an error description within RFC 6750 §3's character
// set (%x20-21 / %x23-5B / %x5D-7E): no quote, no backslash.
func challengeText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, s)
}

// challenged wraps err with a challenge of scheme: code "" when no token
// was sent, else invalid_token, insufficient_scope or invalid_dpop_proof.
func challenged(scheme, code, scope string, err error) error {
	return &challenge{scheme: scheme, code: code, scope: scope, err: err}
}

// challengeFor wraps a token refusal with its challenge: a DPoP proof
// problem answers with the DPoP scheme and invalid_dpop_proof, any other
// 401 with invalid_token in the scheme the token was sent with.
func challengeFor(scheme string, err error) error {
	switch {
	case errors.Is(err, identity.ErrInvalidDPoPProof):
		return challenged(identity.SchemeDPoP, "invalid_dpop_proof", "", err)
	case fault.Is(fault.Unauthenticated, err):
		return challenged(scheme, "invalid_token", "", err)
	}
	return err
}

// writeProblem answers status with msg in the area's shape: code is the
// platform and notification code (codeOf), oauthCode the RFC 6749 error
// code, field the request field at fault of a 400, if any.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, st style, status int, code, oauthCode, field, msg string) {
	s.writeProblemFields(w, r, st, status, code, oauthCode, field, msg, nil)
}

// writeProblemFields is writeProblem with extra fields beside area A's
// {code, codeDesc, message} (the mfa_token of MFA_REQUIRED, ...).
func (s *Server) writeProblemFields(w http.ResponseWriter, r *http.Request, st style, status int, code, oauthCode, field, msg string, extra map[string]any) {
	traceID := audit.TraceID(r.Context())
	if status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="latchkey"`)
	}
	var body any
	switch st {
	case styleOAuth:
		code := oauthCode
		switch {
		case status >= 500:
			code = "server_error"
		case status == http.StatusTooManyRequests:
			code = "temporarily_unavailable"
		}
		if code == "invalid_client" {
			// RFC 6749 §5.2: 401 with a Basic challenge only to a client
			// that authenticated with HTTP Basic; a client that sent its
			// credentials in the body gets 400 and no challenge.
			if scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " "); strings.EqualFold(scheme, "Basic") {
				status = http.StatusUnauthorized
				w.Header().Set("WWW-Authenticate", `Basic realm="latchkey"`)
			} else {
				status = http.StatusBadRequest
				w.Header().Del("WWW-Authenticate")
			}
		}
		body = map[string]string{"error": code, "error_description": msg}
	case styleProblem:
		if status == http.StatusBadRequest && field != "" {
			body = map[string]any{"errors": map[string][]string{field: {msg}}, "title": "One or more validation errors occurred.", "status": status, "traceId": traceID}
		} else {
			body = map[string]any{"title": http.StatusText(status), "status": status, "detail": msg, "traceId": traceID}
		}
	case styleNotification:
		body = map[string]string{"code": code, "description": msg}
	case styleProvisioning:
		body = map[string]any{"code": status, "message": msg}
	case styleFIDO:
		body = map[string]string{"status": "failed", "errorMessage": msg}
	case styleSCIM:
		writeSCIM(w, status, map[string]any{"schemas": []string{scim.URNError}, "status": strconv.Itoa(status), "detail": msg})
		return
	default:
		m := map[string]any{"code": status, "codeDesc": code, "message": msg}
		for k, v := range extra {
			m[k] = v
		}
		body = m
	}
	if status == http.StatusTooManyRequests {
		if secs := retryAfter(msg); secs != "" {
			w.Header().Set("Retry-After", secs)
		}
	}
	writeJSON(w, status, body)
}

// retryAfter extracts "in N seconds" from a throttling message.
func retryAfter(msg string) string {
	_, after, ok := strings.Cut(msg, " in ")
	if !ok {
		return ""
	}
	n, _, _ := strings.Cut(after, " ")
	if _, err := strconv.Atoi(n); err != nil {
		return ""
	}
	return n
}
