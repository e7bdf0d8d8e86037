package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// The device authorization grant (RFC 8628, API-fapi.md): the device
// authorization endpoint, and the user-code page of the hosted sign-in.
// The device's polls are the token endpoint's (oidcToken).

// Endpoint paths below {auth_url}.
const (
	deviceAuthorizationPath = "/oauth/v1/device_authorization"
	devicePath              = "/oauth/v1/device"
)

// maxDeviceBody bounds a device authorization request.
const maxDeviceBody = 16 << 10

func (s *Server) registerDevice() {
	s.handle("POST", s.opts.AuthURL+deviceAuthorizationPath, routeOpts{style: styleOAuth, limit: 64 << 10, name: "oauth-client"}, s.deviceAuthorization)
	page := routeOpts{style: stylePlatform, limit: 64 << 10, page: true}
	s.handle("GET", s.opts.AuthURL+devicePath, page, s.devicePage)
	s.handle("POST", s.opts.AuthURL+devicePath, page, s.devicePost)
}

// deviceAuthorization is RFC 8628 §3.1: the client, authenticated as at
// the token endpoint, gets a device code and a user code.
func (s *Server) deviceAuthorization(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxDeviceBody+1))
	if err != nil {
		return err
	}
	if len(body) > maxDeviceBody {
		return fault.E(fault.Invalid, "the request is larger than 16 KiB", identity.ErrInvalidRequest)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	form, auth, err := s.oauthForm(r, "resource")
	if err != nil {
		return err
	}
	out, err := s.p.OIDC.DeviceAuthorize(r.Context(), oidc.DeviceAuthRequest{Auth: auth, Scope: form.Get("scope"), Resources: form["resource"],
		VerificationURI: s.opts.PublicURL + s.opts.AuthURL + devicePath})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deviceView is what the user-code template shows: the form (Step
// "enter"), the confirmation ("confirm") or the end ("done").
type deviceView struct {
	Nonce    string
	Action   string
	Step     string
	Title    string
	UserCode string
	CSRF     string
	Error    string
	Confirm  *oidc.DeviceConfirm
	Message  string
}

func (s *Server) renderDevice(w http.ResponseWriter, status int, v deviceView) {
	v.Nonce = pageHeaders(w)
	v.Action = s.opts.AuthURL + devicePath
	if v.Title == "" {
		v.Title = oidc.MsgDeviceEnter
	}
	w.WriteHeader(status)
	oidcPages.ExecuteTemplate(w, "device.html", v)
}

// devicePage is GET /oauth/v1/device: the form, its input pre-filled by
// verification_uri_complete's user_code (never submitted for the user),
// or, with request, the confirmation a sign-in returns to.
func (s *Server) devicePage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	for _, v := range q {
		if len(v) > 1 {
			return s.errorPage(w, r, fault.E(fault.Invalid, "a parameter is repeated"))
		}
	}
	id := browserID(w, r)
	if q.Has("request") {
		step, err := s.p.OIDC.DeviceConfirmPage(r.Context(), q.Get("request"), id)
		return s.deviceStep(w, r, id, step, err)
	}
	code := q.Get("user_code")
	if len(code) > 64 {
		code = ""
	}
	s.renderDevice(w, http.StatusOK, deviceView{Step: "enter", UserCode: code, CSRF: s.p.OIDC.CSRFToken(id)})
	return nil
}

// devicePost is the form's Continue (user_code) or the confirmation's
// Allow or Deny (decision).
func (s *Server) devicePost(w http.ResponseWriter, r *http.Request) error {
	form, err := pageForm(r, "the device form")
	if err != nil {
		return s.errorPage(w, r, err)
	}
	for _, v := range form {
		if len(v) > 1 {
			return s.errorPage(w, r, fault.E(fault.Invalid, "a form field is repeated"))
		}
	}
	id := oidcBrowserID(r)
	if form.Has("decision") {
		d := form.Get("decision")
		if d != "allow" && d != "deny" {
			return s.errorPage(w, r, fault.E(fault.Invalid, "decision must be allow or deny"))
		}
		step, err := s.p.OIDC.DeviceDecide(r.Context(), oidc.DeviceAnswer{Request: form.Get("request"), CSRFToken: form.Get("csrf_token"),
			BrowserID: id, Allow: d == "allow", RemoteAddr: r.RemoteAddr})
		if err == nil && step.SignIn == "" && step.Confirm == nil {
			msg := oidc.MsgDeviceConnected
			if d == "deny" {
				msg = oidc.MsgDeviceDenied
			}
			s.renderDevice(w, http.StatusOK, deviceView{Step: "done", Title: msg, Message: msg})
			return nil
		}
		return s.deviceStep(w, r, id, step, err)
	}
	step, err := s.p.OIDC.DeviceEnter(r.Context(), oidc.DeviceEntry{UserCode: form.Get("user_code"), CSRFToken: form.Get("csrf_token"),
		BrowserID: id, RemoteAddr: r.RemoteAddr})
	if err != nil && fault.Is(fault.Invalid, err) && fault.FieldOf(err) == "user_code" {
		// A wrong code: the form again, with the message (200).
		s.renderDevice(w, http.StatusOK, deviceView{Step: "enter", UserCode: form.Get("user_code"), CSRF: s.p.OIDC.CSRFToken(browserID(w, r)),
			Error: fault.MessageOf(err)})
		return nil
	}
	if fault.Is(fault.TooManyRequests, err) {
		if secs := retryAfter(fault.MessageOf(err)); secs != "" {
			w.Header().Set("Retry-After", secs)
		}
		s.renderDevice(w, http.StatusTooManyRequests, deviceView{Step: "enter", CSRF: s.p.OIDC.CSRFToken(browserID(w, r)), Error: fault.MessageOf(err)})
		return nil
	}
	return s.deviceStep(w, r, id, step, err)
}

// deviceStep answers a step of the user-code page: the sign-in page, the
// confirmation, the form with MsgDeviceInvalid, or an error page.
func (s *Server) deviceStep(w http.ResponseWriter, r *http.Request, id string, step oidc.DeviceStep, err error) error {
	switch {
	case err != nil && fault.Is(fault.Invalid, err) && fault.FieldOf(err) == "user_code":
		s.renderDevice(w, http.StatusOK, deviceView{Step: "enter", CSRF: s.p.OIDC.CSRFToken(browserID(w, r)), Error: fault.MessageOf(err)})
		return nil
	case err != nil:
		return s.errorPage(w, r, err)
	case step.SignIn != "":
		pageHeaders(w)
		http.Redirect(w, r, s.opts.AuthURL+signInPath+"?request="+url.QueryEscape(step.SignIn), http.StatusSeeOther)
		return nil
	case step.Confirm != nil:
		s.renderDevice(w, http.StatusOK, deviceView{Step: "confirm", Title: "Connect a device", Confirm: step.Confirm,
			Message: step.Confirm.ClientName + " wants to sign in as " + step.Confirm.UserName + " with " + strings.Join(step.Confirm.Scopes, ", ") + ". " + oidc.MsgDeviceWarning})
		return nil
	}
	return s.errorPage(w, r, fault.E(fault.Invalid, oidc.MsgRequestExpired))
}

// deviceConfirmURL is the user-code page's confirmation of a sealed
// request, where a sign-in of the page returns.
func (s *Server) deviceConfirmURL(sealed string) string {
	return s.opts.AuthURL + devicePath + "?request=" + url.QueryEscape(sealed)
}
