package oidc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Signed request objects (RFC 9101), by value, at PAR and at the
// authorization endpoint: the client signs the authorization parameters
// with a key of its jwks or jwks_uri, and only the object's parameters
// count (§6.3). Latchkey fetches no request_uri of a client: a
// request_uri is only a PAR URN.

// MaxRequestObjectLife bounds exp - nbf (FAPI 2.0 Message Signing §5.3.1).
const MaxRequestObjectLife = 60 * time.Minute

// requestObjectSkew is how far nbf may be ahead of the server.
const requestObjectSkew = 60 * time.Second

func invalidObject(format string, args ...any) error {
	return fault.E(fault.Invalid, fault.Field("request"), "invalid request object: "+fmt.Sprintf(format, args...), ErrInvalidRequestObject)
}

// requestParams returns the authorization parameters of a request of
// client c: the signed request object's when params carry one, else
// params themselves. A client that requires signed objects and sent none
// is invalid_request; request with request_uri is invalid_request; a bad
// object is invalid_request_object.
func (s *Service) requestParams(ctx context.Context, c identity.OAuthClient, params url.Values) (url.Values, error) {
	if !params.Has("request") {
		if c.RequireSignedRequestObject {
			return nil, fault.E(fault.Invalid, fault.Field("request"), "the client must send a signed request object", identity.ErrInvalidRequest)
		}
		return params, nil
	}
	if params.Has("request_uri") {
		return nil, fault.E(fault.Invalid, fault.Field("request"), "send request or request_uri, not both", identity.ErrInvalidRequest)
	}
	if len(params["request"]) != 1 || len(params.Get("request")) > 16<<10 {
		return nil, invalidObject("one request parameter of at most 16 KiB")
	}
	payload, typ, err := s.cfg.Identity.VerifyClientJWS(ctx, c, params.Get("request"), c.RequestObjectSigningAlg)
	if err != nil {
		return nil, invalidObject("%v", err)
	}
	if typ != "" && typ != "oauth-authz-req+jwt" {
		return nil, invalidObject("typ must be oauth-authz-req+jwt")
	}
	var claims map[string]any
	dec := json.NewDecoder(bytesReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil {
		return nil, invalidObject("the claims are not a JSON object")
	}
	if iss, _ := claims["iss"].(string); iss != c.ID {
		return nil, invalidObject("iss must be the client_id")
	}
	if id, _ := claims["client_id"].(string); id != c.ID {
		return nil, invalidObject("client_id must be the client's")
	}
	if !audienceHas(claims["aud"], s.Issuer()) {
		return nil, invalidObject("aud must contain the issuer %s", s.Issuer())
	}
	exp, okExp := numericDate(claims["exp"])
	nbf, okNbf := numericDate(claims["nbf"])
	now := s.cfg.Clock.Now()
	switch {
	case !okExp || !okNbf:
		return nil, invalidObject("exp and nbf are required")
	case !exp.After(now):
		return nil, invalidObject("the object has expired")
	case nbf.After(now.Add(requestObjectSkew)):
		return nil, invalidObject("the object is not valid yet (nbf)")
	case exp.Sub(nbf) > MaxRequestObjectLife:
		return nil, invalidObject("exp is more than 60 minutes after nbf")
	}
	out := url.Values{}
	for k, v := range claims {
		switch k {
		case "iss", "aud", "exp", "nbf", "iat", "jti":
			continue
		case "request", "request_uri":
			return nil, invalidObject("the object must not carry %s", k)
		}
		switch v := v.(type) {
		case string:
			out.Set(k, v)
		case json.Number:
			out.Set(k, v.String())
		default:
			return nil, invalidObject("parameter %s must be a string", k)
		}
	}
	return out, nil
}

func audienceHas(aud any, iss string) bool {
	switch a := aud.(type) {
	case string:
		return a == iss
	case []any:
		return slices.ContainsFunc(a, func(v any) bool { s, _ := v.(string); return s == iss })
	}
	return false
}

func numericDate(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
