package authenticator

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Passkeys: a user registers a discoverable credential for themself
// (self-service, with the platform JWT of a login) and later signs in
// with it instead of a password. The ceremonies use the JSON forms of
// WebAuthn Level 3 and go-webauthn's parsing and verification; the
// credentials are ordinary area C authenticators (provenance inline), so
// the area C routes, events and audit see them, and the rules of area C
// (states, counter regressions locking) apply to them unchanged.

// ProvenanceSelf is what stores before this version kept for a passkey
// a user registered themself; such rows read as ProvenanceInline.
//
// Deprecated: a passkey is added in the service, which the
// specification's FIDO metadata calls inline (its provenance is imported
// or inline, nothing else), so passkeys are stored with ProvenanceInline.
const ProvenanceSelf = "self"

// Ceremonies of the passkey flows (Challenge.Ceremony). They differ from
// the area C ceremonies, so a challenge of one kind can never answer the
// other.
const (
	CeremonyPasskeyCreate = "passkey.create"
	CeremonyPasskeyGet    = "passkey.get"
)

// Messages of the passkey routes (area A's error body).
const (
	MsgNotAUser          = "Only a user signed in with a platform JWT has passkeys."
	MsgFlowRequired      = "flowId is required."
	MsgCredentialMissing = "credential is required."
	MsgFlowUnknown       = "The flow is unknown, was already used or has expired."
	MsgPasskeyRefused    = "The passkey sign-in was refused."
	MsgSignInUnavailable = "Passkey sign-in is not configured."
)

// Logins is identity's side of a passkey sign-in: tenant resolution, the
// login throttle and token issuance, so that a passkey login is throttled,
// audited and answered exactly as a password login
// (identity.Service implements it).
type Logins interface {
	ResolveTenant(ctx context.Context, authDomain string) (identity.Tenant, error)
	LoginAllowed(ctx context.Context, t identity.Tenant, name string, meta map[string]any) error
	LoginFailed(ctx context.Context, t identity.Tenant, name string, err error, meta map[string]any) error
	LoginVerified(t identity.Tenant, name string)
	LoginSucceeded(ctx context.Context, t identity.Tenant, u identity.User, a identity.Authn, meta map[string]any) (identity.TokenResponse, error)
}

// PasskeyCreation answers POST /api/v1/me/passkeys/options: the flow to
// name when finishing, and the PublicKeyCredentialCreationOptionsJSON for
// navigator.credentials.create() (PublicKeyCredential.parseCreationOptionsFromJSON).
type PasskeyCreation struct {
	FlowID    string                                      `json:"flowId"`
	PublicKey protocol.PublicKeyCredentialCreationOptions `json:"publicKey"`
}

// PasskeyRequestOptions is PublicKeyCredentialRequestOptionsJSON.
// allowCredentials is always present (go-webauthn's type omits an empty
// list), so every answer of the sign-in options route has one shape.
type PasskeyRequestOptions struct {
	Challenge        protocol.URLEncodedBase64       `json:"challenge"`
	Timeout          int64                           `json:"timeout"`
	RPID             string                          `json:"rpId"`
	AllowCredentials []protocol.CredentialDescriptor `json:"allowCredentials"`
	UserVerification string                          `json:"userVerification"`
}

// PasskeyRequest answers POST /api/v1/auth/passkeys/options.
type PasskeyRequest struct {
	FlowID    string                `json:"flowId"`
	PublicKey PasskeyRequestOptions `json:"publicKey"`
}

// flowID names a passkey flow: the tenant code and the challenge. The
// sign-in's token request carries no auth_domain, so the flow must name
// its tenant; the challenge is in the options anyway, and a flow is
// useless without the credential that signs it.
func flowID(tenantCode, challenge string) string { return tenantCode + "." + challenge }

func splitFlowID(id string) (code, challenge string, ok bool) {
	code, challenge, ok = strings.Cut(id, ".")
	return code, challenge, ok && code != "" && challenge != "" && len(id) <= 200
}

