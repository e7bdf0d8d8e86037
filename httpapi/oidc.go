package httpapi

import (
	"crypto/rand"
	"embed"
	"html/template"
	"maps"
	"mime"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// The OpenID Provider (API.md, "Latchkey as an OpenID Provider"): one
// small handler per flow, each parsing the request and calling package
// oidc, which holds every protocol rule. The browser routes answer HTML
// (the sign-in page, or an error page for what must not redirect); the
// token and userinfo routes answer JSON in the OAuth error shape.

// Endpoint paths below {auth_url}.
const (
	authorizePath = "/oauth/v1/authorize"
	signInPath    = "/oauth/v1/sign-in"
	userinfoPath  = "/oauth/v1/userinfo"
	logoutPath    = "/oauth/v1/logout"
)

// The browser session cookie of the hosted sign-in page: __Host- on TLS
// (which needs Secure), HttpOnly, SameSite=Lax (the authorization request
// is a top-level navigation from the application's site, on which Strict
// cookies are withheld). Before a sign-in it holds an anonymous browser
// id, to which the form's CSRF token is bound.
const (
	oidcCookieTLS   = "__Host-latchkey-oidc"
	oidcCookiePlain = "latchkey-oidc"
)

//go:embed oidcui
var oidcUI embed.FS

var oidcPages = template.Must(template.ParseFS(oidcUI, "oidcui/*.html"))

func oidcCookieName(r *http.Request) string {
	if r.TLS != nil {
		return oidcCookieTLS
	}
	return oidcCookiePlain
}

func oidcBrowserID(r *http.Request) string {
	c, err := r.Cookie(oidcCookieName(r))
	if err != nil || len(c.Value) > 200 {
		return ""
	}
	return c.Value
}

func setOIDCCookie(w http.ResponseWriter, r *http.Request, id string) {
	http.SetCookie(w, &http.Cookie{Name: oidcCookieName(r), Value: id, Path: "/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
}

func (s *Server) registerOIDC() {
	page := routeOpts{style: stylePlatform, limit: 64 << 10, page: true}
	s.handle("GET", "/.well-known/openid-configuration", routeOpts{}, s.oidcDiscovery)
	s.handle("GET", s.opts.AuthURL+authorizePath, page, s.oidcAuthorize)
	s.handle("POST", s.opts.AuthURL+authorizePath, page, s.oidcAuthorizePost)
	s.handle("GET", s.opts.AuthURL+signInPath, page, s.oidcSignInPage)
	s.handle("POST", s.opts.AuthURL+signInPath, page, s.oidcSignIn)
	s.handle("GET", s.opts.AuthURL+logoutPath, page, s.oidcLogout)
	user := s.oauthToken(styleOAuth, identity.ScopeOpenID)
	user.name = "oidc-userinfo"
	s.handle("GET", s.opts.AuthURL+userinfoPath, user, s.oidcUserInfo)
	s.handle("POST", s.opts.AuthURL+userinfoPath, user, s.oidcUserInfo)
}

func (s *Server) oidcEndpoints() oidc.Endpoints {
	u := s.opts.PublicURL + s.opts.AuthURL
	return oidc.Endpoints{Authorization: u + authorizePath, Token: u + tokenPath, UserInfo: u + userinfoPath,
		JWKS: s.opts.PublicURL + "/.well-known/jwks.json", EndSession: u + logoutPath,
		Introspection: u + introspectPath, Revocation: u + revokePath, PAR: u + parPath, Device: u + deviceAuthorizationPath}
}

func (s *Server) oidcDiscovery(w http.ResponseWriter, r *http.Request) error {
	md := s.p.OIDC.Discovery(s.oidcEndpoints())
	maps.Copy(md, s.oauthMetadata())
	writeJSONCacheable(w, md)
	return nil
}

// pageHeaders are those of every page of the provider: never cached,
// never framed, scripts and styles only those carrying the page's nonce.
func pageHeaders(w http.ResponseWriter) (nonce string) {
	nonce = rand.Text()
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+"'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Type", "text/html; charset=utf-8")
	return nonce
}

// messagePage answers status with an HTML page: the error page of a
// request that must not redirect, or "signed out".
func (s *Server) messagePage(w http.ResponseWriter, status int, kind, title, msg string) {
	nonce := pageHeaders(w)
	w.WriteHeader(status)
	oidcPages.ExecuteTemplate(w, "message.html", map[string]string{"Nonce": nonce, "Kind": kind, "Title": title, "Message": msg})
}

// errorPage shows err as a page with its status, for the browser routes.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, err error) error {
	status := StatusOf(err)
	if status == 0 || status >= 500 {
		return err // logged and answered by the error table
	}
	s.messagePage(w, status, "error", "Sign-in error", messageOf(err, status))
	return nil
}

func (s *Server) oidcAuthorize(w http.ResponseWriter, r *http.Request) error {
	return s.authorize(w, r, r.URL.Query())
}

// oidcAuthorizePost is the authorization request sent as a form: OpenID
// Connect Core §3.1.2.1 has a provider take GET and POST alike, the
// parameters of a POST in its form-encoded body.
func (s *Server) oidcAuthorizePost(w http.ResponseWriter, r *http.Request) error {
	params, err := pageForm(r, "an authorization request")
	if err != nil {
		return s.errorPage(w, r, err)
	}
	return s.authorize(w, r, params)
}

// pageForm reads the form a browser posted to a page of the provider;
// what names it in the error of another Content-Type.
func pageForm(r *http.Request, what string) (url.Values, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return nil, fault.E(fault.Invalid, what+" must be posted as application/x-www-form-urlencoded")
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fault.E(fault.Invalid, "malformed form")
	}
	return form, nil
}

