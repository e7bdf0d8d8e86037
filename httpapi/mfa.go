package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/mfa"
)

// Multi-factor sign-in and step-up (API-mfa.md): a user's own factors
// under {base_url}/me/mfa, an administrator's view and reset of a user's,
// and the second step of the two-step login (grant types mfa_otp,
// mfa_recovery_code and mfa_passkey of {base_url}/auth/tokens/, in
// platform.go). Errors are area A's, with the codes and fields of
// API-mfa.md.

func (s *Server) registerMFA() {
	base := s.opts.BaseURL
	user := s.platformJWT()
	s.handle("GET", base+"/me/mfa", user, s.mfaFactors)
	s.handle("POST", base+"/me/mfa/totp", s.platformJWTOrEnrollment(), s.createTOTP)
	s.handle("POST", base+"/me/mfa/totp/{id}/confirm", user, s.confirmTOTP)
	s.handle("DELETE", base+"/me/mfa/totp/{id}", user, s.deleteTOTP)
	s.handle("POST", base+"/me/mfa/recovery-codes", user, s.generateRecoveryCodes)
	s.handle("GET", base+"/admin/tenants/{tenantId}/users/{userId}/mfa", user, s.adminUserFactors)
	s.handle("DELETE", base+"/admin/tenants/{tenantId}/users/{userId}/mfa", user, s.adminResetFactors)
}

type enrollingKey struct{}

// enrollmentToken returns the enrollment mfa_token a request was
// authenticated with by platformJWTOrEnrollment, or "".
func enrollmentToken(r *http.Request) string {
	tok, _ := r.Context().Value(enrollingKey{}).(string)
	return tok
}

// platformJWTOrEnrollment authenticates a user's platform JWT, or an
// enrollment mfa_token (MFA_ENROLLMENT_REQUIRED's): the bearer of the two
// routes that enrol a first factor during a sign-in, and of no other.
func (s *Server) platformJWTOrEnrollment() routeOpts {
	return routeOpts{style: stylePlatform, name: "platform-jwt-or-mfa-enrollment", auth: func(r *http.Request) (identity.Principal, error) {
		if tok, scheme, ok := credential(r); ok && scheme == identity.SchemeBearer && strings.HasPrefix(tok, mfa.TokenPrefix) {
			p, err := s.p.MFA.EnrollingPrincipal(r.Context(), tok)
			if err != nil {
				return p, err
			}
			*r = *r.WithContext(context.WithValue(r.Context(), enrollingKey{}, tok))
			return p, nil
		}
		p, _, err := s.tokenAuth(r, identity.PlatformToken)
		return p, err
	}}
}

// totpDeviceJSON is a TOTP device as the routes show it.
type totpDeviceJSON struct {
	ID                    string     `json:"id"`
	Type                  string     `json:"type"`
	FriendlyName          string     `json:"friendlyName"`
	State                 string     `json:"state"`
	CreatedDateTime       time.Time  `json:"createdDateTime"`
	LastUsedAuthnDateTime *time.Time `json:"lastUsedAuthnDateTime"`
}

func toDeviceJSON(d mfa.Device) totpDeviceJSON {
	return totpDeviceJSON{ID: d.ID, Type: "TOTP", FriendlyName: d.FriendlyName, State: d.State, CreatedDateTime: d.CreatedAt,
		LastUsedAuthnDateTime: d.LastUsedAt}
}