// self resolves the calling user of a /me route: only a user's platform
// JWT qualifies (fault.Forbidden otherwise).
func (s *Service) self(ctx context.Context, p identity.Principal) (target, Ref, error) {
	if p.Kind != identity.KindUser || p.UserID == "" || p.TenantCode == "" {
		return target{}, Ref{}, fault.E(fault.Forbidden, MsgNotAUser)
	}
	ref := Ref{TenantCode: p.TenantCode, UserID: p.UserID}
	t, err := s.resolve(ctx, p, ref, MsgUserIDFormat)
	if fault.Is(fault.NotFound, err) {
		// The token outlived its user or tenant.
		err = fault.E(fault.Unauthenticated, "The user of this token no longer exists.", err)
	}
	return t, ref, err
}

// BeginPasskeyRegistration issues the creation options of a passkey for
// the calling user: a flow valid ChallengeTTL and usable once, the
// tenant's RP, a discoverable credential (residentKey required) with user
// verification required, and the user's credentials in excludeCredentials
// so an authenticator already registered is not registered twice.
func (s *Service) BeginPasskeyRegistration(ctx context.Context, p identity.Principal) (PasskeyCreation, error) {
	meta := map[string]any{"passkey": true}
	t, _, err := s.self(ctx, p)
	if err != nil {
		return PasskeyCreation{}, s.record(ctx, p, &t, ActionAttestationOption, err, meta)
	}
	meta["user"] = map[string]any{"id": t.user.ID.String()}
	out, err := s.beginPasskeyRegistration(ctx, t)
	return out, s.record(ctx, p, &t, ActionAttestationOption, err, meta)
}

func (s *Service) beginPasskeyRegistration(ctx context.Context, t target) (PasskeyCreation, error) {
	items, _, err := s.cfg.Store.ListAuthenticators(ctx, t.tenant.ID, t.user.ID, 0, maxListedCredentials)
	if err != nil {
		return PasskeyCreation{}, err
	}
	exclude := make([]protocol.CredentialDescriptor, 0, len(items))
	for _, a := range items {
		if id, err := base64.RawURLEncoding.DecodeString(a.ID); err == nil {
			exclude = append(exclude, protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: id})
		}
	}
	c, err := s.newChallenge(ctx, t, CeremonyPasskeyCreate, UVRequired)
	if err != nil {
		return PasskeyCreation{}, err
	}
	challenge, _ := base64.RawURLEncoding.DecodeString(c.Value)
	rp := t.tenant.Settings.WebAuthn
	return PasskeyCreation{FlowID: flowID(t.tenant.Code, c.Value), PublicKey: protocol.PublicKeyCredentialCreationOptions{
		RelyingParty: protocol.RelyingPartyEntity{ID: rp.RPID, CredentialEntity: protocol.CredentialEntity{Name: t.tenant.Name}},
		User: protocol.UserEntity{ID: protocol.URLEncodedBase64(bytes.Clone(t.user.ID[:])),
			CredentialEntity: protocol.CredentialEntity{Name: t.user.Name}, DisplayName: t.user.Name},
		Challenge:             challenge,
		Parameters:            credParams,
		Timeout:               int(s.cfg.ChallengeTTL.Milliseconds()),
		CredentialExcludeList: exclude,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification:   protocol.VerificationRequired,
		},
		Attestation: protocol.PreferNoAttestation,
	}}, nil
}

// FinishPasskeyRegistration verifies the PublicKeyCredential (toJSON())
// answering a flow of BeginPasskeyRegistration of the same user, and
// stores the credential as an active authenticator with provenance self.
// The flow is taken by the first attempt, whether it verifies or not; an
// unknown, used, expired or other user's flow is fault.Invalid, as is a
// credential that does not verify; a credential already in the tenant is
// fault.Conflict.
func (s *Service) FinishPasskeyRegistration(ctx context.Context, p identity.Principal, flow string, credential []byte, friendlyName string) (Authenticator, error) {
	meta := map[string]any{"passkey": true}
	t, _, err := s.self(ctx, p)
	if err != nil {
		return Authenticator{}, s.record(ctx, p, &t, ActionRegister, err, meta)
	}
	a, recorded, err := s.finishPasskeyRegistration(ctx, t, flow, credential, friendlyName, meta)
	return s.created(ctx, p, &t, ActionRegister, a, recorded, err, meta)
}