// authorize answers an authorization request: a redirect to the sign-in
// page, or back to the client (with a code, or an error it may see), or an
// error page when the request must not redirect.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, params url.Values) error {
	out, err := s.p.OIDC.Authorize(r.Context(), params, oidcBrowserID(r))
	if err != nil {
		return s.errorPage(w, r, err)
	}
	if out.IDPHint != "" && s.federationHinted(w, r, out.SignIn, out.IDPHint) {
		return nil
	}
	pageHeaders(w)
	if out.SignIn != "" {
		http.Redirect(w, r, s.opts.AuthURL+signInPath+"?request="+url.QueryEscape(out.SignIn), http.StatusFound)
		return nil
	}
	http.Redirect(w, r, out.Redirect, http.StatusFound)
	return nil
}

// signInView is what the sign-in template shows.
type signInView struct {
	Page              oidc.Page
	Nonce             string
	Action            string
	Error             string
	PasskeyOptionsURL string
}

func (s *Server) renderSignIn(w http.ResponseWriter, status int, pg oidc.Page, msg string) {
	nonce := pageHeaders(w)
	w.WriteHeader(status)
	oidcPages.ExecuteTemplate(w, "signin.html", signInView{Page: pg, Nonce: nonce, Action: s.opts.AuthURL + signInPath, Error: msg,
		PasskeyOptionsURL: s.opts.BaseURL + "/auth/passkeys/options"})
}

// browserID returns the browser's id, giving it one (and its cookie)
// when it has none, so that the form's CSRF token is bound to it.
func browserID(w http.ResponseWriter, r *http.Request) string {
	id := oidcBrowserID(r)
	if id == "" {
		id = oidc.NewBrowserID()
		setOIDCCookie(w, r, id)
	}
	return id
}

func (s *Server) oidcSignInPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if len(q["request"]) != 1 {
		return s.errorPage(w, r, fault.E(fault.Invalid, oidc.MsgRequestExpired))
	}
	pg, err := s.p.OIDC.SignInPage(r.Context(), q.Get("request"), browserID(w, r))
	if err != nil {
		return s.errorPage(w, r, err)
	}
	if pg.Second != nil {
		s.renderSecondStep(w, http.StatusOK, pg, pg.Second, nil)
		return nil
	}
	s.renderSignIn(w, http.StatusOK, pg, "")
	return nil
}

