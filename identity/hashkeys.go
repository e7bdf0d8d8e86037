package identity

import (
	"context"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

// PasswordHashKey is a tenant's named key of an imported hash scheme:
// Firebase's hash config, whose signer key is sealed under the master key
// (seal purpose passwordHashKeyPurpose) and never returned.
type PasswordHashKey struct {
	TenantID        string
	Name            string
	Algorithm       string // SchemeFirebaseScrypt
	SealedSignerKey []byte
	SaltSeparator   []byte
	Rounds, MemCost int
	CreatedAt       time.Time
}

// passwordHashKeyPurpose binds a sealed signer key to its tenant and name,
// so that a row copied to another tenant does not open.
func passwordHashKeyPurpose(tenantID, name string) string {
	return "password-hash-key\x00" + tenantID + "\x00" + name
}

// Audit actions of the password-hash keys.
const (
	ActionHashKeyPut    = "password-hash-key.put"
	ActionHashKeyDelete = "password-hash-key.delete"
)

// PutPasswordHashKey creates or replaces a tenant's named Firebase hash
// config. The signer key is sealed; the audit record names the key and
// its parameters, never the signer key.
func (s *Service) PutPasswordHashKey(ctx context.Context, p Principal, tenantID, name, algorithm string, k FirebaseKey) error {
	if err := checkAdmin(p, tenantID); err != nil {
		return err
	}
	if _, err := s.st.GetTenant(ctx, tenantID); err != nil {
		return err
	}
	meta := map[string]any{"key": map[string]any{"name": name, "algorithm": algorithm, "rounds": k.Rounds, "memCost": k.MemCost}}
	fail := func(err error) error { return s.record(ctx, tenantID, ActionHashKeyPut, err, meta) }
	if err := textField("name", name, 1, 64); err != nil {
		return fail(err)
	}
	if algorithm != SchemeFirebaseScrypt {
		return fail(fault.E(fault.Invalid, fault.Field("algorithm"), "algorithm must be firebase-scrypt"))
	}
	if err := k.Check(); err != nil {
		return fail(fault.E(fault.Invalid, fault.Msg(fault.MessageOf(err))))
	}
	if s.cfg.Sealer == nil {
		return fail(fault.E(fault.Internal, "identity: no sealer configured"))
	}
	row := PasswordHashKey{TenantID: tenantID, Name: name, Algorithm: algorithm, SaltSeparator: k.SaltSeparator, Rounds: k.Rounds, MemCost: k.MemCost,
		SealedSignerKey: s.cfg.Sealer.Seal(passwordHashKeyPurpose(tenantID, name), k.SignerKey), CreatedAt: s.now()}
	return fail(s.st.PutPasswordHashKey(ctx, row))
}

// ListPasswordHashKeys returns a tenant's keys (signer keys stay sealed).
func (s *Service) ListPasswordHashKeys(ctx context.Context, p Principal, tenantID string) ([]PasswordHashKey, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return nil, err
	}
	if _, err := s.st.GetTenant(ctx, tenantID); err != nil {
		return nil, err
	}
	return s.st.ListPasswordHashKeys(ctx, tenantID)
}

// GetPasswordHashKey returns a tenant's named key (its signer key sealed).
func (s *Service) GetPasswordHashKey(ctx context.Context, p Principal, tenantID, name string) (PasswordHashKey, error) {
	if err := checkAdmin(p, tenantID); err != nil {
		return PasswordHashKey{}, err
	}
	k, err := s.st.GetPasswordHashKey(ctx, tenantID, name)
	if fault.Is(fault.NotFound, err) {
		err = fault.E(fault.NotFound, "password-hash key not found", err)
	}
	return k, err
}

// DeletePasswordHashKey deletes a tenant's named key; the users whose
// hashes name it can no longer log in with their password until it is put
// back.
func (s *Service) DeletePasswordHashKey(ctx context.Context, p Principal, tenantID, name string) error {
	if err := checkAdmin(p, tenantID); err != nil {
		return err
	}
	err := s.st.DeletePasswordHashKey(ctx, tenantID, name)
	if fault.Is(fault.NotFound, err) {
		err = fault.E(fault.NotFound, "password-hash key not found", err)
	}
	return s.record(ctx, tenantID, ActionHashKeyDelete, err, map[string]any{"key": map[string]any{"name": name}})
}

// hashKeys is the KeyLookup of a tenant's password-hash keys.
func (s *Service) hashKeys(tenantID string) KeyLookup {
	return func(ctx context.Context, name string) (FirebaseKey, error) {
		k, err := s.st.GetPasswordHashKey(ctx, tenantID, name)
		if err != nil {
			return FirebaseKey{}, err
		}
		if s.cfg.Sealer == nil {
			return FirebaseKey{}, fault.E(fault.Internal, "identity: no sealer configured")
		}
		signer, err := s.cfg.Sealer.Open(passwordHashKeyPurpose(tenantID, name), k.SealedSignerKey)
		if err != nil {
			return FirebaseKey{}, fault.E(fault.Internal, fmt.Sprintf("password-hash key %q does not open", name), err)
		}
		return FirebaseKey{SignerKey: signer, SaltSeparator: k.SaltSeparator, Rounds: k.Rounds, MemCost: k.MemCost}, nil
	}
}

// ActionPasswordRehash audits the replacement of a user's imported (or
// weaker argon2id) hash by argon2id at a login.
const ActionPasswordRehash = "user.password.rehash"

// verifyPassword is the one password check of every login path (the API
// login, the hosted sign-in page, the guide): it verifies password
// against u's stored hash, whatever its scheme, and, when it verifies and
// the hash is foreign or weaker than the configured argon2id, stores the
// argon2id hash computed in the same hashing slot by compare-and-swap (a
// password changed meanwhile survives), audited as user.password.rehash
// {from, to}. A failed upgrade is logged: the login still succeeds and
// the next one tries again. u may be the zero User (unknown name): the
// dummy hash runs and the answer is false.
func (s *Service) verifyPassword(ctx context.Context, t Tenant, u User, password string) (bool, error) {
	res, err := s.cfg.Hasher.Check(ctx, u.PasswordHash, password, s.hashKeys(t.ID))
	if err != nil || !res.OK {
		return false, err
	}
	if res.Upgrade != "" {
		s.upgradePassword(ctx, t, u, res.Upgrade)
	}
	return true, nil
}

func (s *Service) upgradePassword(ctx context.Context, t Tenant, u User, hash string) {
	from := PasswordSchemeOf(u.PasswordHash)
	err := s.st.UpdatePasswordHash(ctx, t.ID, u.ID, u.PasswordHash, hash, SchemeArgon2id)
	if fault.Is(fault.Conflict, err) {
		return // changed meanwhile: the newer hash stays
	}
	if err != nil {
		s.cfg.Logger.Warn("identity: rehashing a password failed; the next login tries again", "tenant", t.ID, "user", u.ID.String(), "err", err)
		return
	}
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	meta := map[string]any{"user": map[string]any{"id": u.ID.String(), "name": u.Name}, "from": from, "to": SchemeArgon2id}
	if err := s.record(ctx, t.ID, ActionPasswordRehash, nil, meta); err != nil {
		s.cfg.Logger.Warn("identity: a password rehash was stored but not audited", "tenant", t.ID, "user", u.ID.String(), "err", err)
	}
}
