package authenticator

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// FIDO authenticators as a second factor (API-mfa.md): after a password,
// any active area C authenticator of the user answers a challenge whose
// allowCredentials list them, without user verification (no PIN after a
// password). Package mfa asks for these through its own small interface;
// the counter and state rules are area C's (assertWith).

// CeremonyPasskeySecond is the ceremony of a second-factor assertion: a
// challenge of it answers nothing else.
const CeremonyPasskeySecond = "passkey.second-factor"

// MsgSecondFactorRefused is the message of every refused second-factor
// assertion: the second step answers one message for every refusal.
const MsgSecondFactorRefused = "The passkey was refused."

// ActiveAuthenticators returns how many active authenticators user has
// in tenant: those that can be a second factor.
func (s *Service) ActiveAuthenticators(ctx context.Context, tenantID string, user identity.ObjectID) (int, error) {
	allow, err := s.activeCredentials(ctx, tenantID, user)
	return len(allow), err
}

// activeCredentials are the user's active authenticators as the
// allowCredentials of an assertion (never nil).
func (s *Service) activeCredentials(ctx context.Context, tenantID string, user identity.ObjectID) ([]protocol.CredentialDescriptor, error) {
	items, _, err := s.cfg.Store.ListAuthenticators(ctx, tenantID, user, 0, maxListedCredentials)
	if err != nil {
		return nil, err
	}
	allow := []protocol.CredentialDescriptor{}
	for _, a := range items {
		if a.State != StateActive {
			continue
		}
		if id, err := base64.RawURLEncoding.DecodeString(a.ID); err == nil {
			allow = append(allow, protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: id})
		}
	}
	return allow, nil
}

// BeginSecondFactor issues the request options of a second-factor
// assertion by u: allowCredentials lists u's active authenticators,
// userVerification is discouraged; a flow as the sign-in's (single-use,
// ChallengeTTL).
func (s *Service) BeginSecondFactor(ctx context.Context, t identity.Tenant, u identity.User) (PasskeyRequest, error) {
	tg := target{tenant: t, user: u}
	allow, err := s.activeCredentials(ctx, t.ID, u.ID)
	if err != nil {
		return PasskeyRequest{}, err
	}
	c, err := s.newChallenge(ctx, tg, CeremonyPasskeySecond, UVDiscouraged)
	if err != nil {
		return PasskeyRequest{}, err
	}
	challenge, _ := base64.RawURLEncoding.DecodeString(c.Value)
	return PasskeyRequest{FlowID: flowID(t.Code, c.Value), PublicKey: PasskeyRequestOptions{
		Challenge: challenge, Timeout: s.cfg.ChallengeTTL.Milliseconds(), RPID: t.Settings.WebAuthn.RPID,
		AllowCredentials: allow, UserVerification: UVDiscouraged,
	}}, nil
}

// ParseAssertion reports whether credential is a PublicKeyCredential of
// an assertion that parses: the second step answers one that does not
// with 400, counting no attempt.
func ParseAssertion(credential []byte) error {
	if len(bytes.TrimSpace(credential)) == 0 || string(bytes.TrimSpace(credential)) == "null" {
		return fault.E(fault.Invalid, fault.Field("credential"), MsgCredentialMissing)
	}
	if _, err := protocol.ParseCredentialRequestResponseBytes(credential); err != nil {
		return fault.E(fault.Invalid, fault.Field("credential"), "The credential could not be parsed: "+libMessage(err), err)
	}
	return nil
}

