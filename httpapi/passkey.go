package httpapi

import (
	"encoding/json"
	"net/http"
)

// registerPasskeys serves passkey sign-in (API.md, "Passkey sign-in"):
// a user's self-service registration under {base_url}/me/passkeys, and
// the sign-in options under {base_url}/auth/passkeys/options; the sign-in
// itself is grant_type passkey of {base_url}/auth/tokens/. Errors are
// area A's.
func (s *Server) registerPasskeys() {
	base := s.opts.BaseURL
	user := s.platformJWT()
	// An enrollment mfa_token may begin a passkey's registration too: the
	// passkey then completes the sign-in (grant_type mfa_passkey).
	s.handle("POST", base+"/me/passkeys/options", s.platformJWTOrEnrollment(), s.passkeyCreationOptions)
	s.handle("POST", base+"/me/passkeys", user.creating(), s.registerPasskey)
	s.handle("GET", base+"/me/passkeys", user, s.listPasskeys)
	s.handle("DELETE", base+"/me/passkeys/{authenticatorId}", user, s.deletePasskey)
	s.handle("POST", base+"/auth/passkeys/options", routeOpts{style: stylePlatform}, s.passkeyRequestOptions)
}

func (s *Server) passkeyCreationOptions(w http.ResponseWriter, r *http.Request) error {
	var req struct{}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if enrollmentToken(r) == "" {
		// Adding a factor: a step-up when the user has one, else a
		// recent sign-in (API-mfa.md).
		if err := s.p.MFA.CheckAddFactor(r.Context(), principal(r)); err != nil {
			return err
		}
	}
	opts, err := s.p.Authenticators.BeginPasskeyRegistration(r.Context(), principal(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, opts)
	return nil
}

// passkeyRegistration is the body of POST {base_url}/me/passkeys.
type passkeyRegistration struct {
	FlowID       string          `json:"flowId"`
	Credential   json.RawMessage `json:"credential"`
	FriendlyName string          `json:"friendlyName"`
}

func (s *Server) registerPasskey(w http.ResponseWriter, r *http.Request) error {
	var req passkeyRegistration
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	a, err := s.p.Authenticators.FinishPasskeyRegistration(r.Context(), principal(r), req.FlowID, req.Credential, req.FriendlyName)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toAuthenticatorJSON(a))
	return nil
}

func (s *Server) listPasskeys(w http.ResponseWriter, r *http.Request) error {
	items, err := s.p.Authenticators.ListPasskeys(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := make([]authenticatorJSON, len(items))
	for i, a := range items {
		out[i] = toAuthenticatorJSON(a)
	}
	writeJSON(w, http.StatusOK, map[string]any{"resources": out})
	return nil
}

func (s *Server) deletePasskey(w http.ResponseWriter, r *http.Request) error {
	if err := s.p.Authenticators.DeletePasskey(r.Context(), principal(r), r.PathValue("authenticatorId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// passkeyOptionsRequest is the body of POST {base_url}/auth/passkeys/options:
// {auth_domain, name?} for a passkey sign-in, or {mfa_token} for a FIDO
// second factor after a password (API-mfa.md).
type passkeyOptionsRequest struct {
	AuthDomain string `json:"auth_domain"`
	Name       string `json:"name"`
	MFAToken   string `json:"mfa_token"`
}

func (s *Server) passkeyRequestOptions(w http.ResponseWriter, r *http.Request) error {
	var req passkeyOptionsRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.MFAToken != "" {
		opts, err := s.p.MFA.BeginPasskey(r.Context(), req.MFAToken)
		if err != nil {
			return err
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, opts)
		return nil
	}
	opts, err := s.p.Authenticators.BeginPasskeyLogin(r.Context(), req.AuthDomain, req.Name)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, opts)
	return nil
}