func (s *Server) oidcSignIn(w http.ResponseWriter, r *http.Request) error {
	form, err := pageForm(r, "the sign-in form")
	if err != nil {
		return s.errorPage(w, r, err)
	}
	for _, v := range form {
		if len(v) > 1 {
			return s.errorPage(w, r, fault.E(fault.Invalid, "a form field is repeated"))
		}
	}
	if form.Get("provider") != "" {
		return s.federationStart(w, r, form)
	}
	in := oidc.SignInRequest{Request: form.Get("request"), CSRFToken: form.Get("csrf_token"), BrowserID: oidcBrowserID(r),
		Username: form.Get("username"), Password: form.Get("password"), FlowID: form.Get("flowId"), RemoteAddr: r.RemoteAddr,
		MFAToken: form.Get("mfa_token"), OTP: form.Get("otp"), RecoveryCode: form.Get("recovery_code"), Saved: form.Get("saved") != ""}
	if c := form.Get("credential"); c != "" {
		in.Credential = []byte(c)
	}
	res, err := s.p.OIDC.SignIn(r.Context(), in)
	if res.Second != nil || res.Codes != nil {
		return s.answerSecondStep(w, r, in, res, err)
	}
	switch k := fault.KindOf(err); {
	case err == nil:
	case k == fault.Unauthenticated || k == fault.TooManyRequests || (k == fault.Invalid && fault.FieldOf(err) == "username"):
		// A refused credential: the page again, with the message.
		pg, perr := s.p.OIDC.SignInPage(r.Context(), in.Request, in.BrowserID)
		if perr != nil {
			return s.errorPage(w, r, perr)
		}
		if secs := retryAfter(fault.MessageOf(err)); secs != "" {
			w.Header().Set("Retry-After", secs)
		}
		s.renderSignIn(w, StatusOf(err), pg, fault.MessageOf(err))
		return nil
	default:
		return s.errorPage(w, r, err)
	}
	setOIDCCookie(w, r, res.SessionID)
	if u, err := s.p.OIDC.SessionUser(r.Context(), res.SessionID); err == nil && s.pendingConnect(w, r, res.SessionID, u, res.Outcome.Redirect) {
		return nil // the question of a pending upstream identity first
	}
	pageHeaders(w)
	if res.Outcome.Device != "" {
		// A sign-in of the user-code page: its confirmation comes next.
		http.Redirect(w, r, s.deviceConfirmURL(res.Outcome.Device), http.StatusSeeOther)
		return nil
	}
	http.Redirect(w, r, res.Outcome.Redirect, http.StatusSeeOther)
	return nil
}

func (s *Server) oidcLogout(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	for _, v := range q {
		if len(v) > 1 {
			return s.errorPage(w, r, fault.E(fault.Invalid, "a parameter is repeated"))
		}
	}
	to, err := s.p.OIDC.Logout(r.Context(), oidc.LogoutRequest{IDTokenHint: q.Get("id_token_hint"), PostLogoutRedirectURI: q.Get("post_logout_redirect_uri"),
		State: q.Get("state"), ClientID: q.Get("client_id"), SessionID: oidcBrowserID(r)})
	if err != nil {
		return s.errorPage(w, r, err)
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookieName(r), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	if to == "" {
		s.messagePage(w, http.StatusOK, "signed-out", "Signed out", "You are signed out.")
		return nil
	}
	pageHeaders(w)
	http.Redirect(w, r, to, http.StatusFound)
	return nil
}

func (s *Server) oidcUserInfo(w http.ResponseWriter, r *http.Request) error {
	info, err := s.p.OIDC.UserInfo(r.Context(), principal(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}
