package latchkey

import (
	"context"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/guide"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/mfa"
	"github.com/latchkey/latchkey/oidc"
)

// fidoFactors lets package mfa use area C's authenticators as second
// factors without importing area C (mfa.FIDO).
type fidoFactors struct{ a *authenticator.Service }

func (f fidoFactors) ActiveAuthenticators(ctx context.Context, tenantID string, user identity.ObjectID) (int, error) {
	return f.a.ActiveAuthenticators(ctx, tenantID, user)
}

func (f fidoFactors) Passkeys(ctx context.Context, tenantID string, user identity.ObjectID) ([]mfa.Passkey, error) {
	items, err := f.a.UserAuthenticators(ctx, tenantID, user)
	if err != nil {
		return nil, err
	}
	out := make([]mfa.Passkey, len(items))
	for i, a := range items {
		out[i] = mfa.Passkey{ID: a.ID, FriendlyName: a.FriendlyName, State: a.State}
	}
	return out, nil
}

func (f fidoFactors) BeginSecondFactor(ctx context.Context, t identity.Tenant, u identity.User) (any, error) {
	return f.a.BeginSecondFactor(ctx, t, u)
}

func (f fidoFactors) CheckSecondFactor(ctx context.Context, t identity.Tenant, u identity.User, flowID string, credential []byte) ([]string, error) {
	return f.a.CheckSecondFactor(ctx, t, u, flowID, credential)
}

func (f fidoFactors) RegisterFactor(ctx context.Context, t identity.Tenant, u identity.User, flowID string, credential []byte) ([]string, error) {
	return f.a.RegisterFactor(ctx, t, u, flowID, credential)
}

func (f fidoFactors) DeleteAll(ctx context.Context, tenantID string, user identity.ObjectID) (int, error) {
	return f.a.DeleteUserAuthenticators(ctx, tenantID, user)
}

// hostedSecondFactor is package mfa as the OpenID Provider's hosted page
// asks it (oidc.SecondFactor), so that oidc and mfa import neither each
// other.
type hostedSecondFactor struct {
	m *mfa.Service
	a *authenticator.Service
}

func (h hostedSecondFactor) Verify(ctx context.Context, in oidc.StepInput) (identity.Tenant, identity.User, identity.Authn, []string, error) {
	r, err := h.m.Verify(ctx, mfa.Step{GrantType: in.GrantType, Token: in.Token, OTP: in.OTP, RecoveryCode: in.RecoveryCode,
		FlowID: in.FlowID, Credential: in.Credential, Origin: identity.OriginOIDC, RemoteAddr: in.RemoteAddr})
	if err != nil {
		return identity.Tenant{}, identity.User{}, identity.Authn{}, nil, err
	}
	return r.Tenant, r.User, r.Authn, r.RecoveryCodes, nil
}

func (h hostedSecondFactor) StepUp(ctx context.Context, t identity.Tenant, u identity.User, origin string, amr []string, floor string) error {
	return h.m.StepUp(ctx, t, u, origin, amr, floor)
}

func (h hostedSecondFactor) EnrollTOTP(ctx context.Context, token string) (string, string, string, error) {
	e, err := h.m.CreateTOTPEnrolling(ctx, token, "")
	return e.Secret, e.OTPAuthURI, e.QRCode, err
}

func (h hostedSecondFactor) PasskeyOptions(ctx context.Context, token string) (any, error) {
	return h.m.BeginPasskey(ctx, token)
}

// guideSecondFactor is package mfa as the guide's login asks it.
type guideSecondFactor struct{ m *mfa.Service }

func (g guideSecondFactor) VerifyGuide(ctx context.Context, in guide.SecondStep) (identity.Tenant, identity.User, identity.Authn, error) {
	r, err := g.m.Verify(ctx, mfa.Step{GrantType: in.GrantType, Token: in.Token, OTP: in.OTP, RecoveryCode: in.RecoveryCode,
		FlowID: in.FlowID, Credential: in.Credential, Origin: identity.OriginGuide, RemoteAddr: in.RemoteAddr})
	return r.Tenant, r.User, r.Authn, err
}

func (h hostedSecondFactor) EnrollPasskeyOptions(ctx context.Context, token string) (any, error) {
	p, err := h.m.EnrollingPrincipal(ctx, token)
	if err != nil {
		return nil, err
	}
	return h.a.BeginPasskeyRegistration(ctx, p)
}
