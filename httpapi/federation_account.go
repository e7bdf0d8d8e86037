package httpapi

import (
	"net/http"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/identity"
)

// accountIdentitiesPath is the signed-in user's page of linked identities.
const accountIdentitiesPath = "/oauth/v1/account/identities"

func (s *Server) registerFederationLinks() {
	page := routeOpts{style: stylePlatform, limit: 64 << 10, page: true}
	s.handle("GET", s.opts.AuthURL+accountIdentitiesPath, page, s.accountIdentities)
	s.handle("POST", s.opts.AuthURL+accountIdentitiesPath, page, s.accountIdentitiesPost)
	user := s.platformJWT()
	s.handle("GET", s.opts.BaseURL+"/me/identities", user, s.myIdentities)
	s.handle("DELETE", s.opts.BaseURL+"/me/identities/{providerId}", user, s.unlinkMyIdentity)
	admin := s.platformJWT()
	base := s.opts.BaseURL + "/admin/tenants/{tenantId}/users/{userId}/identities"
	s.handle("GET", base, admin, s.userIdentities)
	s.handle("POST", base, admin, s.linkUserIdentity)
	s.handle("DELETE", base+"/{providerId}", admin, s.unlinkUserIdentity)
}

// identitiesView is what identities.html shows.
type identitiesView struct {
	Nonce, Action, CSRFToken, Name, Error string
	Links                                 []federation.AccountLink
	Available                             []federation.Provider
	Confirm                               *connectView
}

type connectView struct{ Provider, Email, Name string }

func (s *Server) renderIdentities(w http.ResponseWriter, status int, v identitiesView) {
	v.Nonce = pageHeaders(w)
	v.Action = s.opts.AuthURL + accountIdentitiesPath
	w.WriteHeader(status)
	oidcPages.ExecuteTemplate(w, "identities.html", v)
}

// pendingConnect answers a sign-in that proved an account while the
// browser holds a pending upstream identity (the linking rules' step 2):
// the question "Connect <provider> (<email>) to <name>?" instead of the
// redirect, which waits in the sealed cookie. It reports whether it did.
func (s *Server) pendingConnect(w http.ResponseWriter, r *http.Request, sessionID string, u identity.User, next string) bool {
	sealed := fedCookie(r)
	if sealed == nil {
		return false
	}
	pd := s.p.Federation.OpenPending(sealed, u.TenantID)
	if pd == nil {
		setFedCookie(w, r, nil)
		return false
	}
	pd.Next = next
	setFedCookie(w, r, s.p.Federation.SealPending(*pd))
	s.renderIdentities(w, http.StatusOK, identitiesView{CSRFToken: s.p.OIDC.CSRFToken(sessionID), Name: u.Name,
		Confirm: &connectView{Provider: s.p.Federation.ProviderName(r.Context(), u.TenantID, pd.ProviderID), Email: pd.Email, Name: u.Name}})
	return true
}

func (s *Server) accountIdentities(w http.ResponseWriter, r *http.Request) error {
	u, err := s.p.OIDC.SessionUser(r.Context(), oidcBrowserID(r))
	if err != nil {
		return s.errorPage(w, r, err)
	}
	return s.showIdentities(w, r, u, http.StatusOK, "")
}

func (s *Server) showIdentities(w http.ResponseWriter, r *http.Request, u identity.User, status int, msg string) error {
	links, avail, err := s.p.Federation.AccountPage(r.Context(), u)
	if err != nil {
		return err
	}
	s.renderIdentities(w, status, identitiesView{CSRFToken: s.p.OIDC.CSRFToken(oidcBrowserID(r)), Name: u.Name, Links: links, Available: avail, Error: msg})
	return nil
}

// accountIdentitiesPost is the account page's forms: "Connect" (the
// upstream flow bound to this session), "Disconnect", and the answer to
// a pending connection's question ("confirm" or "skip"). Each needs the
// session and its CSRF token.
func (s *Server) accountIdentitiesPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	form, err := pageForm(r, "the form")
	if err != nil {
		return s.errorPage(w, r, err)
	}
	bid := oidcBrowserID(r)
	u, err := s.p.OIDC.SessionUser(ctx, bid)
	if err != nil {
		return s.errorPage(w, r, err)
	}
	if !s.p.OIDC.CheckCSRF(bid, form.Get("csrf_token")) {
		return s.errorPage(w, r, fault.E(fault.Forbidden, "The form has expired. Reload the page and try again."))
	}
	switch form.Get("action") {
	case "confirm", "skip":
		pd := s.p.Federation.OpenPending(fedCookie(r), u.TenantID)
		setFedCookie(w, r, nil)
		if pd == nil {
			return s.errorPage(w, r, fault.E(fault.Invalid, federation.MsgExpired))
		}
		if form.Get("action") == "confirm" {
			if err := s.p.Federation.LinkPending(ctx, *pd, u); err != nil {
				return s.errorPage(w, r, err)
			}
		}
		to := pd.Next
		if to == "" {
			to = s.opts.AuthURL + accountIdentitiesPath
		}
		pageHeaders(w)
		http.Redirect(w, r, to, http.StatusSeeOther)
		return nil
	case "connect":
		t, err := s.p.Identity.Tenant(ctx, u.TenantID)
		if err != nil {
			return err
		}
		pid := form.Get("provider")
		to, sealed, err := s.p.Federation.Start(ctx, federation.StartRequest{TenantID: u.TenantID, ProviderID: pid, Intent: federation.IntentLink,
			UserID: u.ID, RedirectURL: s.federationRedirectURI(t.Code, pid)})
		if err != nil {
			return s.errorPage(w, r, err)
		}
		setFedCookie(w, r, sealed)
		pageHeaders(w)
		http.Redirect(w, r, to, http.StatusSeeOther)
		return nil
	case "disconnect":
		if err := s.p.Federation.UnlinkSession(ctx, u, form.Get("provider")); err != nil {
			if k := fault.KindOf(err); k == fault.Conflict || k == fault.NotFound {
				return s.showIdentities(w, r, u, StatusOf(err), fault.MessageOf(err))
			}
			return err
		}
		pageHeaders(w)
		http.Redirect(w, r, s.opts.AuthURL+accountIdentitiesPath, http.StatusSeeOther)
		return nil
	}
	return s.errorPage(w, r, fault.E(fault.Invalid, "unknown action"))
}

func (s *Server) myIdentities(w http.ResponseWriter, r *http.Request) error {
	ls, err := s.p.Federation.MyLinks(r.Context(), principal(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"resources": ls})
	return nil
}

func (s *Server) unlinkMyIdentity(w http.ResponseWriter, r *http.Request) error {
	if err := s.p.Federation.UnlinkMine(r.Context(), principal(r), r.PathValue("providerId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) userIdentities(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	ls, err := s.p.Federation.UserLinks(r.Context(), principal(r), id, r.PathValue("userId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"resources": ls})
	return nil
}

func (s *Server) linkUserIdentity(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var in federation.LinkInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	l, err := s.p.Federation.LinkUser(r.Context(), principal(r), id, r.PathValue("userId"), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, l)
	return nil
}

func (s *Server) unlinkUserIdentity(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	if err := s.p.Federation.UnlinkUser(r.Context(), principal(r), id, r.PathValue("userId"), r.PathValue("providerId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
