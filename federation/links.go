package federation

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Passkeys counts a user's passkeys (authenticator.Store's list).
type Passkeys interface {
	CountPasskeys(ctx context.Context, tenantID string, userID identity.ObjectID) (int, error)
}

// LinkView is a link as the identity lists show it.
type LinkView struct {
	ProviderID string    `json:"providerId"`
	Subject    string    `json:"subject"`
	Email      string    `json:"email"`
	LinkedAt   time.Time `json:"linkedAt"`
}

func linkViews(ls []Link) []LinkView {
	out := make([]LinkView, 0, len(ls))
	for _, l := range ls {
		out = append(out, LinkView{ProviderID: l.ProviderID, Subject: l.Subject, Email: l.Email, LinkedAt: l.LinkedAt})
	}
	return out
}

// self is the user a user's own token names.
func (s *Service) self(ctx context.Context, p identity.Principal) (identity.User, error) {
	id, err := identity.ParseObjectID(p.UserID, "")
	if p.TenantID == "" || p.UserID == "" || err != nil {
		return identity.User{}, fault.E(fault.Forbidden, "a user's token is required")
	}
	return s.cfg.Users.GetUser(ctx, p.TenantID, id)
}

// MyLinks lists the caller's linked identities.
func (s *Service) MyLinks(ctx context.Context, p identity.Principal) ([]LinkView, error) {
	u, err := s.self(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.links(ctx, u)
}

func (s *Service) links(ctx context.Context, u identity.User) ([]LinkView, error) {
	ls, err := s.st.ListFederatedIdentities(ctx, u.TenantID, u.ID)
	if err != nil {
		return nil, err
	}
	return linkViews(ls), nil
}

// UnlinkMine removes the caller's link of a provider: NotFound when there
// is none; Conflict when it is the last way the user can sign in (no
// password, no passkey, no other link).
func (s *Service) UnlinkMine(ctx context.Context, p identity.Principal, providerID string) error {
	u, err := s.self(ctx, p)
	if err != nil {
		return err
	}
	return s.unlink(ctx, u, providerID, true, map[string]any{"by": "self"})
}

func (s *Service) unlink(ctx context.Context, u identity.User, providerID string, keepOneWay bool, meta map[string]any) error {
	ls, err := s.st.ListFederatedIdentities(ctx, u.TenantID, u.ID)
	if err != nil {
		return err
	}
	found := false
	for _, l := range ls {
		found = found || l.ProviderID == providerID
	}
	if !found {
		return fault.E(fault.NotFound, "linked identity not found")
	}
	if keepOneWay && len(ls) == 1 && u.PasswordHash == "" {
		n := 0
		if s.cfg.Passkeys != nil {
			if n, err = s.cfg.Passkeys.CountPasskeys(ctx, u.TenantID, u.ID); err != nil {
				return err
			}
		}
		if n == 0 {
			return fault.E(fault.Conflict, "this identity is the last way to sign in to the account: set a password or add a passkey first")
		}
	}
	meta["provider"], meta["user"] = providerID, map[string]any{"id": u.ID.String(), "name": u.Name}
	if err := s.st.DeleteFederatedIdentity(ctx, u.TenantID, u.ID, providerID); err != nil {
		return err
	}
	return s.record(ctx, u.TenantID, ActionUnlink, nil, meta)
}

func (s *Service) adminUser(ctx context.Context, by identity.Principal, tenantID, userID string) (identity.User, error) {
	if err := checkAdmin(by, tenantID); err != nil {
		return identity.User{}, err
	}
	id, err := identity.ParseObjectID(userID, "")
	if err != nil {
		return identity.User{}, fault.E(fault.NotFound, "user not found")
	}
	return s.cfg.Users.GetUser(ctx, tenantID, id)
}

// UserLinks lists a user's linked identities for an administrator.
func (s *Service) UserLinks(ctx context.Context, by identity.Principal, tenantID, userID string) ([]LinkView, error) {
	u, err := s.adminUser(ctx, by, tenantID, userID)
	if err != nil {
		return nil, err
	}
	return s.links(ctx, u)
}

// LinkInput is an administrator's link of an upstream identity to a user
// (a migration: the administrator vouches for it).
type LinkInput struct {
	ProviderID string `json:"providerId"`
	Subject    string `json:"subject"`
}

// LinkUser links an upstream identity to a user: the provider must be the
// tenant's; an identity linked already, or a second link of the provider
// for the user, is Conflict.
func (s *Service) LinkUser(ctx context.Context, by identity.Principal, tenantID, userID string, in LinkInput) (LinkView, error) {
	u, err := s.adminUser(ctx, by, tenantID, userID)
	if err != nil {
		return LinkView{}, err
	}
	meta := map[string]any{"provider": in.ProviderID, "sub": in.Subject, "user": map[string]any{"id": u.ID.String(), "name": u.Name}, "by": "admin"}
	fail := func(err error) (LinkView, error) { return LinkView{}, s.record(ctx, tenantID, ActionLink, err, meta) }
	if _, err := s.st.GetIdentityProvider(ctx, tenantID, in.ProviderID); fault.Is(fault.NotFound, err) {
		return fail(invalid("providerId", "providerId names no identity provider of the tenant"))
	} else if err != nil {
		return LinkView{}, err
	}
	if !textOK(in.Subject, 255) {
		return fail(invalid("subject", "subject is required (at most 255 characters)"))
	}
	l := Link{TenantID: tenantID, ProviderID: in.ProviderID, Subject: in.Subject, UserID: u.ID, LinkedAt: s.now()}
	if err := s.st.CreateFederatedIdentity(ctx, l); err != nil {
		if fault.Is(fault.Conflict, err) {
			err = fault.E(fault.Conflict, "the identity is linked already, or the user has a link of this provider", err)
		}
		return fail(err)
	}
	return linkViews([]Link{l})[0], s.record(ctx, tenantID, ActionLink, nil, meta)
}

// UnlinkUser removes a user's link of a provider for an administrator.
func (s *Service) UnlinkUser(ctx context.Context, by identity.Principal, tenantID, userID, providerID string) error {
	u, err := s.adminUser(ctx, by, tenantID, userID)
	if err != nil {
		return err
	}
	return s.unlink(ctx, u, providerID, false, map[string]any{"by": "admin"})
}

// LinkPending links the pending identity of a callback to the user who
// has just signed in with a password or passkey (both proven): the
// explicit link of the linking rules' step 2.
func (s *Service) LinkPending(ctx context.Context, pd Pending, u identity.User) error {
	meta := map[string]any{"provider": pd.ProviderID, "sub": pd.Subject, "email": pd.Email, "vouched": pd.Vouched,
		"user": map[string]any{"id": u.ID.String(), "name": u.Name}, "by": "sign-in"}
	if u.TenantID != pd.TenantID {
		return s.record(ctx, pd.TenantID, ActionLink, fault.E(fault.Invalid, MsgExpired), meta)
	}
	email := ""
	if pd.Vouched {
		email = pd.Email
	}
	err := s.st.CreateFederatedIdentity(ctx, Link{TenantID: pd.TenantID, ProviderID: pd.ProviderID, Subject: pd.Subject, UserID: u.ID, Email: email, LinkedAt: s.now()})
	if fault.Is(fault.Conflict, err) {
		err = fault.E(fault.Conflict, MsgLinkedElse, err)
	}
	return s.record(ctx, pd.TenantID, ActionLink, err, meta)
}

// ProviderName is a provider's display name ("" when it is gone).
func (s *Service) ProviderName(ctx context.Context, tenantID, id string) string {
	p, err := s.st.GetIdentityProvider(ctx, tenantID, id)
	if err != nil {
		return ""
	}
	return p.DisplayName
}

// AccountLink is a link as the account page shows it.
type AccountLink struct {
	LinkView
	DisplayName string
}

// AccountPage is what the signed-in user's page of connected accounts
// shows: its links, and the enabled providers it could connect.
func (s *Service) AccountPage(ctx context.Context, u identity.User) (links []AccountLink, available []Provider, err error) {
	ls, err := s.st.ListFederatedIdentities(ctx, u.TenantID, u.ID)
	if err != nil {
		return nil, nil, err
	}
	ps, err := s.EnabledProviders(ctx, u.TenantID, nil)
	if err != nil {
		return nil, nil, err
	}
	linked := map[string]bool{}
	for _, l := range linkViews(ls) {
		linked[l.ProviderID] = true
		name := s.ProviderName(ctx, u.TenantID, l.ProviderID)
		links = append(links, AccountLink{LinkView: l, DisplayName: name})
	}
	for _, p := range ps {
		if !linked[p.ID] {
			available = append(available, p)
		}
	}
	return links, available, nil
}

// UnlinkSession removes a link of the signed-in user of the account page
// (the last way to sign in: Conflict).
func (s *Service) UnlinkSession(ctx context.Context, u identity.User, providerID string) error {
	return s.unlink(ctx, u, providerID, true, map[string]any{"by": "account-page"})
}
