package oidc

import (
	"context"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Page is what the hosted sign-in page shows and carries.
type Page struct {
	ClientName string
	TenantName string
	// TenantCode is the auth_domain the page's passkey ceremony asks
	// options for: the client's tenant, so no other tenant's passkey can
	// answer.
	TenantCode string
	// Request is the sealed authorization request, sent back with the form.
	Request   string
	CSRFToken string
	LoginHint string
	// Passkeys reports whether "Sign in with a passkey" can work.
	Passkeys bool
	// Second, when set, is the second step the page shows instead of
	// the password form (a step-up of the browser's session).
	Second *SecondStep
	// Upstreams are the "Sign in with …" buttons of the tenant's
	// upstream identity providers.
	Upstreams []UpstreamOption
}

// SignInPage returns the sign-in page of a sealed request for the browser
// whose cookie holds browserID (the caller makes one with NewBrowserID
// when it has none). A forged or expired request is fault.Invalid.
func (s *Service) SignInPage(ctx context.Context, request, browserID string) (Page, error) {
	req, err := s.openRequest(request)
	if err != nil {
		return Page{}, err
	}
	c, t, err := s.clientAndTenant(ctx, req)
	if err != nil {
		return Page{}, err
	}
	pg := Page{ClientName: c.Name, TenantName: t.Name, TenantCode: t.Code, Request: request, CSRFToken: s.CSRFToken(browserID),
		LoginHint: req.LoginHint, Passkeys: s.cfg.Passkeys != nil}
	if pg.Upstreams, err = s.upstreamOptions(ctx, c, t.ID); err != nil {
		return Page{}, err
	}
	if req.StepUp {
		// A step-up of the browser's session: only the missing factor.
		if pg.Second, err = s.stepUpPage(ctx, req, browserID); err != nil {
			return Page{}, err
		}
	}
	return pg, nil
}

func (s *Service) clientAndTenant(ctx context.Context, req AuthorizationRequest) (identity.OAuthClient, identity.Tenant, error) {
	c, err := s.cfg.Identity.Client(ctx, req.ClientID)
	if err == nil && c.TenantID != req.TenantID {
		err = fault.E(fault.NotFound, "client not found")
	}
	if fault.Is(fault.NotFound, err) {
		return c, identity.Tenant{}, fault.E(fault.Invalid, fault.Field("request"), MsgRequestExpired, err)
	} else if err != nil {
		return c, identity.Tenant{}, err
	}
	t, err := s.cfg.Identity.Tenant(ctx, c.TenantID)
	if fault.Is(fault.NotFound, err) {
		return c, t, fault.E(fault.Invalid, fault.Field("request"), MsgRequestExpired, err)
	}
	return c, t, err
}

// SignInRequest is the sign-in form as posted: a password sign-in
// (Username, Password) or a passkey sign-in (FlowID and the
// PublicKeyCredential's toJSON() of the options the page asked for the
// client's tenant).
type SignInRequest struct {
	Request    string
	CSRFToken  string
	BrowserID  string // the id the browser's cookie holds ("" without one)
	Username   string
	Password   string
	FlowID     string
	Credential []byte
	RemoteAddr string
	// The second step of a multi-factor sign-in (mfa.go): the sealed
	// step the page carries, and one factor (OTP, RecoveryCode, or the
	// passkey's FlowID and Credential); Saved confirms that the recovery
	// codes of an enrolment were shown.
	MFAToken     string
	OTP          string
	RecoveryCode string
	Saved        bool
}

// SignInResult is a successful sign-in: the new session, whose id the
// browser's cookie must hold from now on (a fresh one: no session
// fixation), and the redirect that completes the authorization request.
type SignInResult struct {
	SessionID string
	Session   Session
	Outcome   Outcome
	// Second, when set, is the page of a second step the sign-in needs
	// (Outcome is empty, no session started).
	Second *SecondStep
	// Codes, when set, are the recovery codes of a first factor enrolled
	// by this sign-in: the page shows them once, then its "I have saved
	// these codes" completes the request (Outcome is empty; the session
	// has started).
	Codes []string
}

// Messages of the sign-in page.
const (
	MsgCSRF        = "The sign-in form has expired. Reload the page and try again."
	MsgBadLogin    = "Invalid username or password."
	MsgBadPasskey  = "The passkey sign-in was refused."
	MsgMissingCred = "Enter your username and password, or sign in with a passkey."
)

// SignIn checks a posted sign-in form: the CSRF token of the browser's
// own cookie (fault.Forbidden without it), the sealed request
// (fault.Invalid when forged or expired), then the credentials in the
// client's tenant only, so a user of another tenant cannot sign in.
// Password failures count toward the API login's throttle and are
// audited as oidc.sign-in; passkey failures as passkey logins are
// (auth.login). A refused credential is fault.Unauthenticated (or
// fault.TooManyRequests); the page shows it and may be posted again. On
// success the browser's previous session ends, a new one starts
// (audited as oidc.sign-in), and the request is completed with a code.
func (s *Service) SignIn(ctx context.Context, in SignInRequest) (SignInResult, error) {
	if !s.checkCSRF(in.BrowserID, in.CSRFToken) {
		return SignInResult{}, fault.E(fault.Forbidden, fault.Field("csrf_token"), MsgCSRF)
	}
	req, err := s.openRequest(in.Request)
	if err != nil {
		return SignInResult{}, err
	}
	_, tenant, err := s.clientAndTenant(ctx, req)
	if err != nil {
		return SignInResult{}, err
	}
	ctx = audit.WithActor(ctx, "", req.ClientID)
	meta := map[string]any{"client_id": req.ClientID, "remoteAddr": in.RemoteAddr}
	switch {
	case in.Saved:
		return s.codesSaved(ctx, req, in)
	case in.MFAToken != "":
		return s.secondStep(ctx, req, tenant, in, meta)
	}
	var (
		u   identity.User
		amr []string
	)
	switch {
	case in.FlowID != "" || len(in.Credential) > 0:
		meta["method"] = "passkey"
		if s.cfg.Passkeys == nil {
			return SignInResult{}, fault.E(fault.Unavailable, "passkey sign-in is not configured")
		}
		var (
			t identity.Tenant
			a identity.Authn
		)
		t, u, a, err = s.cfg.Passkeys.CheckPasskey(ctx, in.FlowID, in.Credential, in.RemoteAddr)
		if err != nil {
			if fault.Is(fault.Invalid, err) {
				err = fault.E(fault.Unauthenticated, MsgBadPasskey, err)
			}
			return SignInResult{}, err
		}
		if t.ID != tenant.ID {
			// A passkey flow of another tenant: its user is no user of
			// this client's tenant.
			meta["user"] = map[string]any{"id": u.ID.String()}
			return SignInResult{}, s.record(ctx, tenant.ID, ActionSignIn, fault.E(fault.Unauthenticated, MsgBadPasskey), meta)
		}
		amr = a.AMR
	case in.Username != "" && in.Password != "":
		meta["method"] = "password"
		var t identity.Tenant
		t, u, err = s.cfg.Identity.CheckPassword(ctx, identity.LoginRequest{Name: in.Username, Password: in.Password, AuthDomain: tenant.Code, RemoteAddr: in.RemoteAddr, Origin: identity.OriginOIDC}, ActionSignIn)
		if fault.CodeOf(err) == codeRequired && req.Floor != "" && s.cfg.SecondFactor != nil {
			// The request's floor picks the factors that reach it.
			err = s.cfg.SecondFactor.StepUp(ctx, t, u, identity.OriginOIDC, []string{identity.AMRPassword}, req.Floor)
		}
		if res, done, serr := s.afterFirst(ctx, req, in.BrowserID, "", err); done {
			return res, serr
		}
		if err != nil {
			if fault.Is(fault.Unauthenticated, err) {
				err = fault.E(fault.Unauthenticated, MsgBadLogin, err)
			}
			return SignInResult{}, err
		}
		amr = []string{identity.AMRPassword}
		if floor := req.Floor; floor != "" && s.cfg.SecondFactor != nil {
			// The request asks more than a password (acr_values).
			err := s.cfg.SecondFactor.StepUp(ctx, t, u, identity.OriginOIDC, amr, floor)
			if res, done, serr := s.afterFirst(ctx, req, in.BrowserID, "", err); done {
				return res, serr
			}
			if err != nil {
				return SignInResult{}, err
			}
		}
	default:
		return SignInResult{}, fault.E(fault.Invalid, fault.Field("username"), MsgMissingCred)
	}
	return s.signedIn(ctx, req, tenant, u, amr, "", "", in.BrowserID, nil, meta)
}

// signedIn starts the browser's session of a completed sign-in (a fresh
// id: no session fixation; sid kept when a step-up replaces a session),
// audits it as oidc.sign-in and completes the request with a code; with
// codes (the recovery codes of a first factor enrolled now), the request
// waits for the page that shows them.
func (s *Service) signedIn(ctx context.Context, req AuthorizationRequest, tenant identity.Tenant, u identity.User, amr []string, idp, sid, browserID string, codes []string, meta map[string]any) (SignInResult, error) {
	if browserID != "" {
		if err := s.st.DeleteOIDCSession(ctx, hashOf(browserID)); err != nil && !fault.Is(fault.NotFound, err) {
			return SignInResult{}, err
		}
	}
	if sid == "" {
		sid = newGrantID()
	}
	now := s.now()
	id := newSecret()
	sess := Session{IDHash: hashOf(id), SID: sid, TenantID: tenant.ID, UserID: u.ID, UserName: u.Name, AMR: amr, IDP: idp, ACR: identity.ACRFor(amr),
		AuthTime: now.Truncate(1e9), CreatedAt: now, ExpiresAt: now.Add(s.cfg.SessionTTL)}
	if err := s.st.CreateOIDCSession(ctx, sess); err != nil {
		return SignInResult{}, err
	}
	ctx = audit.WithActor(ctx, u.ID.String(), req.ClientID)
	meta["user"] = map[string]any{"id": u.ID.String(), "name": u.Name}
	meta["sid"], meta["amr"], meta["acr"] = sess.SID, sess.AMR, sess.ACR
	if err := s.record(ctx, tenant.ID, ActionSignIn, nil, meta); err != nil {
		return SignInResult{}, err
	}
	if codes != nil {
		return SignInResult{SessionID: id, Session: sess, Codes: codes}, nil
	}
	out, err := s.complete(ctx, req, sess, map[string]any{"client_id": req.ClientID, "redirect_uri": req.RedirectURI, "scope": req.Scope})
	if err != nil {
		return SignInResult{}, err
	}
	return SignInResult{SessionID: id, Session: sess, Outcome: out}, nil
}
