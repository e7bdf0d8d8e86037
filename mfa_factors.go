package latchkey

import (
	"context"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/mfa"
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
