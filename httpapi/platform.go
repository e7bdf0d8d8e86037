package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/mfa"
)

func (s *Server) registerPlatform() {
	base := s.opts.BaseURL
	public := routeOpts{style: stylePlatform}
	s.handle("POST", base+"/auth/tokens/{$}", public, s.login)
	s.handle("POST", base+"/auth/tokens", public, s.login)

	admin := s.platformJWT()
	s.handle("POST", base+"/admin/tenants", admin.creating(), s.createTenant)
	s.handle("GET", base+"/admin/tenants/{tenantId}", admin, s.getTenant)
	s.handle("PATCH", base+"/admin/tenants/{tenantId}/settings", admin, s.updateSettings)
	s.handle("POST", base+"/admin/tenants/{tenantId}/users", admin.creating(), s.createUser)
	s.handle("POST", base+"/admin/tenants/{tenantId}/oauth-clients", admin.creating(), s.createOAuthClient)
	s.handle("POST", base+"/admin/tenants/{tenantId}/api-keys", admin.creating(), s.createAPIKey)
	s.registerAdminLists()
	s.registerHashKeys()
	s.registerImport()
}

type loginRequest struct {
	Name         string `json:"name"`
	Password     string `json:"password"`
	AuthDomain   string `json:"auth_domain"`
	GrantType    string `json:"grant_type"`
	ClientID     string `json:"client_id"`
	RefreshToken string `json:"refresh_token"`
	// FlowID and Credential are those of grant_type passkey (and
	// mfa_passkey).
	FlowID     string          `json:"flowId"`
	Credential json.RawMessage `json:"credential"`
	// The second step of a multi-factor login (API-mfa.md).
	MFAToken     string `json:"mfa_token"`
	OTP          string `json:"otp"`
	RecoveryCode string `json:"recovery_code"`
}

// Grant types of POST {base_url}/auth/tokens/.
const (
	grantPassword         = "password"
	grantClientCredential = "client_credential"
	grantRefreshToken     = "refresh_token"
	grantPasskey          = "passkey"
)

func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	var req loginRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var (
		resp  identity.TokenResponse
		err   error
		grant = req.GrantType
	)
	switch req.GrantType {
	case "", grantPassword:
		grant = grantPassword
		resp, err = s.p.Identity.Login(r.Context(), identity.LoginRequest{Name: req.Name, Password: req.Password, AuthDomain: req.AuthDomain, RemoteAddr: r.RemoteAddr})
	case grantRefreshToken:
		resp, err = s.p.Identity.Refresh(r.Context(), req.RefreshToken)
	case grantClientCredential:
		resp, err = s.clientLogin(r, req.ClientID)
	case grantPasskey:
		resp, err = s.p.Authenticators.PasskeyLogin(r.Context(), authenticator.PasskeyLoginRequest{FlowID: req.FlowID, Credential: req.Credential, RemoteAddr: r.RemoteAddr})
	case mfa.GrantOTP, mfa.GrantRecoveryCode, mfa.GrantPasskey:
		resp, err = s.secondStep(r, req)
	default:
		grant = "other" // a label value the caller cannot choose
		err = fault.E(fault.Invalid, fault.Field("grant_type"), "grant_type must be client_credential, refresh_token, passkey, mfa_otp, mfa_recovery_code or mfa_passkey, or absent for a password login")
	}
	if err != nil {
		s.loginFailed(grant, err)
		return err
	}
	s.p.Metrics().TokenIssued(grant)
	if resp.RecoveryCodes != nil {
		w.Header().Set("Cache-Control", "no-store")
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

type tenantJSON struct {
	ID        string             `json:"id"`
	Code      string             `json:"code"`
	Name      string             `json:"name"`
	Settings  *identity.Settings `json:"settings,omitempty"`
	CreatedAt time.Time          `json:"createdAt"`
}

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name string `json:"name"`
		Code string `json:"code"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	t, err := s.p.CreateTenant(r.Context(), principal(r), req.Name, req.Code)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, tenantJSON{ID: t.ID, Code: t.Code, Name: t.Name, CreatedAt: t.CreatedAt})
	return nil
}

// tenantID returns the {tenantId} path value; a malformed id cannot name a
// tenant, so it is answered like an unknown one.
func tenantID(r *http.Request) (string, error) {
	id := r.PathValue("tenantId")
	if !identity.IsGUID(id) {
		return "", fault.E(fault.NotFound, "tenant not found")
	}
	return id, nil
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	t, err := s.p.Identity.GetTenant(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tenantJSON{ID: t.ID, Code: t.Code, Name: t.Name, Settings: &t.Settings, CreatedAt: t.CreatedAt})
	return nil
}

func (s *Server) updateSettings(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var patch identity.SettingsPatch
	if err := decodeJSON(r, &patch); err != nil {
		return err
	}
	t, err := s.p.Identity.UpdateSettings(r.Context(), principal(r), id, patch)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tenantJSON{ID: t.ID, Code: t.Code, Name: t.Name, Settings: &t.Settings, CreatedAt: t.CreatedAt})
	return nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var req struct {
		Name     string   `json:"name"`
		Password string   `json:"password"`
		Roles    []string `json:"roles"`
		profileJSON
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	u, err := s.p.CreateUserWith(r.Context(), principal(r), id, identity.NewUser{Name: req.Name, Password: req.Password, Roles: req.Roles, Profile: req.profile()})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, userOf(u))
	return nil
}

func (s *Server) createOAuthClient(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var req oauthClientBody
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c, secret, err := s.p.Identity.RegisterOAuthClient(r.Context(), principal(r), id, req.registration())
	if err != nil {
		return err
	}
	body := oauthClientOf(c)
	if secret != "" {
		body["client_secret"] = secret // shown this once; a client without a secret method has none
	}
	writeJSON(w, http.StatusCreated, body)
	return nil
}

func (s *Server) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var req struct {
		Name   string   `json:"name"`
		UserID string   `json:"userId"`
		Areas  []string `json:"areas"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	k, key, err := s.p.Identity.CreateAPIKey(r.Context(), principal(r), id, req.Name, req.UserID, req.Areas)
	if err != nil {
		return err
	}
	body := map[string]any{"id": k.ID, "key": key, "name": k.Name, "areas": k.Areas, "createdAt": k.CreatedAt}
	if k.UserID != nil {
		body["userId"] = k.UserID.String()
	}
	writeJSON(w, http.StatusCreated, body)
	return nil
}
