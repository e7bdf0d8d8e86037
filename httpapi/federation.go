package httpapi

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/federation"
)

// Upstream sign-in (API-federation.md): the providers' admin routes, the
// start from the hosted sign-in page's "Sign in with …" buttons and one
// callback per provider. The flow cookie carries the sealed state, nonce,
// PKCE verifier and authorization request from the start to the callback:
// __Host- on TLS, HttpOnly, SameSite=Lax (the upstream's redirect back is
// a top-level navigation from its site, on which Strict cookies are
// withheld), valid federation.FlowTTL, cleared at the callback whatever
// the outcome. After a callback that found an account to connect it
// carries the pending identity instead.
const (
	fedCookieTLS   = "__Host-latchkey-fed"
	fedCookiePlain = "latchkey-fed"
	federationPath = "/oauth/v1/federation"
)

func fedCookieName(r *http.Request) string {
	if r.TLS != nil {
		return fedCookieTLS
	}
	return fedCookiePlain
}

func setFedCookie(w http.ResponseWriter, r *http.Request, sealed []byte) {
	c := &http.Cookie{Name: fedCookieName(r), Path: "/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode}
	if sealed == nil {
		c.MaxAge = -1
	} else {
		c.Value, c.MaxAge = base64.RawURLEncoding.EncodeToString(sealed), int(federation.FlowTTL/time.Second)
	}
	http.SetCookie(w, c)
}

func fedCookie(r *http.Request) []byte {
	c, err := r.Cookie(fedCookieName(r))
	if err != nil || len(c.Value) > 8<<10 {
		return nil
	}
	b, _ := base64.RawURLEncoding.DecodeString(c.Value)
	return b
}

func (s *Server) registerFederation() {
	page := routeOpts{style: stylePlatform, limit: 64 << 10, page: true}
	s.handle("GET", s.opts.AuthURL+federationPath+"/{tenantCode}/{providerId}/callback", page, s.federationCallback)
	admin := s.platformJWT()
	base := s.opts.BaseURL + "/admin/tenants/{tenantId}/identity-providers"
	s.handle("POST", base, admin, s.createIdentityProvider)
	s.handle("GET", base, admin, s.listIdentityProviders)
	s.handle("GET", base+"/{providerId}", admin, s.getIdentityProvider)
	s.handle("PATCH", base+"/{providerId}", admin, s.patchIdentityProvider)
	s.handle("DELETE", base+"/{providerId}", admin, s.deleteIdentityProvider)
}

// federationRedirectURI is a provider's callback URL, registered upstream.
func (s *Server) federationRedirectURI(tenantCode, providerID string) string {
	return s.opts.PublicURL + s.opts.AuthURL + federationPath + "/" + url.PathEscape(tenantCode) + "/" + url.PathEscape(providerID) + "/callback"
}

func (s *Server) providerView(v federation.ProviderView) federation.ProviderView {
	v.RedirectURI = s.federationRedirectURI(v.TenantCode, v.ID)
	return v
}

func (s *Server) createIdentityProvider(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var in federation.ProviderInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	v, err := s.p.Federation.CreateProvider(r.Context(), principal(r), id, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.providerView(v))
	return nil
}

func (s *Server) listIdentityProviders(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	vs, err := s.p.Federation.ListProviders(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	for i := range vs {
		vs[i] = s.providerView(vs[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"resources": vs})
	return nil
}

func (s *Server) getIdentityProvider(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	v, err := s.p.Federation.GetProvider(r.Context(), principal(r), id, r.PathValue("providerId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.providerView(v))
	return nil
}

func (s *Server) patchIdentityProvider(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var in federation.ProviderInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	v, err := s.p.Federation.UpdateProvider(r.Context(), principal(r), id, r.PathValue("providerId"), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.providerView(v))
	return nil
}

func (s *Server) deleteIdentityProvider(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	if err := s.p.Federation.DeleteProvider(r.Context(), principal(r), id, r.PathValue("providerId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// federationStart answers the sign-in form posted with provider=<id>: 303
// to the upstream with a fresh flow cookie; without the form's CSRF token
// 403; an unknown, disabled or not allowed provider: page 400.
func (s *Server) federationStart(w http.ResponseWriter, r *http.Request, form url.Values) error {
	ctx := r.Context()
	tenantID, allowed, err := s.p.OIDC.UpstreamStart(ctx, form.Get("request"), form.Get("csrf_token"), oidcBrowserID(r))
	if err != nil {
		return s.errorPage(w, r, err)
	}
	t, err := s.p.Identity.Tenant(ctx, tenantID)
	if err != nil {
		return s.errorPage(w, r, err)
	}
	pid := form.Get("provider")
	to, sealed, err := s.p.Federation.Start(ctx, federation.StartRequest{TenantID: tenantID, ProviderID: pid, Intent: federation.IntentSignIn,
		Request: form.Get("request"), Allowed: allowed, RedirectURL: s.federationRedirectURI(t.Code, pid)})
	if err != nil {
		return s.errorPage(w, r, err)
	}
	setFedCookie(w, r, sealed)
	pageHeaders(w)
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// federationHinted starts the upstream flow an authorization request named
// with idp_hint, skipping the sign-in page; it reports false (the page is
// shown) when the hint names no enabled provider the client may use.
func (s *Server) federationHinted(w http.ResponseWriter, r *http.Request, request, pid string) bool {
	ctx := r.Context()
	tenantID, allowed, err := s.p.OIDC.UpstreamHinted(ctx, request)
	if err != nil {
		return false
	}
	t, err := s.p.Identity.Tenant(ctx, tenantID)
	if err != nil {
		return false
	}
	to, sealed, err := s.p.Federation.Start(ctx, federation.StartRequest{TenantID: tenantID, ProviderID: pid, Intent: federation.IntentSignIn,
		Request: request, Allowed: allowed, RedirectURL: s.federationRedirectURI(t.Code, pid)})
	if err != nil {
		return false
	}
	setFedCookie(w, r, sealed)
	pageHeaders(w)
	http.Redirect(w, r, to, http.StatusFound)
	return true
}

// federationCallback is a provider's callback: the upstream's answer
// signs someone in (303 to the client), or shows the sign-in page with a
// notice, or an error page with the reason; never a redirect carrying
// upstream data.
func (s *Server) federationCallback(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	code, pid := r.PathValue("tenantCode"), r.PathValue("providerId")
	q := r.URL.Query()
	flow := fedCookie(r)
	setFedCookie(w, r, nil) // spent whatever the outcome
	for _, v := range q {
		if len(v) > 1 {
			return s.errorPage(w, r, fault.E(fault.Invalid, "a parameter is repeated"))
		}
	}
	_, hasIss := q["iss"]
	res, err := s.p.Federation.Callback(ctx, federation.CallbackRequest{TenantCode: code, ProviderID: pid, Flow: flow,
		State: q.Get("state"), Code: q.Get("code"), Error: q.Get("error"), Iss: q.Get("iss"), HasIss: hasIss,
		RedirectURL: s.federationRedirectURI(code, pid), RemoteAddr: r.RemoteAddr})
	if err != nil {
		return s.errorPage(w, r, err)
	}
	if res.Intent == federation.IntentLink {
		pageHeaders(w)
		http.Redirect(w, r, s.opts.AuthURL+accountIdentitiesPath, http.StatusSeeOther)
		return nil
	}
	if res.Notice != "" {
		pg, err := s.p.OIDC.SignInPage(ctx, res.Request, browserID(w, r))
		if err != nil {
			return s.errorPage(w, r, err)
		}
		if res.Pending != nil {
			setFedCookie(w, r, res.Pending)
		}
		s.renderSignIn(w, http.StatusOK, pg, res.Notice)
		return nil
	}
	out, err := s.p.OIDC.UpstreamSignIn(ctx, res.Request, oidcBrowserID(r), res.User, res.AMR, res.Provider.ID)
	if err != nil {
		return s.errorPage(w, r, err)
	}
	setOIDCCookie(w, r, out.SessionID)
	pageHeaders(w)
	http.Redirect(w, r, out.Outcome.Redirect, http.StatusSeeOther)
	return nil
}
