package oidc

import (
	"context"
	"crypto/rand"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Pushed authorization requests (RFC 9126): the client sends the
// authorization request to the provider first, authenticated as at the
// token endpoint, and every check of an authorization request runs before
// a browser is involved; the browser then carries only a one-time
// request_uri.

// ActionPAR is the audit action of a pushed authorization request.
const ActionPAR = "oauth.par"

// PARTTL is the life of a request_uri (FAPI 2.0 requires under 600 s):
// the client redirects the browser at once.
const PARTTL = 60 * time.Second

// RequestURIPrefix is the form of every request_uri (RFC 9126 §2.2).
const RequestURIPrefix = "urn:ietf:params:oauth:request_uri:"

// ErrInvalidRequestURI and ErrInvalidRequestObject are RFC 9126's and
// RFC 9101's error codes.
var (
	ErrInvalidRequestURI    = errors.New("invalid_request_uri")
	ErrInvalidRequestObject = errors.New("invalid_request_object")
)

// PushRequest is a pushed authorization request as the HTTP layer read
// it: the form's parameters, the client's authentication and, when the
// request carried one, its DPoP proof (which binds the future code).
type PushRequest struct {
	Params url.Values
	Auth   identity.ClientAuth
	DPoP   *identity.DPoPRequest
}

// Pushed is the answer of a pushed authorization request (RFC 9126 §2.2).
type Pushed struct {
	RequestURI string `json:"request_uri"`
	ExpiresIn  int64  `json:"expires_in"`
}

// Push checks a pushed authorization request and stores it under a new
// request_uri, valid PARTTL and usable once. A client that fails
// authentication is invalid_client; every other refusal is a 400 with
// RFC 9126's codes (invalid_request for a request_uri in the body, an
// unregistered redirect_uri or a malformed parameter; unauthorized_client,
// invalid_scope, invalid_request_object, invalid_dpop_proof). Audited as
// oauth.par.
func (s *Service) Push(ctx context.Context, in PushRequest) (Pushed, error) {
	c, err := s.cfg.Identity.AuthenticateClientRequest(ctx, in.Auth, ActionPAR)
	if err != nil {
		return Pushed{}, err
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	meta := map[string]any{"client_id": c.ID}
	fail := func(err error) (Pushed, error) { return Pushed{}, s.record(ctx, c.TenantID, ActionPAR, err, meta) }
	params := in.Params
	if params.Has("request_uri") {
		return fail(fault.E(fault.Invalid, fault.Field("request_uri"), "request_uri is not allowed at the PAR endpoint", identity.ErrInvalidRequest))
	}
	if id := params.Get("client_id"); id != "" && id != c.ID {
		return fail(fault.E(fault.Invalid, fault.Field("client_id"), "client_id is not the authenticated client", identity.ErrInvalidRequest))
	}
	params, err = s.requestParams(ctx, c, params)
	if err != nil {
		return fail(err)
	}
	for k, v := range params {
		if len(v) > 1 {
			return fail(fault.E(fault.Invalid, fault.Field(k), "parameter "+k+" is repeated", identity.ErrInvalidRequest))
		}
	}
	if len(params["redirect_uri"]) != 1 || !MatchRedirect(c.RedirectURIs, params.Get("redirect_uri")) {
		return fail(fault.E(fault.Invalid, fault.Field("redirect_uri"), MsgBadRedirect, identity.ErrInvalidRequest))
	}
	req := AuthorizationRequest{ClientID: c.ID, TenantID: c.TenantID, RedirectURI: params.Get("redirect_uri"), MaxAge: -1, State: params.Get("state")}
	if rerr := parseAuthorization(params, c, &req); rerr != nil {
		return fail(fault.E(fault.Invalid, rerr.Description, oauthCode(rerr.Code)))
	}
	if in.DPoP != nil {
		cnf, _, err := s.cfg.Identity.SenderConstraint(ctx, c, identity.Binding{DPoP: in.DPoP})
		if err != nil {
			return fail(err)
		}
		if req.DPoPJKT != "" && req.DPoPJKT != cnf.JKT {
			return fail(fault.E(fault.Invalid, fault.Field("dpop_jkt"), "dpop_jkt is not the thumbprint of the DPoP proof's key", identity.ErrInvalidDPoPProof))
		}
		req.DPoPJKT = cnf.JKT
	}
	now := s.now()
	uri := RequestURIPrefix + rand.Text() + rand.Text()
	if err := s.st.CreatePushedRequest(ctx, PushedRequest{Hash: hashOf(uri), ClientID: c.ID, TenantID: c.TenantID, Request: req,
		CreatedAt: now, ExpiresAt: now.Add(PARTTL)}); err != nil {
		return Pushed{}, err
	}
	meta["redirect_uri"], meta["scope"] = req.RedirectURI, req.Scope
	if req.DPoPJKT != "" {
		meta["dpop_jkt"] = req.DPoPJKT
	}
	return Pushed{RequestURI: uri, ExpiresIn: int64(PARTTL / time.Second)}, s.record(ctx, c.TenantID, ActionPAR, nil, meta)
}

// oauthCode is the error a redirect error code stands for at the PAR
// endpoint, which answers JSON instead.
func oauthCode(code string) error {
	for _, e := range []error{identity.ErrUnauthorizedClient, identity.ErrInvalidScope, ErrInvalidRequestObject, identity.ErrInvalidDPoPProof} {
		if e.Error() == code {
			return e
		}
	}
	return identity.ErrInvalidRequest
}

// pushedRequest takes the pushed request a browser's request_uri names,
// for the authorization endpoint. An unknown or malformed request_uri, or
// a client_id that is not the pusher's, is an error page (fault.Invalid);
// a used or expired one is a redirect with invalid_request_uri (rerr).
func (s *Service) pushedRequest(ctx context.Context, params url.Values) (identity.OAuthClient, AuthorizationRequest, *RedirectError, error) {
	bad := fault.E(fault.Invalid, fault.Field("request_uri"), MsgUnknownRequestURI)
	uri := params.Get("request_uri")
	if len(params["request_uri"]) != 1 || !strings.HasPrefix(uri, RequestURIPrefix) || len(uri) > maxParam {
		return identity.OAuthClient{}, AuthorizationRequest{}, nil, bad
	}
	pr, err := s.st.TakePushedRequest(ctx, hashOf(uri), s.now())
	if fault.Is(fault.NotFound, err) {
		return identity.OAuthClient{}, AuthorizationRequest{}, nil, bad
	} else if err != nil {
		return identity.OAuthClient{}, AuthorizationRequest{}, nil, err
	}
	if len(params["client_id"]) != 1 || params.Get("client_id") != pr.ClientID {
		return identity.OAuthClient{}, AuthorizationRequest{}, nil, fault.E(fault.Invalid, fault.Field("client_id"), MsgUnknownClient)
	}
	c, err := s.cfg.Identity.Client(ctx, pr.ClientID)
	if fault.Is(fault.NotFound, err) || (err == nil && c.TenantID != pr.TenantID) {
		return identity.OAuthClient{}, AuthorizationRequest{}, nil, fault.E(fault.Invalid, fault.Field("client_id"), MsgUnknownClient)
	} else if err != nil {
		return identity.OAuthClient{}, AuthorizationRequest{}, nil, err
	}
	req := pr.Request
	switch {
	case pr.UsedAt != nil:
		return c, req, redirectErr(ErrInvalidRequestURI.Error(), "the request_uri was used before"), nil
	case !s.now().Before(pr.ExpiresAt):
		return c, req, redirectErr(ErrInvalidRequestURI.Error(), "the request_uri has expired"), nil
	}
	return c, req, nil, nil
}

// MsgUnknownRequestURI is the error page's message for a request_uri the
// provider does not know.
const MsgUnknownRequestURI = "The request_uri is unknown. Go back to the application and start again."

// requiresPAR reports whether client c must push its requests.
func (s *Service) requiresPAR(c identity.OAuthClient) bool { return s.cfg.RequirePAR || c.RequirePAR }