func (s *Service) finishPasskeyRegistration(ctx context.Context, t target, flow string, credential []byte, friendlyName string, meta map[string]any) (Authenticator, bool, error) {
	if strings.TrimSpace(flow) == "" {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field("flowId"), MsgFlowRequired)
	}
	if len(bytes.TrimSpace(credential)) == 0 || string(bytes.TrimSpace(credential)) == "null" {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field("credential"), MsgCredentialMissing)
	}
	if err := checkFriendlyName(friendlyName, false); err != nil {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field("friendlyName"), fault.MessageOf(err))
	}
	pcc, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field("credential"), "The credential could not be parsed: "+libMessage(err), err)
	}
	code, value, ok := splitFlowID(flow)
	if !ok || code != t.tenant.Code {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field("flowId"), MsgFlowUnknown)
	}
	c, err := s.takeChallenge(ctx, t.tenant.ID, value, CeremonyPasskeyCreate)
	if err == nil && c.UserID != t.user.ID {
		err = fault.E(fault.Invalid, MsgFlowUnknown) // another user's flow
	}
	if err != nil {
		if fault.Is(fault.Invalid, err) {
			err = fault.E(fault.Invalid, fault.Field("flowId"), MsgFlowUnknown, err)
		}
		return Authenticator{}, false, err
	}
	st := t.tenant.Settings
	raw := pcc.Raw.AttestationResponse
	v, err := verifyRegistration(raw.ClientDataJSON, raw.AttestationObject, st.WebAuthn, c.Value,
		st.AttestationPolicy == identity.AttestationPolicyTrusted, s.cfg.Metadata)
	if err != nil {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field("credential"), fault.MessageOf(err), err)
	}
	if !bytes.Equal(v.credentialID, pcc.RawID) {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field("credential"), "The credential id is not the attested one.")
	}
	if !pcc.Response.AttestationObject.AuthData.Flags.UserVerified() {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field("credential"), "User verification was required but not performed.")
	}
	return s.store(ctx, t, v, StateActive, ProvenanceInline, friendlyName, ActionRegister, meta)
}

// ListPasskeys returns every authenticator of the calling user, oldest
// first (at most 100): each of them can sign in while it is active,
// whatever its provenance.
func (s *Service) ListPasskeys(ctx context.Context, p identity.Principal) ([]Authenticator, error) {
	meta := map[string]any{"passkey": true}
	t, _, err := s.self(ctx, p)
	if err != nil {
		return nil, s.record(ctx, p, &t, ActionList, err, meta)
	}
	meta["user"] = map[string]any{"id": t.user.ID.String()}
	items, total, err := s.cfg.Store.ListAuthenticators(ctx, t.tenant.ID, t.user.ID, 0, maxListedCredentials)
	if items == nil {
		items = []Authenticator{}
	}
	meta["totalItems"] = total
	return items, s.record(ctx, p, &t, ActionList, err, meta)
}

// DeletePasskey removes an authenticator of the calling user: area C's
// Delete with the user as caller, so its rules hold (an authenticator
// imported by the organisation cannot be removed by its user, rule 5;
// another user's is fault.NotFound).
func (s *Service) DeletePasskey(ctx context.Context, p identity.Principal, id string) error {
	t, ref, err := s.self(ctx, p)
	if err != nil {
		return s.record(ctx, p, &t, ActionDelete, err, map[string]any{"passkey": true, "authenticator": map[string]any{"id": id}})
	}
	return s.Delete(ctx, p, ref, id)
}

