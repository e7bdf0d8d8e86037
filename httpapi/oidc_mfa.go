package httpapi

import (
	"html/template"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/oidc"
)

// The hosted page's second step (API-mfa.md, "The hosted sign-in page"):
// "Two-step verification" after a correct password, "Set up two-step
// verification" for a grace enrolment, and the recovery codes of a first
// factor shown once. The step's state is sealed in the page and bound to
// the browser's cookie (package oidc).

// secondStepView is what mfa.html shows.
type secondStepView struct {
	Page    oidc.Page
	Step    *oidc.SecondStep
	Codes   []string
	Nonce   string
	Action  string
	Restart string
	Error   string
	QR      template.URL
}

func (s *Server) renderSecondStep(w http.ResponseWriter, status int, pg oidc.Page, step *oidc.SecondStep, codes []string) {
	nonce := pageHeaders(w)
	v := secondStepView{Page: pg, Step: step, Codes: codes, Nonce: nonce, Action: s.opts.AuthURL + signInPath,
		Restart: s.opts.AuthURL + signInPath + "?request=" + url.QueryEscape(pg.Request)}
	if step == nil {
		v.Step = &oidc.SecondStep{}
	}
	v.Error = v.Step.Error
	if v.Step.QRCode != "" {
		// The QR code is a data: image, allowed on this page only.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+"'; img-src data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'")
		v.QR = template.URL(v.Step.QRCode) // made by the server: a PNG data URL
	}
	w.WriteHeader(status)
	oidcPages.ExecuteTemplate(w, "mfa.html", v)
}

// answerSecondStep answers a post that led to, or was, a second step:
// the step's page again (its status the refusal's: 401 "Invalid code.",
// 429 with Retry-After, 400), or the recovery codes of a new first
// factor (the session's cookie is set: "I have saved these codes"
// completes the request with it).
func (s *Server) answerSecondStep(w http.ResponseWriter, r *http.Request, in oidc.SignInRequest, res oidc.SignInResult, err error) error {
	pg, perr := s.p.OIDC.SignInPage(r.Context(), in.Request, in.BrowserID)
	if perr != nil {
		return s.errorPage(w, r, perr)
	}
	if res.Codes != nil {
		setOIDCCookie(w, r, res.SessionID)
		pg.CSRFToken = s.p.OIDC.CSRFToken(res.SessionID)
		s.renderSecondStep(w, http.StatusOK, pg, nil, res.Codes)
		return nil
	}
	status := http.StatusOK
	if err != nil {
		if status = StatusOf(err); status == 0 || status >= 500 {
			return err
		}
		if secs := retryAfter(res.Second.Error); secs != "" {
			w.Header().Set("Retry-After", secs)
		}
	}
	s.renderSecondStep(w, status, pg, res.Second, nil)
	return nil
}
