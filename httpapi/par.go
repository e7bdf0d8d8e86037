package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// parPath is the pushed authorization request endpoint (RFC 9126).
const parPath = "/oauth/v1/par"

// maxPARBody bounds a pushed request: a larger one is invalid_request.
const maxPARBody = 16 << 10

func (s *Server) registerPAR() {
	s.handle("POST", s.opts.AuthURL+parPath, routeOpts{style: styleOAuth, limit: 64 << 10, name: "oauth-client"}, s.pushAuthorization)
}

// pushAuthorization is RFC 9126 §2: the client's authorization request,
// authenticated as at the token endpoint, answered 201 with a one-time
// request_uri.
func (s *Server) pushAuthorization(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPARBody+1))
	if err != nil {
		return err
	}
	if len(body) > maxPARBody {
		return fault.E(fault.Invalid, "the pushed request is larger than 16 KiB", identity.ErrInvalidRequest)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	form, auth, err := s.oauthForm(r)
	if err != nil {
		return err
	}
	in := oidc.PushRequest{Params: url.Values{}, Auth: auth}
	for k, v := range form {
		switch k {
		case "client_secret", "client_assertion", "client_assertion_type":
		default:
			in.Params[k] = v
		}
	}
	if in.DPoP, err = s.dpopOf(r); err != nil {
		return err
	}
	out, err := s.p.OIDC.Push(r.Context(), in)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, out)
	return nil
}