// BeginPasskeyLogin issues the request options of a passkey sign-in in the
// tenant named by authDomain (its code, or "root"). With name,
// allowCredentials lists that user's active authenticators; without it the
// list is empty, which asks the browser for a discoverable credential.
// An unknown name gets a flow too, whose allowCredentials hold a
// credential id derived from the name (Config.DecoyKey: the same on every
// process that shares it), so the answer does not tell which names exist;
// its flow can never succeed. So does a user with no active passkey, whose
// empty list would otherwise tell that the name exists.
// An unknown tenant is fault.NotFound. Nothing is audited: no one has
// proved anything yet.
func (s *Service) BeginPasskeyLogin(ctx context.Context, authDomain, name string) (PasskeyRequest, error) {
	if s.cfg.Logins == nil {
		return PasskeyRequest{}, fault.E(fault.Unavailable, MsgSignInUnavailable)
	}
	tenant, err := s.cfg.Logins.ResolveTenant(ctx, authDomain)
	if fault.Is(fault.NotFound, err) {
		return PasskeyRequest{}, fault.E(fault.NotFound, "unknown auth_domain", err)
	} else if err != nil {
		return PasskeyRequest{}, err
	}
	t := target{tenant: tenant}
	allow := []protocol.CredentialDescriptor{}
	if name = strings.TrimSpace(name); name != "" {
		u, err := s.cfg.Directory.GetUserByName(ctx, tenant.ID, name)
		switch {
		case fault.Is(fault.NotFound, err):
			// A user id no user has: the flow cannot be answered by
			// anyone's credential.
			t.user.ID = identity.NewObjectID()
			allow = append(allow, protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: s.decoyID(tenant.ID, name)})
		case err != nil:
			return PasskeyRequest{}, err
		default:
			t.user = u
			if allow, err = s.activeCredentials(ctx, tenant.ID, u.ID); err != nil {
				return PasskeyRequest{}, err
			}
			if len(allow) == 0 { // as for a name no user has
				allow = append(allow, protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: s.decoyID(tenant.ID, name)})
			}
		}
	}
	c, err := s.newChallenge(ctx, t, CeremonyPasskeyGet, UVRequired)
	if err != nil {
		return PasskeyRequest{}, err
	}
	challenge, _ := base64.RawURLEncoding.DecodeString(c.Value)
	return PasskeyRequest{FlowID: flowID(tenant.Code, c.Value), PublicKey: PasskeyRequestOptions{
		Challenge: challenge, Timeout: s.cfg.ChallengeTTL.Milliseconds(), RPID: tenant.Settings.WebAuthn.RPID,
		AllowCredentials: allow, UserVerification: UVRequired,
	}}, nil
}

// decoyID is the credential id shown for a name no user has: 16 bytes, as
// real ids often are, the same for the same name under the same key.
func (s *Service) decoyID(tenantID, name string) []byte {
	m := hmac.New(sha256.New, s.decoyKey)
	m.Write([]byte(tenantID + "\x00" + strings.ToLower(name)))
	return m.Sum(nil)[:16]
}

func newDecoyKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// PasskeyLoginRequest is POST /api/v1/auth/tokens/ with grant_type
// passkey.
type PasskeyLoginRequest struct {
	FlowID     string
	Credential []byte // PublicKeyCredential.toJSON() of navigator.credentials.get()
	RemoteAddr string
}

