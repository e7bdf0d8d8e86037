package authenticator

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// User verification requirements of the ceremonies (WebAuthn §5.8.6).
const (
	UVRequired    = "required"
	UVPreferred   = "preferred"
	UVDiscouraged = "discouraged"
)

// maxListedCredentials bounds excludeCredentials and allowCredentials.
const maxListedCredentials = 100

// Messages of the ceremonies (the FIDO conformance server API's
// errorMessage). None is in the specification's table: the ceremonies are
// beyond it.
const (
	MsgUsernameRequired  = "The username is required."
	MsgUnknownUsername   = "The user was not found."
	MsgUVValue           = "userVerification must be required, preferred or discouraged."
	MsgChallengeUnknown  = "The challenge is unknown or was already used."
	MsgChallengeExpired  = "The challenge has expired."
	MsgCredentialUnknown = "The credential is not registered to the user."
	MsgCounterWentBack   = "The signature counter did not increase: the authenticator may be cloned and is now locked."
	MsgNotUsable         = "The authenticator is %s and cannot authenticate." // a fmt format of the state
)

// CredentialDescriptor names a credential in options.
type CredentialDescriptor struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// CreationOptions are the options of navigator.credentials.create() for
// an inline registration, in the FIDO conformance server API's shape
// (PublicKeyCredentialCreationOptions with base64url binary fields).
type CreationOptions struct {
	RP struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"rp"`
	User struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		DisplayName string `json:"displayName"`
	} `json:"user"`
	Challenge              string                          `json:"challenge"`
	PubKeyCredParams       []protocol.CredentialParameter  `json:"pubKeyCredParams"`
	Timeout                int64                           `json:"timeout"`
	ExcludeCredentials     []CredentialDescriptor          `json:"excludeCredentials"`
	AuthenticatorSelection protocol.AuthenticatorSelection `json:"authenticatorSelection"`
	Attestation            string                          `json:"attestation"`
}

// RequestOptions are the options of navigator.credentials.get() in the FIDO
// conformance server API's shape.
type RequestOptions struct {
	Challenge        string                 `json:"challenge"`
	Timeout          int64                  `json:"timeout"`
	RPID             string                 `json:"rpId"`
	AllowCredentials []CredentialDescriptor `json:"allowCredentials"`
	UserVerification string                 `json:"userVerification"`
}

// RegistrationRequest starts an inline registration (attestation options).
type RegistrationRequest struct {
	Username               string
	DisplayName            string
	AuthenticatorSelection protocol.AuthenticatorSelection
	// Attestation is the conveyance preference: none (default), indirect,
	// direct or enterprise.
	Attestation string
}

// AssertionRequest starts an assertion (the activation flow's proof).
type AssertionRequest struct {
	Username         string
	UserVerification string // default preferred
}

func checkUV(uv string) (string, error) {
	switch uv {
	case "":
		return UVPreferred, nil
	case UVRequired, UVPreferred, UVDiscouraged:
		return uv, nil
	}
	return "", fault.E(fault.Invalid, fault.Field("userVerification"), MsgUVValue)
}

// ceremonyTarget resolves the tenant code and the caller (as resolve does)
// and, with needUser, the user named username (required). The tenant is
// checked first, so a caller of another tenant learns nothing else.
func (s *Service) ceremonyTarget(ctx context.Context, p identity.Principal, tenantCode, username string, needUser bool) (target, error) {
	if strings.TrimSpace(tenantCode) == "" {
		return target{}, fault.E(fault.Invalid, MsgTenantCodeEmpty)
	}
	t, err := s.cfg.Directory.GetTenantByCode(ctx, tenantCode)
	if fault.Is(fault.NotFound, err) {
		return target{}, fault.E(fault.NotFound, MsgTenantNotFound)
	} else if err != nil {
		return target{}, err
	}
	if p.TenantID != t.ID {
		return target{}, fault.E(fault.Unauthenticated, MsgNoPermission)
	}
	if !needUser {
		return target{tenant: t}, nil
	}
	if strings.TrimSpace(username) == "" {
		return target{tenant: t}, fault.E(fault.Invalid, fault.Field("username"), MsgUsernameRequired)
	}
	u, err := s.cfg.Directory.GetUserByName(ctx, t.ID, username)
	if fault.Is(fault.NotFound, err) {
		return target{tenant: t}, fault.E(fault.NotFound, MsgUnknownUsername)
	}
	return target{tenant: t, user: u}, err
}

// newChallenge stores a fresh challenge for the user.
func (s *Service) newChallenge(ctx context.Context, t target, ceremony, uv string) (Challenge, error) {
	v, err := protocol.CreateChallenge()
	if err != nil {
		return Challenge{}, fault.E(fault.Internal, err)
	}
	now := s.now()
	c := Challenge{TenantID: t.tenant.ID, Value: v.String(), UserID: t.user.ID, Ceremony: ceremony, UserVerification: uv,
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.ChallengeTTL)}
	return c, s.cfg.Store.CreateChallenge(ctx, c)
}

// takeChallenge takes the tenant's challenge value for ceremony, once.
func (s *Service) takeChallenge(ctx context.Context, tenantID, value, ceremony string) (Challenge, error) {
	if value == "" {
		return Challenge{}, fault.E(fault.Invalid, MsgChallengeUnknown)
	}
	c, err := s.cfg.Store.TakeChallenge(ctx, tenantID, value)
	if fault.Is(fault.NotFound, err) || (err == nil && c.Ceremony != ceremony) {
		return Challenge{}, fault.E(fault.Invalid, MsgChallengeUnknown)
	} else if err != nil {
		return Challenge{}, err
	}
	if s.now().After(c.ExpiresAt) {
		return Challenge{}, fault.E(fault.Invalid, MsgChallengeExpired)
	}
	return c, nil
}

// descriptors lists the user's credentials usable by the filter.
func (s *Service) descriptors(ctx context.Context, t target, keep func(Authenticator) bool) ([]CredentialDescriptor, error) {
	items, _, err := s.cfg.Store.ListAuthenticators(ctx, t.tenant.ID, t.user.ID, 0, maxListedCredentials)
	if err != nil {
		return nil, err
	}
	out := []CredentialDescriptor{}
	for _, a := range items {
		if keep(a) {
			out = append(out, CredentialDescriptor{Type: string(protocol.PublicKeyCredentialType), ID: a.ID})
		}
	}
	return out, nil
}

// BeginRegistration issues the options of an inline registration for the
// user named req.Username: a single-use challenge valid ChallengeTTL, the
// tenant's RP, the accepted algorithms, and the user's credentials as
// excludeCredentials.
func (s *Service) BeginRegistration(ctx context.Context, p identity.Principal, tenantCode string, req RegistrationRequest) (CreationOptions, error) {
	meta := map[string]any{"username": req.Username}
	t, err := s.beginRegistration(ctx, p, tenantCode, req)
	if err != nil {
		return CreationOptions{}, s.record(ctx, p, &t.target, ActionAttestationOption, err, meta)
	}
	meta["user"] = map[string]any{"id": t.user.ID.String()}
	return t.opts, s.record(ctx, p, &t.target, ActionAttestationOption, nil, meta)
}

type begunRegistration struct {
	target
	opts CreationOptions
}

func (s *Service) beginRegistration(ctx context.Context, p identity.Principal, tenantCode string, req RegistrationRequest) (begunRegistration, error) {
	var out begunRegistration
	t, err := s.ceremonyTarget(ctx, p, tenantCode, req.Username, true)
	out.target = t
	if err != nil {
		return out, err
	}
	sel := req.AuthenticatorSelection
	uv, err := checkUV(string(sel.UserVerification))
	if err != nil {
		return out, err
	}
	sel.UserVerification = protocol.UserVerificationRequirement(uv)
	switch req.Attestation {
	case "":
		req.Attestation = "none"
	case "none", "indirect", "direct", "enterprise":
	default:
		return out, fault.E(fault.Invalid, fault.Field("attestation"), "attestation must be none, indirect, direct or enterprise.")
	}
	exclude, err := s.descriptors(ctx, t, func(Authenticator) bool { return true })
	if err != nil {
		return out, err
	}
	c, err := s.newChallenge(ctx, t, CeremonyCreate, uv)
	if err != nil {
		return out, err
	}
	o := &out.opts
	o.RP.ID, o.RP.Name = t.tenant.Settings.WebAuthn.RPID, t.tenant.Name
	o.User.ID, o.User.Name, o.User.DisplayName = t.user.ID.String(), t.user.Name, req.DisplayName
	if o.User.DisplayName == "" {
		o.User.DisplayName = t.user.Name
	}
	o.Challenge, o.PubKeyCredParams, o.Timeout = c.Value, credParams, s.cfg.ChallengeTTL.Milliseconds()
	o.ExcludeCredentials, o.AuthenticatorSelection, o.Attestation = exclude, sel, req.Attestation
	return out, nil
}

// FinishRegistration verifies the PublicKeyCredential JSON of an inline
// registration answering a challenge of BeginRegistration (taken once,
// refused once expired) and stores the authenticator active with
// provenance inline.
func (s *Service) FinishRegistration(ctx context.Context, p identity.Principal, tenantCode string, credential []byte) (Authenticator, error) {
	meta := map[string]any{}
	t, err := s.ceremonyTarget(ctx, p, tenantCode, "", false)
	if err != nil {
		return Authenticator{}, s.record(ctx, p, &t, ActionRegister, err, meta)
	}
	a, recorded, err := s.finishRegistration(ctx, &t, credential, meta)
	return s.created(ctx, p, &t, ActionRegister, a, recorded, err, meta)
}

func (s *Service) finishRegistration(ctx context.Context, t *target, credential []byte, meta map[string]any) (Authenticator, bool, error) {
	pcc, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return Authenticator{}, false, fault.E(fault.Invalid, "The credential could not be parsed: "+libMessage(err), err)
	}
	c, err := s.takeChallenge(ctx, t.tenant.ID, pcc.Response.CollectedClientData.Challenge, CeremonyCreate)
	if err != nil {
		return Authenticator{}, false, err
	}
	if t.user, err = s.cfg.Directory.GetUser(ctx, t.tenant.ID, c.UserID); err != nil {
		return Authenticator{}, false, err
	}
	st := t.tenant.Settings
	raw := pcc.Raw.AttestationResponse
	v, err := verifyRegistration(raw.ClientDataJSON, raw.AttestationObject, st.WebAuthn, c.Value,
		st.AttestationPolicy == identity.AttestationPolicyTrusted, s.cfg.Metadata)
	if err != nil {
		return Authenticator{}, false, err
	}
	if !bytes.Equal(v.credentialID, pcc.RawID) {
		return Authenticator{}, false, fault.E(fault.Invalid, "The credential id is not the attested one.")
	}
	if c.UserVerification == UVRequired && !pcc.Response.AttestationObject.AuthData.Flags.UserVerified() {
		return Authenticator{}, false, fault.E(fault.Invalid, "User verification was required but not performed.")
	}
	return s.store(ctx, *t, v, StateActive, ProvenanceInline, "", ActionRegister, meta)
}

// BeginAssertion issues the options of an assertion by the user named
// req.Username: a single-use challenge and the user's credentials that can
// authenticate (pending and active ones: an assertion by a pending imported
// authenticator is the activation flow).
func (s *Service) BeginAssertion(ctx context.Context, p identity.Principal, tenantCode string, req AssertionRequest) (RequestOptions, error) {
	meta := map[string]any{"username": req.Username}
	var t target
	opts, err := func() (RequestOptions, error) {
		var err error
		if t, err = s.ceremonyTarget(ctx, p, tenantCode, req.Username, true); err != nil {
			return RequestOptions{}, err
		}
		uv, err := checkUV(req.UserVerification)
		if err != nil {
			return RequestOptions{}, err
		}
		allow, err := s.descriptors(ctx, t, func(a Authenticator) bool { return a.State == StateActive || a.State == StatePending })
		if err != nil {
			return RequestOptions{}, err
		}
		c, err := s.newChallenge(ctx, t, CeremonyGet, uv)
		if err != nil {
			return RequestOptions{}, err
		}
		return RequestOptions{Challenge: c.Value, Timeout: s.cfg.ChallengeTTL.Milliseconds(), RPID: t.tenant.Settings.WebAuthn.RPID,
			AllowCredentials: allow, UserVerification: uv}, nil
	}()
	if err == nil {
		meta["user"] = map[string]any{"id": t.user.ID.String()}
	}
	return opts, s.record(ctx, p, &t, ActionAssertionOption, err, meta)
}

// FinishAssertion verifies the PublicKeyCredential JSON of an assertion
// answering a challenge of BeginAssertion, with the credential's stored
// public key. Every assertion that names a registered credential of the
// challenge's user sets lastUsedAuthnDateTime; a verified one also sets
// lastSuccessAuthnDateTime and the signature counter, and activates a
// pending imported authenticator. A counter that does not increase (when
// either the stored or the new one is not zero) locks the authenticator:
// the sign of a cloned authenticator. Locked and suspended authenticators
// cannot authenticate.
func (s *Service) FinishAssertion(ctx context.Context, p identity.Principal, tenantCode string, assertion []byte) (Authenticator, error) {
	meta := map[string]any{}
	t, err := s.ceremonyTarget(ctx, p, tenantCode, "", false)
	if err != nil {
		return Authenticator{}, s.record(ctx, p, &t, ActionAssert, err, meta)
	}
	a, prev, err := s.finishAssertion(ctx, t, assertion)
	if a.ID != "" {
		meta["user"] = map[string]any{"id": a.UserID.String()}
		meta["authenticator"] = map[string]any{"id": a.ID, "state": a.State, "signatureCounter": a.SignCount}
	}
	if rerr := s.record(ctx, p, &t, ActionAssert, err, meta); rerr != nil && err == nil {
		return Authenticator{}, rerr
	}
	if a.ID != "" && a.State != prev.State {
		s.emit(ctx, a, "302", prev.State, a.State)
	}
	if err != nil {
		return Authenticator{}, err
	}
	return a, nil
}

// finishAssertion returns the authenticator as updated and as it was; a
// is set (with an error) when a refused assertion still changed it.
func (s *Service) finishAssertion(ctx context.Context, t target, assertion []byte) (a, prev Authenticator, err error) {
	par, err := protocol.ParseCredentialRequestResponseBytes(assertion)
	if err != nil {
		return a, prev, fault.E(fault.Invalid, "The assertion could not be parsed: "+libMessage(err), err)
	}
	c, err := s.takeChallenge(ctx, t.tenant.ID, par.Response.CollectedClientData.Challenge, CeremonyGet)
	if err != nil {
		return a, prev, err
	}
	prev, err = s.cfg.Store.GetAuthenticator(ctx, t.tenant.ID, base64.RawURLEncoding.EncodeToString(par.RawID))
	if fault.Is(fault.NotFound, err) || (err == nil && prev.UserID != c.UserID) {
		return Authenticator{}, Authenticator{}, fault.E(fault.Invalid, MsgCredentialUnknown)
	} else if err != nil {
		return Authenticator{}, Authenticator{}, err
	}
	a, err = s.assertWith(ctx, t.tenant, c, par, prev)
	if a.ID == "" {
		return Authenticator{}, Authenticator{}, err
	}
	return a, prev, err
}

// assertWith verifies an assertion par answering challenge c with the
// stored authenticator prev (already known to be the one the ceremony
// may use) and applies area C's rules to it: only active and pending
// authenticators authenticate, a user handle must be prev's user, the
// signature, origin, RP ID hash, challenge and flags must verify, and a
// signature counter that does not increase (when the stored or the new
// one is not zero) locks it. Every assertion sets LastUsedAt; a verified
// one also LastSuccessAt and the counter, and activates a pending one.
//
// It returns the authenticator as stored afterwards (a.ID == "" when
// nothing was stored) and the refusal, if any: fault.Invalid for the
// assertion's faults.
func (s *Service) assertWith(ctx context.Context, tenant identity.Tenant, c Challenge, par *protocol.ParsedCredentialAssertionData, prev Authenticator) (Authenticator, error) {
	now := s.now()
	a := prev
	a.LastUsedAt = &now
	verr := func() error {
		if a.State != StateActive && a.State != StatePending {
			return fault.E(fault.Invalid, fmt.Sprintf(MsgNotUsable, a.State))
		}
		if uh := par.Response.UserHandle; len(uh) > 0 && !bytes.Equal(uh, a.UserID[:]) {
			return fault.E(fault.Invalid, "The user handle is not the challenge's user.")
		}
		rp := tenant.Settings.WebAuthn
		if err := par.Verify(c.Value, rp.RPID, "", rp.Origins, nil, nil, protocol.TopOriginImplicitVerificationMode, false,
			c.UserVerification == UVRequired, true, a.PublicKey, protocol.SignaturePolicy{}); err != nil {
			return fault.E(fault.Invalid, "The assertion could not be verified: "+libMessage(err), err)
		}
		counter := int64(par.Response.AuthenticatorData.Counter)
		if (counter != 0 || a.SignCount != 0) && counter <= a.SignCount {
			a.State = StateLocked
			return fault.E(fault.Invalid, MsgCounterWentBack)
		}
		a.SignCount = counter
		a.LastSuccessAt = &now
		if a.State == StatePending {
			a.State = StateActive
		}
		return nil
	}()
	a.UpdatedAt = now
	if !now.After(prev.UpdatedAt) {
		a.UpdatedAt = prev.UpdatedAt.Add(time.Microsecond)
	}
	if err := s.cfg.Store.UpdateAuthenticator(ctx, a, prev.UpdatedAt); err != nil {
		if fault.Is(fault.Conflict, err) {
			// Another assertion of the same credential won the race: this
			// one fails rather than apply to a state it did not see.
			err = fault.E(fault.Invalid, "The authenticator was used concurrently; try again.", err)
		}
		return Authenticator{}, err
	}
	return a, verr
}
