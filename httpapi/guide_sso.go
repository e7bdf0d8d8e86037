package httpapi

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/guide"
)

// Single sign-on to the guide (guide/sso.go). The flow cookie carries the
// sealed state, nonce and PKCE verifier from the start to the callback. It
// is SameSite=Lax, not Strict: the callback is a top-level navigation from
// the provider's site, on which browsers withhold Strict cookies.
const (
	ssoCookieTLS   = "__Host-latchkey-guide-sso"
	ssoCookiePlain = "latchkey-guide-sso"
)

func ssoCookieName(r *http.Request) string {
	if r.TLS != nil {
		return ssoCookieTLS
	}
	return ssoCookiePlain
}

func (s *Server) registerGuideSSO() {
	page := routeOpts{style: stylePlatform}
	s.handle("GET", "/guide/sso/{tenantCode}/start", page, s.guideSSOStart)
	s.handle("GET", "/guide/sso/{tenantCode}/callback", page, s.guideSSOCallback)
	admin := s.platformJWT()
	base := s.opts.BaseURL + "/admin/tenants/{tenantId}/guide-sso"
	s.handle("GET", base, admin, s.getGuideSSO)
	s.handle("PUT", base, admin, s.putGuideSSO)
	s.handle("DELETE", base, admin, s.deleteGuideSSO)
}

// ssoRedirectURL is the callback URL registered with the tenant's
// provider: on the origin the sign-on started from, so that the flow
// cookie (whose name differs between TLS and plain HTTP) comes back. The
// provider only redirects to URLs registered with it, so a forged Host
// cannot send the code elsewhere.
func (s *Server) ssoRedirectURL(r *http.Request, tenantCode string) string {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return scheme + r.Host + "/guide/sso/" + url.PathEscape(tenantCode) + "/callback"
}

func (s *Server) guideSSOStart(w http.ResponseWriter, r *http.Request) error {
	code := r.PathValue("tenantCode")
	authURL, flow, err := s.p.Guide.SSOStart(r.Context(), code, s.ssoRedirectURL(r, code))
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: ssoCookieName(r), Value: base64.RawURLEncoding.EncodeToString(flow), Path: "/", MaxAge: int(guide.SSOFlowTTL / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	guideSecurityHeaders(w)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, authURL, http.StatusFound)
	return nil
}

func (s *Server) guideSSOCallback(w http.ResponseWriter, r *http.Request) error {
	code := r.PathValue("tenantCode")
	q := r.URL.Query()
	req := guide.SSOCallbackRequest{TenantCode: code, State: q.Get("state"), Code: q.Get("code"), Error: q.Get("error"),
		RedirectURL: s.ssoRedirectURL(r, code), OldID: guideSessionID(r), RemoteAddr: r.RemoteAddr}
	if c, err := r.Cookie(ssoCookieName(r)); err == nil {
		req.Flow, _ = base64.RawURLEncoding.DecodeString(c.Value)
	}
	id, _, err := s.p.Guide.SSOCallback(r.Context(), req)
	if err != nil && !fault.Is(fault.Unauthenticated, err) {
		return err
	}
	// The flow is spent either way.
	http.SetCookie(w, &http.Cookie{Name: ssoCookieName(r), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	guideSecurityHeaders(w)
	w.Header().Set("Cache-Control", "no-store")
	target := "/guide/"
	if err != nil {
		// The page shows the reason in its status line.
		target += "?error=" + url.QueryEscape(fault.MessageOf(err))
	} else {
		setGuideCookie(w, r, id, 0)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
	return nil
}

func (s *Server) getGuideSSO(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	v, err := s.p.Guide.GetSSO(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) putGuideSSO(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var in guide.SSOInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	v, err := s.p.Guide.SetSSO(r.Context(), principal(r), id, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) deleteGuideSSO(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	if err := s.p.Guide.DeleteSSO(r.Context(), principal(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