// PasskeyLogin verifies an assertion answering a flow of
// BeginPasskeyLogin and issues what a password login issues (platform JWT
// and refresh token). The flow is taken by the first attempt and expires
// after ChallengeTTL. Every refusal of the proof (unknown, used or expired
// flow; wrong signature, origin, RP ID or challenge; no user
// verification; an authenticator that is pending (imported and not yet
// activated), suspended, locked, deleted, or of another user or tenant; a user handle that is not the credential's
// user) is fault.Unauthenticated and issues nothing; a signature counter
// that went backwards also locks the authenticator (area C's rule). A
// request that cannot be read (no flowId, a credential that does not
// parse) is fault.Invalid and spends no flow. Failures count toward the
// login throttle of the user the flow or credential names, and every
// outcome is audited as a password login is (action auth.login, method
// passkey).
func (s *Service) PasskeyLogin(ctx context.Context, req PasskeyLoginRequest) (identity.TokenResponse, error) {
	t, u, a, meta, err := s.checkPasskey(ctx, req)
	if err != nil {
		return identity.TokenResponse{}, err
	}
	return s.cfg.Logins.LoginSucceeded(ctx, t, u, a, meta)
}

// CheckPasskey is PasskeyLogin without the tokens: it verifies the
// assertion with the same rules, throttle and audit of failures, and
// returns the tenant and user it proves and how (amr, acr, auth_time),
// for a login that issues something else (the interactive guide's
// session, the hosted sign-in's). Recording the success is the caller's,
// once it has issued what the login is for.
func (s *Service) CheckPasskey(ctx context.Context, flowID string, credential []byte, remoteAddr string) (identity.Tenant, identity.User, identity.Authn, error) {
	t, u, a, _, err := s.checkPasskey(ctx, PasskeyLoginRequest{FlowID: flowID, Credential: credential, RemoteAddr: remoteAddr})
	if err != nil {
		return identity.Tenant{}, identity.User{}, identity.Authn{}, err
	}
	s.cfg.Logins.LoginVerified(t, u.Name)
	return t, u, a, nil
}

// assertionAMR is the amr of a verified FIDO assertion (API-mfa.md):
// hwk for a device-bound key (backup-eligible flag clear), swk for a
// synced passkey, and user when the UV flag is set.
func assertionAMR(par *protocol.ParsedCredentialAssertionData) []string {
	flags := par.Response.AuthenticatorData.Flags
	amr := []string{identity.AMRHardwareKey}
	if flags.HasBackupEligible() {
		amr[0] = identity.AMRSoftwareKey
	}
	if flags.HasUserVerified() {
		amr = append(amr, identity.AMRUser)
	}
	return amr
}

func (s *Service) checkPasskey(ctx context.Context, req PasskeyLoginRequest) (identity.Tenant, identity.User, identity.Authn, map[string]any, error) {
	t, u, a, meta, err := s.checkPasskeyProof(ctx, req)
	if err != nil {
		return t, u, a, meta, err
	}
	s.emitAssertion(ctx, t.ID, u.ID, a.AMR[0], "205", 0)
	return t, u, a, meta, nil
}

