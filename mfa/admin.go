package mfa

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// PolicyView is GET /me/mfa's policy: the tenant's, and whether this
// user must give a second factor at the next sign-in.
type PolicyView struct {
	Mode               string     `json:"mode"`
	Required           bool       `json:"required"`
	Level              string     `json:"level"`
	EnrollmentDeadline *time.Time `json:"enrollmentDeadline,omitempty"`
}

// CodesView is how many recovery codes are left, and since when.
type CodesView struct {
	Remaining int        `json:"remaining"`
	CreatedAt *time.Time `json:"createdDateTime"`
}

// Overview is every factor of a user, no secrets: GET /me/mfa and the
// administrator's GET.
type Overview struct {
	Policy        PolicyView
	TOTP          []Device
	Passkeys      []Passkey
	RecoveryCodes CodesView
	OTPLocked     bool
}

func (s *Service) overview(ctx context.Context, t identity.Tenant, u identity.User) (Overview, error) {
	v, err := s.view(ctx, t, u)
	if err != nil {
		return Overview{}, err
	}
	o := Overview{Policy: PolicyView{Mode: v.policy.Mode, Required: v.must, Level: v.policy.Level},
		TOTP: []Device{}, Passkeys: []Passkey{}, OTPLocked: v.state.OTPLocked}
	if v.must && !v.hasFactor() {
		d := v.deadline
		o.Policy.EnrollmentDeadline = &d
	}
	now := s.now()
	for _, d := range v.devices {
		if d.State == StatePending && !now.Before(d.ExpiresAt) {
			continue // expired: gone as far as the user can tell
		}
		if d.State == StateActive && v.state.OTPLocked {
			d.State = StateLocked
		}
		o.TOTP = append(o.TOTP, d)
	}
	if s.cfg.FIDO != nil {
		if o.Passkeys, err = s.cfg.FIDO.Passkeys(ctx, t.ID, u.ID); err != nil {
			return Overview{}, err
		}
	}
	o.RecoveryCodes.Remaining = v.unused
	if len(v.codes) > 0 {
		c := v.codes[0].CreatedAt
		o.RecoveryCodes.CreatedAt = &c
	}
	return o, nil
}

// Factors returns the calling user's factors and policy (GET /me/mfa).
func (s *Service) Factors(ctx context.Context, p identity.Principal) (Overview, error) {
	t, u, err := s.self(ctx, p)
	if err != nil {
		return Overview{}, err
	}
	return s.overview(ctx, t, u)
}

// adminTarget checks an administrator's call about user userID of
// tenantID: a tenant or root administrator (fault.Forbidden otherwise),
// never about their own factors (fault.Forbidden), the user must exist
// (fault.NotFound).
func (s *Service) adminTarget(ctx context.Context, p identity.Principal, tenantID, userID string) (identity.Tenant, identity.User, error) {
	if !p.CanAdminister(tenantID) {
		return identity.Tenant{}, identity.User{}, fault.E(fault.Forbidden, "only an administrator of the tenant may read or reset a user's factors")
	}
	t, err := s.cfg.Directory.GetTenant(ctx, tenantID)
	if fault.Is(fault.NotFound, err) {
		return t, identity.User{}, fault.E(fault.NotFound, "tenant not found")
	} else if err != nil {
		return t, identity.User{}, err
	}
	id, err := identity.ParseObjectID(userID, "")
	if err != nil {
		return t, identity.User{}, fault.E(fault.NotFound, "user not found")
	}
	u, err := s.cfg.Directory.GetUser(ctx, t.ID, id)
	if fault.Is(fault.NotFound, err) {
		return t, u, fault.E(fault.NotFound, "user not found")
	} else if err != nil {
		return t, u, err
	}
	if p.Kind == identity.KindUser && p.UserID == u.ID.String() && p.TenantID == t.ID {
		return t, u, fault.E(fault.Forbidden, "an administrator cannot read or reset their own factors here; use /me/mfa")
	}
	return t, u, nil
}

// UserFactors returns a user's factors for an administrator (no
// secrets).
func (s *Service) UserFactors(ctx context.Context, p identity.Principal, tenantID, userID string) (Overview, error) {
	t, u, err := s.adminTarget(ctx, p, tenantID, userID)
	if err != nil {
		return Overview{}, s.record(ctx, p.TenantID, ActionRead, err, map[string]any{"user": map[string]any{"id": userID}})
	}
	return s.overview(ctx, t, u)
}

// ResetUser deletes a user's TOTP devices and recovery codes, clears
// their counters and lock, and gives them at least ResetGrace to enrol
// again; with passkeys their FIDO authenticators go too (through area
// C). A tenant or root administrator with step-up; audited mfa.reset.
func (s *Service) ResetUser(ctx context.Context, p identity.Principal, tenantID, userID string, passkeys bool) error {
	t, u, err := s.adminTarget(ctx, p, tenantID, userID)
	meta := map[string]any{"user": map[string]any{"id": userID}, "passkeys": passkeys}
	rec := tenantID
	if err != nil {
		if t.ID == "" {
			rec = p.TenantID
		}
		return s.record(ctx, rec, ActionReset, err, meta)
	}
	meta = userMeta(u)
	meta["passkeys"] = passkeys
	if err := s.cfg.Identity.CheckStepUp(p); err != nil {
		return s.record(ctx, t.ID, ActionReset, err, meta)
	}
	devices, err := s.st.ListTOTPDevices(ctx, t.ID, u.ID)
	if err != nil {
		return err
	}
	if err := s.st.ResetMFA(ctx, t.ID, u.ID, s.now().Add(ResetGrace)); err != nil {
		return s.record(ctx, t.ID, ActionReset, err, meta)
	}
	if passkeys && s.cfg.FIDO != nil {
		n, err := s.cfg.FIDO.DeleteAll(ctx, t.ID, u.ID)
		if err != nil {
			return s.record(ctx, t.ID, ActionReset, err, meta)
		}
		meta["passkeysDeleted"] = n
	}
	meta["totpDeleted"] = len(devices)
	if err := s.record(ctx, t.ID, ActionReset, nil, meta); err != nil {
		return err
	}
	ctx = audit.WithActor(ctx, p.UserID, p.ClientID)
	for _, d := range devices {
		if d.State == StateActive {
			s.emit(ctx, t.ID, u.ID, map[string]any{"event_type_id": "303", "amr": identity.AMROTP, "previous_state": d.State})
		}
	}
	return nil
}
