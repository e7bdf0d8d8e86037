package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// ResourceOptions describe an embedder's own API, protected by Latchkey's
// access tokens with RequireAccessToken.
type ResourceOptions struct {
	// Audience is the API's resource identifier (RFC 8707): an absolute
	// URI registered in the OAuth clients' resources. Only tokens whose
	// aud names it are accepted, so a token minted for Latchkey's own
	// areas, or for another API, is refused here (RFC 9068 §4).
	Audience string
	// Scope, when set, must be one of the token's scopes (else 403
	// insufficient_scope).
	Scope string
	// URL is the API's external origin (scheme://host[:port]), which DPoP
	// proofs name in htu; the origin the request reached is accepted too.
	URL string
	// ACR, when set, is the least acr (identity.ACRMFA, ...) of the
	// user's sign-in behind the token; MaxAge, when positive, the oldest
	// sign-in (auth_time) accepted. A user's token that falls short gets
	// 401 with RFC 9470's insufficient_user_authentication challenge
	// naming them (acr_values, max_age), which the client answers by
	// signing the user in again with them; a client's token (no user)
	// gets 403 insufficient_scope.
	ACR    string
	MaxAge time.Duration
}

type callerKey struct{}

// Caller returns the caller RequireAccessToken authenticated, if any.
func Caller(ctx context.Context) (identity.Principal, bool) {
	p, ok := ctx.Value(callerKey{}).(identity.Principal)
	return p, ok
}

// RequireAccessToken returns middleware for an embedder's own API that
// lets through only requests with a Latchkey access token for
// opts.Audience: sent as Bearer, or as DPoP with a fresh proof when the
// token is DPoP-bound, with the client certificate when it is
// certificate-bound, not revoked and not expired. Other requests get 401
// (403 for a missing scope) with the RFC 6750 / RFC 9449 challenge and an
// RFC 6749-style {error, error_description} body. The next handler reads
// the caller with Caller.
func RequireAccessToken(p *latchkey.Platform, opts ResourceOptions) func(http.Handler) http.Handler {
	if opts.Audience == "" {
		panic("httpapi.RequireAccessToken: ResourceOptions.Audience is required")
	}
	origin := strings.TrimSuffix(opts.URL, "/")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			caller, err := authenticateResource(r, p, opts, origin)
			if err != nil {
				refuseResource(w, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
		})
	}
}

func authenticateResource(r *http.Request, p *latchkey.Platform, opts ResourceOptions, origin string) (identity.Principal, error) {
	tok, scheme, ok := credential(r)
	if !ok {
		return identity.Principal{}, challenged(identity.SchemeBearer, "", "", fault.E(fault.Unauthenticated, "missing access token"))
	}
	pr := identity.Presentation{Scheme: scheme}
	proofs := r.Header.Values("DPoP")
	if len(proofs) > 1 {
		return identity.Principal{}, challengeFor(scheme, fault.E(fault.Unauthenticated, "invalid DPoP proof: exactly one DPoP header is allowed", identity.ErrInvalidDPoPProof))
	}
	path := r.URL.EscapedPath()
	reqScheme := "http"
	if r.TLS != nil {
		reqScheme = "https"
		if len(r.TLS.PeerCertificates) > 0 {
			pr.ClientCert = r.TLS.PeerCertificates[0].Raw
		}
	}
	urls := []string{reqScheme + "://" + r.Host + path}
	if origin != "" {
		urls = append(urls, origin+path)
	}
	pr.DPoP = identity.DPoPRequest{Method: r.Method, URLs: urls}
	if len(proofs) == 1 {
		pr.DPoP.Proof = strings.TrimSpace(proofs[0])
	}
	caller, err := p.Identity.AuthenticateRequest(r.Context(), tok, identity.AccessToken, opts.Audience, pr)
	if err != nil {
		return identity.Principal{}, challengeFor(scheme, err)
	}
	if opts.Scope != "" && !caller.HasScope(opts.Scope) {
		return identity.Principal{}, challenged(scheme, "insufficient_scope", opts.Scope, fault.E(fault.Forbidden, "the access token lacks scope "+opts.Scope))
	}
	if opts.ACR != "" || opts.MaxAge > 0 {
		err := identity.CheckUserAuthenticationAt(caller, opts.ACR, opts.MaxAge, p.Clock().Now())
		var up *identity.StepUp
		switch {
		case err == nil:
		case errors.As(err, &up):
			return identity.Principal{}, stepUpChallenge(scheme, up, err)
		default:
			return identity.Principal{}, challenged(scheme, "insufficient_scope", "", err)
		}
	}
	return caller, nil
}

func refuseResource(w http.ResponseWriter, err error) {
	status := StatusOf(err)
	if status == 0 {
		status = http.StatusInternalServerError
	}
	msg := messageOf(err, status)
	code := "server_error"
	var ch *challenge
	if errors.As(err, &ch) {
		w.Header().Set("WWW-Authenticate", ch.header(msg))
		code = ch.code
	}
	if code == "" {
		code = "invalid_request" // no token at all: RFC 6750 §3.1 sends no error code; the body still needs one
	}
	writeJSON(w, status, map[string]string{"error": code, "error_description": msg})
}