func (s *Service) checkPasskeyProof(ctx context.Context, req PasskeyLoginRequest) (identity.Tenant, identity.User, identity.Authn, map[string]any, error) {
	if s.cfg.Logins == nil {
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, fault.E(fault.Unavailable, MsgSignInUnavailable)
	}
	if strings.TrimSpace(req.FlowID) == "" {
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, fault.E(fault.Invalid, fault.Field("flowId"), MsgFlowRequired)
	}
	if len(bytes.TrimSpace(req.Credential)) == 0 || string(bytes.TrimSpace(req.Credential)) == "null" {
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, fault.E(fault.Invalid, fault.Field("credential"), MsgCredentialMissing)
	}
	par, err := protocol.ParseCredentialRequestResponseBytes(req.Credential)
	if err != nil {
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, fault.E(fault.Invalid, fault.Field("credential"), "The credential could not be parsed: "+libMessage(err), err)
	}
	code, value, ok := splitFlowID(req.FlowID)
	if !ok {
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, fault.E(fault.Unauthenticated, MsgFlowUnknown)
	}
	credID := base64.RawURLEncoding.EncodeToString(par.RawID)
	meta := map[string]any{"method": "passkey", "remoteAddr": req.RemoteAddr, "authenticator": map[string]any{"id": credID}}
	tenant, err := s.cfg.Directory.GetTenantByCode(ctx, code)
	if fault.Is(fault.NotFound, err) {
		// As for a password login to an unknown auth_domain, the failure
		// is the operators' to see.
		err = fault.E(fault.Unauthenticated, MsgFlowUnknown)
		if root, rerr := s.cfg.Logins.ResolveTenant(ctx, identity.RootAuthDomain); rerr == nil {
			return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, s.cfg.Logins.LoginFailed(ctx, root, "", err, meta)
		}
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, err
	} else if err != nil {
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, err
	}
	var name string
	fail := func(err error) (identity.Tenant, identity.User, identity.Authn, map[string]any, error) {
		if k := fault.KindOf(err); k == fault.Invalid || k == fault.NotFound {
			err = fault.E(fault.Unauthenticated, fault.MessageOf(err), err)
		}
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, s.cfg.Logins.LoginFailed(ctx, tenant, name, err, meta)
	}
	c, err := s.takeChallenge(ctx, tenant.ID, value, CeremonyPasskeyGet)
	if err != nil {
		if fault.Is(fault.Invalid, err) {
			err = fault.E(fault.Invalid, MsgFlowUnknown, err)
		}
		return fail(err)
	}
	// The user the flow named (username first), else the credential's
	// (usernameless): its name is the throttle's key.
	var user identity.User
	if !c.UserID.IsZero() {
		if user, err = s.cfg.Directory.GetUser(ctx, tenant.ID, c.UserID); err == nil {
			name = user.Name
			meta["user"] = map[string]any{"id": user.ID.String(), "name": user.Name}
		} else if !fault.Is(fault.NotFound, err) {
			return fail(err)
		}
	}
	prev, err := s.cfg.Store.GetAuthenticator(ctx, tenant.ID, credID)
	if fault.Is(fault.NotFound, err) || (err == nil && !c.UserID.IsZero() && prev.UserID != c.UserID) {
		return fail(fault.E(fault.Unauthenticated, MsgCredentialUnknown))
	} else if err != nil {
		return fail(err)
	}
	if c.UserID.IsZero() {
		// A discoverable credential must name its user, and name the
		// credential's (WebAuthn §7.2 step 6).
		if !bytes.Equal(par.Response.UserHandle, prev.UserID[:]) {
			return fail(fault.E(fault.Unauthenticated, "The user handle is not the credential's user."))
		}
		if user, err = s.cfg.Directory.GetUser(ctx, tenant.ID, prev.UserID); fault.Is(fault.NotFound, err) {
			return fail(fault.E(fault.Unauthenticated, MsgCredentialUnknown))
		} else if err != nil {
			return fail(err)
		}
		name = user.Name
		meta["user"] = map[string]any{"id": user.ID.String(), "name": user.Name}
	}
	if prev.State == StatePending {
		// An imported authenticator is activated by the organisation's
		// activation flow (area C), not by its first sign-in; the options
		// never list it either.
		return fail(fault.E(fault.Unauthenticated, fmt.Sprintf(MsgNotUsable, prev.State)))
	}
	if err := s.cfg.Logins.LoginAllowed(ctx, tenant, name, meta); err != nil {
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, err
	}
	a, err := s.assertWith(ctx, tenant, c, par, prev)
	if a.ID != "" && a.State != prev.State {
		s.emit(ctx, a, "302", prev.State, a.State)
	}
	if err != nil {
		return fail(err)
	}
	meta["authenticator"] = map[string]any{"id": a.ID, "signatureCounter": a.SignCount}
	// A passkey sign-in is two factors in one (possession of the key,
	// and the PIN or biometric its required user verification checked)
	// and bound to the origin: mfa, phishing-resistant.
	amr := append(assertionAMR(par), identity.AMRMFA)
	meta["amr"] = amr
	return tenant, user, identity.Authn{AMR: amr, ACR: identity.ACRPhishingResistant, AuthTime: s.now().Truncate(time.Second)}, meta, nil
}