func (s *Server) mfaFactors(w http.ResponseWriter, r *http.Request) error {
	o, err := s.p.MFA.Factors(r.Context(), principal(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, overviewJSON(o))
	return nil
}

func overviewJSON(o mfa.Overview) map[string]any {
	devices := make([]totpDeviceJSON, len(o.TOTP))
	for i, d := range o.TOTP {
		devices[i] = toDeviceJSON(d)
	}
	return map[string]any{"policy": o.Policy, "totp": devices, "passkeys": o.Passkeys, "recoveryCodes": o.RecoveryCodes, "otpLocked": o.OTPLocked}
}

// totpCreateRequest is the body of POST {base_url}/me/mfa/totp.
type totpCreateRequest struct {
	FriendlyName string `json:"friendlyName"`
}

func (s *Server) createTOTP(w http.ResponseWriter, r *http.Request) error {
	var req totpCreateRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var (
		e   mfa.Enrollment
		err error
	)
	if tok := enrollmentToken(r); tok != "" {
		e, err = s.p.MFA.CreateTOTPEnrolling(r.Context(), tok, req.FriendlyName)
	} else {
		e, err = s.p.MFA.CreateTOTP(r.Context(), principal(r), req.FriendlyName)
	}
	if err != nil {
		return err
	}
	// The secret is shown in this answer only.
	w.Header().Set("Cache-Control", "no-store")
	d := toDeviceJSON(e.Device)
	writeJSON(w, http.StatusCreated, map[string]any{"id": d.ID, "type": d.Type, "friendlyName": d.FriendlyName, "state": d.State,
		"createdDateTime": d.CreatedDateTime, "lastUsedAuthnDateTime": d.LastUsedAuthnDateTime,
		"secret": e.Secret, "otpauthUri": e.OTPAuthURI, "qrCode": e.QRCode, "expiresDateTime": e.ExpiresAt})
	return nil
}

// totpConfirmRequest is the body of POST {base_url}/me/mfa/totp/{id}/confirm.
type totpConfirmRequest struct {
	OTP string `json:"otp"`
}

func (s *Server) confirmTOTP(w http.ResponseWriter, r *http.Request) error {
	var req totpConfirmRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c, err := s.p.MFA.ConfirmTOTP(r.Context(), principal(r), r.PathValue("id"), req.OTP)
	if err != nil {
		return err
	}
	d := toDeviceJSON(c.Device)
	body := map[string]any{"id": d.ID, "type": d.Type, "friendlyName": d.FriendlyName, "state": d.State,
		"createdDateTime": d.CreatedDateTime, "lastUsedAuthnDateTime": d.LastUsedAuthnDateTime}
	if c.RecoveryCodes != nil {
		w.Header().Set("Cache-Control", "no-store")
		body["recoveryCodes"] = c.RecoveryCodes
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) deleteTOTP(w http.ResponseWriter, r *http.Request) error {
	if err := s.p.MFA.DeleteTOTP(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) generateRecoveryCodes(w http.ResponseWriter, r *http.Request) error {
	var req struct{}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	set, err := s.p.MFA.GenerateRecoveryCodes(r.Context(), principal(r))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, map[string]any{"codes": set.Codes, "createdDateTime": set.CreatedAt})
	return nil
}

func (s *Server) adminUserFactors(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	o, err := s.p.MFA.UserFactors(r.Context(), principal(r), id, r.PathValue("userId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, overviewJSON(o))
	return nil
}

func (s *Server) adminResetFactors(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	passkeys := false
	if v := r.URL.Query()["passkeys"]; len(v) > 0 {
		if passkeys, err = strconv.ParseBool(v[0]); err != nil || len(v) > 1 {
			return fault.E(fault.Invalid, fault.Field("passkeys"), "passkeys must be true or false")
		}
	}
	if err := s.p.MFA.ResetUser(r.Context(), principal(r), id, r.PathValue("userId"), passkeys); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// secondStep is the second step of a login (grant types mfa_otp,
// mfa_recovery_code, mfa_passkey of POST {base_url}/auth/tokens/).
func (s *Server) secondStep(r *http.Request, req loginRequest) (identity.TokenResponse, error) {
	return s.p.MFA.SignIn(r.Context(), mfa.Step{GrantType: req.GrantType, Token: req.MFAToken, OTP: req.OTP, RecoveryCode: req.RecoveryCode,
		FlowID: req.FlowID, Credential: req.Credential, RemoteAddr: r.RemoteAddr})
}

// fieldsError is an error that carries body fields beside area A's
// {code, codeDesc, message} (mfa.Refusal: mfa_token, factors, ...).
type fieldsError interface {
	error
	Fields() map[string]any
}
