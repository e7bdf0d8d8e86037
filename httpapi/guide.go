package httpapi

import (
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	swgui "github.com/swaggest/swgui/v5/static"
	"github.com/vearutop/statigz"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/identity"
)

// The interactive API guide (API.md "Interactive API guide"): GET /guide/
// is a page of our own (guideui/) that loads Swagger UI from the assets
// github.com/swaggest/swgui embeds, so it works offline. The page logs in
// with POST /guide/session (or single sign-on, guide_sso.go) and gets a
// short-lived platform JWT of the session's user from GET /guide/session;
// Swagger UI's requestInterceptor adds it to "try it out" calls that carry
// no Authorization of their own. The page reports user activity with POST
// /guide/session/activity and logs out when idle.

//go:embed guideui
var guideUI embed.FS

// Session cookie names. Browsers accept a __Host- cookie only with Secure,
// which needs TLS, so on plain HTTP (a development server on localhost)
// the cookie goes without the prefix; it is still HttpOnly, SameSite=Strict
// and host-only.
const (
	guideCookieTLS   = "__Host-latchkey-guide"
	guideCookiePlain = "latchkey-guide"
	csrfHeader       = "X-CSRF-Token"
)

func guideCookieName(r *http.Request) string {
	if r.TLS != nil {
		return guideCookieTLS
	}
	return guideCookiePlain
}

// guideSessionID returns the session id of the request's cookie, or "".
func guideSessionID(r *http.Request) string {
	c, err := r.Cookie(guideCookieName(r))
	if err != nil {
		return ""
	}
	return c.Value
}