// CheckSecondFactor verifies an assertion answering a flow of
// BeginSecondFactor for u, with area C's rules (active only; a counter
// that goes backwards locks), and returns its amr (hwk or swk, and user
// when the UV flag is set). Every refusal is fault.Unauthenticated with
// MsgSecondFactorRefused; a credential that does not parse is
// fault.Invalid. Accepted assertions emit native event 205.
func (s *Service) CheckSecondFactor(ctx context.Context, t identity.Tenant, u identity.User, flow string, credential []byte) ([]string, error) {
	if err := ParseAssertion(credential); err != nil {
		return nil, err
	}
	par, _ := protocol.ParseCredentialRequestResponseBytes(credential)
	refused := func(err error) ([]string, error) {
		if fault.KindOf(err) == fault.Internal || fault.KindOf(err) == fault.Unavailable {
			return nil, err
		}
		return nil, fault.E(fault.Unauthenticated, MsgSecondFactorRefused, err)
	}
	code, value, ok := splitFlowID(flow)
	if !ok || code != t.Code {
		return refused(fault.E(fault.Invalid, MsgFlowUnknown))
	}
	c, err := s.takeChallenge(ctx, t.ID, value, CeremonyPasskeySecond)
	if err == nil && c.UserID != u.ID {
		err = fault.E(fault.Invalid, MsgFlowUnknown)
	}
	if err != nil {
		return refused(err)
	}
	prev, err := s.cfg.Store.GetAuthenticator(ctx, t.ID, base64.RawURLEncoding.EncodeToString(par.RawID))
	if fault.Is(fault.NotFound, err) || (err == nil && prev.UserID != u.ID) {
		return refused(fault.E(fault.Invalid, MsgCredentialUnknown))
	} else if err != nil {
		return nil, err
	}
	if prev.State != StateActive {
		return refused(fault.E(fault.Invalid, MsgNotUsable))
	}
	a, err := s.assertWith(ctx, t, c, par, prev)
	if a.ID != "" && a.State != prev.State {
		s.emit(ctx, a, "302", prev.State, a.State)
	}
	if err != nil {
		return refused(err)
	}
	amr := assertionAMR(par)
	s.emitAssertion(ctx, t.ID, u.ID, amr[0], "205", 0)
	return amr, nil
}

// emitAssertion appends a credential-verification event (205 accepted,
// 204 refused with count) of user in tenant, amr the method.
func (s *Service) emitAssertion(ctx context.Context, tenantID string, user identity.ObjectID, amr, typeID string, count int) {
	if s.cfg.Events == nil {
		return
	}
	ev := map[string]any{"event_type_id": typeID, "end_user": map[string]any{"id": user.String()}, "amr": amr}
	if count > 0 {
		ev["count"] = count
	}
	raw, _ := json.Marshal(ev)
	if _, err := s.cfg.Events.EmitNative(ctx, tenantID, raw); err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "authenticator event not emitted", slog.String("type", typeID), slog.String("tenant", tenantID), slog.Any("err", err))
	}
}

// DeleteUserAuthenticators deletes every authenticator of user in
// tenant (an administrator's reset of the user's factors), emitting 303
// for each, and returns how many it deleted.
func (s *Service) DeleteUserAuthenticators(ctx context.Context, tenantID string, user identity.ObjectID) (int, error) {
	items, _, err := s.cfg.Store.ListAuthenticators(ctx, tenantID, user, 0, maxListedCredentials)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range items {
		if err := s.cfg.Store.DeleteAuthenticator(ctx, tenantID, a.ID); err != nil && !fault.Is(fault.NotFound, err) {
			return n, err
		}
		n++
		s.emit(ctx, a, "303", a.State, "")
	}
	return n, nil
}

// RegisterFactor finishes the registration of a passkey for u answering
// a creation flow of BeginPasskeyRegistration (an enrollment during a
// sign-in, API-mfa.md: "registers and signs in at once"), and returns
// its amr: hwk or swk, and user (registration requires user
// verification). Refusals are fault.Invalid, as FinishPasskeyRegistration's.
func (s *Service) RegisterFactor(ctx context.Context, t identity.Tenant, u identity.User, flow string, credential []byte) ([]string, error) {
	meta := map[string]any{"passkey": true, "enrollment": true, "user": map[string]any{"id": u.ID.String()}}
	tg := target{tenant: t, user: u}
	p := identity.Principal{Kind: identity.KindUser, TenantID: t.ID, TenantCode: t.Code, UserID: u.ID.String()}
	a, recorded, err := s.finishPasskeyRegistration(ctx, tg, flow, credential, "", meta)
	if _, err := s.created(ctx, p, &tg, ActionRegister, a, recorded, err, meta); err != nil {
		return nil, err
	}
	pcc, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return nil, fault.E(fault.Invalid, fault.Field("credential"), "The credential could not be parsed: "+libMessage(err), err)
	}
	amr := []string{identity.AMRHardwareKey, identity.AMRUser}
	if pcc.Response.AttestationObject.AuthData.Flags.HasBackupEligible() {
		amr[0] = identity.AMRSoftwareKey
	}
	return amr, nil
}

// UserAuthenticators lists every authenticator of user in tenant (at
// most 100), oldest first.
func (s *Service) UserAuthenticators(ctx context.Context, tenantID string, user identity.ObjectID) ([]Authenticator, error) {
	items, _, err := s.cfg.Store.ListAuthenticators(ctx, tenantID, user, 0, maxListedCredentials)
	return items, err
}