func setGuideCookie(w http.ResponseWriter, r *http.Request, id string, maxAge int) {
	// No Max-Age on login: the cookie lasts the browser session, and the
	// server enforces the guide's limits itself.
	http.SetCookie(w, &http.Cookie{Name: guideCookieName(r), Value: id, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

func (s *Server) registerGuide() {
	page := routeOpts{style: stylePlatform}
	sess := routeOpts{style: stylePlatform, name: "guide-session"}
	s.handle("GET", "/guide/{$}", page, s.guidePage)
	s.handle("GET", "/guide/static/{file}", page, s.guideStatic())
	s.handle("GET", "/guide/session", sess, s.guideSessionGet)
	s.handle("POST", "/guide/session", page, s.guideLogin)
	s.handle("DELETE", "/guide/session", sess, s.guideLogout)
	s.handle("POST", "/guide/session/activity", sess, s.guideActivity)
	s.registerGuideSSO()
}

// guideSecurityHeaders keep the guide's pages out of frames and other
// sites' referrers, and allow scripts from the server only.
func guideSecurityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

func (s *Server) guidePage(w http.ResponseWriter, r *http.Request) error {
	b, err := guideUI.ReadFile("guideui/index.html")
	if err != nil {
		return fault.E(fault.Internal, err)
	}
	guideSecurityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
	return nil
}

// guideStatic serves the page's own script and style (guideui/) and Swagger
// UI's assets (gzip-compressed in the swgui module; statigz serves them as
// stored to clients that accept gzip and decompressed to the others).
func (s *Server) guideStatic() handlerFunc {
	notFound := func(w http.ResponseWriter, r *http.Request) {
		s.writeProblem(w, r, stylePlatform, http.StatusNotFound, codeOf[fault.NotFound], "invalid_request", "", "no such guide asset")
	}
	assets := http.StripPrefix("/guide/static/", statigz.FileServer(swgui.FS, statigz.OnNotFound(notFound)))
	own, _ := fs.Sub(guideUI, "guideui")
	return func(w http.ResponseWriter, r *http.Request) error {
		file := r.PathValue("file")
		guideSecurityHeaders(w)
		if file != "index.html" {
			if b, err := fs.ReadFile(own, file); err == nil {
				if ct := mime.TypeByExtension(path.Ext(file)); ct != "" {
					w.Header().Set("Content-Type", ct)
				}
				w.Header().Set("Cache-Control", "no-cache")
				w.Write(b)
				return nil
			}
		}
		if strings.HasSuffix(file, ".gz") || !strings.Contains(file, ".") {
			notFound(w, r)
			return nil
		}
		w.Header().Set("Cache-Control", "public, max-age=86400")
		assets.ServeHTTP(w, r)
		return nil
	}
}

// guideSessionJSON is the answer of GET and POST /guide/session.
type guideSessionJSON struct {
	User struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"user"`
	Tenant struct {
		ID   string `json:"id"`
		Code string `json:"code"`
	} `json:"tenant"`
	Method         string `json:"method"`
	CSRFToken      string `json:"csrfToken"`
	Token          string `json:"token"`
	TokenExpiresIn int64  `json:"tokenExpiresIn"`
	IdleTimeout    int64  `json:"idleTimeout"`
	ClosedTimeout  int64  `json:"closedTimeout"`
	PingInterval   int64  `json:"pingInterval"`
}

func (s *Server) writeGuideSession(w http.ResponseWriter, r *http.Request, sess guide.Session) error {
	g := s.p.Guide
	jwt, exp, err := g.Token(r.Context(), sess)
	if err != nil {
		if fault.Is(fault.NotFound, err) { // the user or tenant was deleted
			return fault.E(fault.Unauthenticated, "the guide session's user no longer exists", err)
		}
		return err
	}
	tenant, err := s.p.Identity.Store().GetTenant(r.Context(), sess.TenantID)
	if err != nil {
		return fault.E(fault.Unauthenticated, "the guide session's tenant no longer exists", err)
	}
	var out guideSessionJSON
	out.User.ID, out.User.Name = sess.UserID.String(), sess.UserName
	out.Tenant.ID, out.Tenant.Code = tenant.ID, tenant.Code
	out.Method, out.CSRFToken, out.Token = sess.Method, sess.CSRFToken, jwt
	out.TokenExpiresIn = int64(exp.Sub(s.p.Clock().Now()) / time.Second)
	out.IdleTimeout = int64(g.IdleTimeout() / time.Second)
	out.ClosedTimeout = int64(g.ClosedTimeout() / time.Second)
	// The page pings often enough to count as open (OpenGrace) and to
	// notice the idle limit promptly.
	ping := min(15*time.Second, g.IdleTimeout()/4, g.OpenGrace()/3)
	out.PingInterval = max(1, int64(ping/time.Second))
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) guideSessionGet(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.p.Guide.Check(r.Context(), guideSessionID(r), false)
	if err != nil {
		return err
	}
	return s.writeGuideSession(w, r, sess)
}

// sameOrigin refuses a request whose Origin header names another site. A
// login needs it beyond SameSite cookies: a cross-site form could
// otherwise log the victim in as the attacker (login CSRF). JSON bodies
// already need a CORS preflight, which the server never grants.
func (s *Server) sameOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	if origin == scheme+r.Host || origin == s.opts.PublicURL {
		return nil
	}
	return fault.E(fault.Forbidden, "cross-origin request refused")
}

// guideLoginRequest is a password login ({name, password, tenant}) or a
// passkey login ({flowId, credential}: the flow of POST
// {base_url}/auth/passkeys/options, which named the tenant).
type guideLoginRequest struct {
	Name       string          `json:"name"`
	Password   string          `json:"password"`
	Tenant     string          `json:"tenant"`
	FlowID     string          `json:"flowId"`
	Credential json.RawMessage `json:"credential"`
	// The second step of a multi-factor login (API-mfa.md): the
	// password step's 403 gave the mfa_token.
	GrantType    string `json:"grant_type"`
	MFAToken     string `json:"mfa_token"`
	OTP          string `json:"otp"`
	RecoveryCode string `json:"recovery_code"`
}

func (s *Server) guideLogin(w http.ResponseWriter, r *http.Request) error {
	if err := s.sameOrigin(r); err != nil {
		return err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return fault.E(fault.Invalid, "Content-Type must be application/json")
	}
	var req guideLoginRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var (
		id   string
		sess guide.Session
		err  error
	)
	if req.GrantType != "" || req.MFAToken != "" {
		id, sess, err = s.p.Guide.LoginSecondStep(r.Context(), guide.SecondStep{GrantType: req.GrantType, Token: req.MFAToken, OTP: req.OTP,
			RecoveryCode: req.RecoveryCode, FlowID: req.FlowID, Credential: req.Credential, RemoteAddr: r.RemoteAddr}, guideSessionID(r))
	} else if req.FlowID != "" || len(req.Credential) > 0 {
		id, sess, err = s.p.Guide.LoginPasskey(r.Context(), req.FlowID, req.Credential, r.RemoteAddr, guideSessionID(r))
	} else {
		id, sess, err = s.p.Guide.Login(r.Context(), identity.LoginRequest{Name: req.Name, Password: req.Password, AuthDomain: req.Tenant, RemoteAddr: r.RemoteAddr}, guideSessionID(r))
	}
	if err != nil {
		return err
	}
	setGuideCookie(w, r, id, 0)
	return s.writeGuideSession(w, r, sess)
}

// guideCSRF checks the session and the X-CSRF-Token of a state-changing
// call made with the session cookie.
func (s *Server) guideCSRF(r *http.Request, activity bool) (guide.Session, error) {
	return s.p.Guide.Act(r.Context(), guideSessionID(r), r.Header.Get(csrfHeader), activity)
}

func (s *Server) guideLogout(w http.ResponseWriter, r *http.Request) error {
	reason := r.URL.Query().Get("reason")
	if reason != guide.LogoutByUser && reason != guide.LogoutIdle {
		return fault.E(fault.Invalid, fault.Field("reason"), "reason must be absent or idle")
	}
	if _, err := s.guideCSRF(r, false); err != nil {
		if fault.Is(fault.Unauthenticated, err) {
			setGuideCookie(w, r, "", -1)
		}
		return err
	}
	if err := s.p.Guide.Logout(r.Context(), guideSessionID(r), reason); err != nil {
		return err
	}
	setGuideCookie(w, r, "", -1)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type guideActivityRequest struct {
	Active *bool `json:"active"`
}

func (s *Server) guideActivity(w http.ResponseWriter, r *http.Request) error {
	var req guideActivityRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Active == nil {
		return fault.E(fault.Invalid, fault.Field("active"), "active is required: whether the user was active since the last ping")
	}
	if _, err := s.guideCSRF(r, *req.Active); err != nil {
		if fault.Is(fault.Unauthenticated, err) {
			setGuideCookie(w, r, "", -1)
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
