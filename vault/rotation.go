package vault

import (
	"context"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// MaxEncryptionsPerVersion is how many encryptions with random nonces an
// AES or ChaCha20 version makes before it is rotated: 2^31, inside NIST SP
// 800-38D's 2^32 bound for 96-bit random nonces, leaving room for the
// counts a crash loses (they are added to the store each minute).
const MaxEncryptionsPerVersion = 1 << 31

// Rotate adds a version to a generated Active key: version latestVersion+1,
// current at once, or pending until activationDate when that is in the
// future. Concurrent rotations, on any process, each add exactly one
// version (compare-and-set on the key). Imported and public-only keys and
// keys in any other state than Active are fault.Conflict.
func (s *Service) Rotate(ctx context.Context, p identity.Principal, r KeyRef, activationDate *time.Time) (Version, error) {
	return s.RotateKey(ctx, p, r, RotateRequest{ActivationDate: activationDate})
}

// RotateRequest is a rotate request's body.
type RotateRequest struct {
	// ActivationDate, when in the future, makes the version pending
	// until then.
	ActivationDate *time.Time
	// Immediate makes a platform signing key's version current at once
	// (after a compromise); without it, and without ActivationDate, the
	// version is pending for PrepublishFor so that cached JWKS documents
	// hold it before any token does. Other keys rotate at once anyway.
	Immediate bool
}

// RotateKey is Rotate with the whole body.
func (s *Service) RotateKey(ctx context.Context, p identity.Principal, r KeyRef, req RotateRequest) (Version, error) {
	activationDate := req.ActivationDate
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if err := s.check(ctx, p, ScopeKeysAdmin, AdminRotate, ActionRotate, meta); err != nil {
		return Version{}, err
	}
	k, err := s.loadFor(ctx, p, r)
	var v Version
	if err == nil {
		meta["key"] = keyMeta(k)
		if req.Immediate && activationDate != nil {
			err = fault.E(fault.Invalid, fault.Field("immediate"), "immediate and activationDate contradict each other")
		} else {
			k, v, err = s.rotate(ctx, k, activationDate, req.Immediate, nil, "")
		}
	}
	if err == nil && req.Immediate {
		meta["immediate"] = true
	}
	if err == nil {
		meta["version"] = v.Version
		if v.Status == StatusPending {
			meta["activationDate"] = v.ActivationDate
		}
	}
	return v, s.record(ctx, p.TenantID, ActionRotate, err, meta)
}

// rotatable refuses to rotate k: only generated Active keys rotate.
func rotatable(k Key) error {
	switch k.Origin {
	case OriginImported:
		return fault.E(fault.Conflict, "an imported key is not rotated: import a version (POST .../versions with wrappedMaterial)")
	case OriginPublic:
		return fault.E(fault.Conflict, "a public-only key is not rotated")
	}
	return checkState(k, OpRotate)
}

// rotate generates a version and adds it to k (compare-and-set, retried).
// when, if not nil, decides on the fresh key whether the rotation is still
// wanted (the rotation pass: still due); it returns false to skip, and
// rotate then returns the key unchanged and a zero Version.
//
// A platform signing key's version is pending for PrepublishFor unless
// immediate or activationDate says otherwise. A rotation the platform
// makes by itself names its reason, and its record (actor "system") is
// written with the version.
func (s *Service) rotate(ctx context.Context, k Key, activationDate *time.Time, immediate bool, when func(Key, time.Time) bool, reason string) (Key, Version, error) {
	if err := rotatable(k); err != nil {
		return k, Version{}, err
	}
	// The material is made before the transaction, outside any lock: an
	// RSA-4096 key takes seconds. It does not depend on the version
	// number, which is only known inside.
	m, err := generate(k.spec())
	if err != nil {
		return k, Version{}, err
	}
	defer m.wipe()
	var (
		v       Version
		skipped bool
	)
	before := k
	k, _, err = s.updateSys(ctx, k.TenantID, k.ID, func(k Key, now time.Time) (KeyUpdate, []Change, error) {
		if when != nil && !when(k, now) {
			skipped = true
			return KeyUpdate{}, nil, errSkip
		}
		if err := rotatable(k); err != nil {
			return KeyUpdate{}, nil, err
		}
		n := k.LatestVersion + 1
		if n > maxVersion {
			return KeyUpdate{}, nil, fault.E(fault.Conflict, "the key has as many versions as it can have")
		}
		at := now
		if activationDate != nil && utc(*activationDate).After(now) {
			at = utc(*activationDate)
		} else if activationDate == nil && !immediate && isSigningKey(k) {
			at = now.Add(PrepublishFor)
		}
		var err error
		if v, err = m.version(k, n, now, at, s.cfg.Sealer); err != nil {
			return KeyUpdate{}, nil, err
		}
		k.LatestVersion = n
		if at.After(now) {
			k.Pending = append(k.Pending, PendingVersion{Version: n, At: at})
			v.Status = StatusPending
		} else {
			k.Version, k.Pending = n, nil
			v.Status = StatusCurrent
		}
		k.scheduleRotation(now)
		var sys []Change
		if reason != "" {
			sys = []Change{{ActionRotate, map[string]any{"version": n, "reason": reason}}}
		}
		return KeyUpdate{Key: k, Add: &v}, sys, nil
	})
	if skipped {
		return before, Version{}, nil
	}
	return k, v, err
}

// errSkip ends an update whose change is no longer wanted.
var errSkip = fault.E(fault.Conflict, "skipped")

// ImportVersion adds an imported version to an imported Active key:
// wrappedMaterial as at creation (see CreateRequest), of the key's type.
func (s *Service) ImportVersion(ctx context.Context, p identity.Principal, r KeyRef, wrapped, wrappingKid string) (Version, error) {
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if err := s.check(ctx, p, ScopeKeysAdmin, AdminImport, ActionImport, meta); err != nil {
		return Version{}, err
	}
	k, err := s.loadFor(ctx, p, r)
	var v Version
	if err == nil {
		meta["key"] = keyMeta(k)
		v, err = s.importVersion(ctx, k, wrapped, wrappingKid)
	}
	if err == nil {
		meta["version"] = v.Version
	}
	return v, s.record(ctx, p.TenantID, ActionImport, err, meta)
}

func (s *Service) importVersion(ctx context.Context, k Key, wrapped, wrappingKid string) (Version, error) {
	importable := func(k Key) error {
		if k.Origin != OriginImported {
			return fault.E(fault.Conflict, "versions are imported only into imported keys; rotate a generated key instead")
		}
		return checkState(k, OpImportVersion)
	}
	if err := importable(k); err != nil {
		return Version{}, err
	}
	m, err := s.unwrapImport(ctx, k.TenantID, k.spec(), wrapped, wrappingKid)
	if err != nil {
		return Version{}, err
	}
	defer m.wipe()
	var v Version
	_, _, err = s.update(ctx, k.TenantID, k.ID, func(k Key, now time.Time) (KeyUpdate, error) {
		if err := importable(k); err != nil {
			return KeyUpdate{}, err
		}
		n := k.LatestVersion + 1
		var err error
		if v, err = m.version(k, n, now, now, s.cfg.Sealer); err != nil {
			return KeyUpdate{}, err
		}
		v.Status = StatusCurrent
		k.LatestVersion, k.Version, k.Pending = n, n, nil
		return KeyUpdate{Key: k, Add: &v}, nil
	})
	return v, err
}

// Trim erases the material of the versions below minAvailable, at most the
// key's minDecryptionVersion (the lesser minimum), else fault.Conflict;
// their rows, dates, kids and public keys stay. It is irreversible: a
// lower minAvailable than the key's is fault.Conflict.
func (s *Service) Trim(ctx context.Context, p identity.Principal, r KeyRef, minAvailable *int) (Key, error) {
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if err := s.check(ctx, p, ScopeKeysAdmin, AdminTrim, ActionTrim, meta); err != nil {
		return Key{}, err
	}
	k, err := s.loadFor(ctx, p, r)
	if err == nil && minAvailable == nil {
		err = fault.E(fault.Invalid, fault.Field("minAvailableVersion"), "minAvailableVersion is required")
	}
	if err == nil {
		meta["key"], meta["minAvailableVersion"] = keyMeta(k), *minAvailable
		minAvailable := *minAvailable
		k, _, err = s.update(ctx, k.TenantID, k.ID, func(k Key, now time.Time) (KeyUpdate, error) {
			switch {
			case minAvailable < 0:
				return KeyUpdate{}, fault.E(fault.Invalid, fault.Field("minAvailableVersion"), "minAvailableVersion is not negative")
			case Destroyed(k.State):
				return KeyUpdate{}, fault.E(fault.Conflict, "the key is "+k.State+": its material is erased already")
			case minAvailable < k.MinAvailableVersion:
				return KeyUpdate{}, fault.E(fault.Conflict, fault.Field("minAvailableVersion"),
					fmt.Sprintf("versions below %d are trimmed already; trimming cannot be undone", k.MinAvailableVersion))
			case minAvailable > k.MinDecryptionVersion:
				return KeyUpdate{}, fault.E(fault.Conflict, fault.Field("minAvailableVersion"),
					fmt.Sprintf("minAvailableVersion %d is above minDecryptionVersion %d: raise the minimum versions first", minAvailable, k.MinDecryptionVersion))
			}
			k.MinAvailableVersion = minAvailable
			return KeyUpdate{Key: k, EraseBelow: minAvailable}, nil
		})
	}
	if err == nil {
		s.cache.dropVersions(k, k.MinAvailableVersion)
	}
	return k, s.record(ctx, p.TenantID, ActionTrim, err, meta)
}

// Run runs the vault's background work until ctx ends: every PollEvery it
// adds this process's encryption counts to the store (rotating versions
// that reach MaxEncryptionsPerVersion) and runs the rotation pass
// (RotateDue). On its way out it adds the counts once more.
func (s *Service) Run(ctx context.Context) error {
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		s.FlushCounters(fctx)
	}()
	for {
		s.FlushCounters(ctx)
		if _, err := s.RotateDue(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "vault: the rotation pass failed; it runs again", "err", err)
		}
		if err := s.TrimSigningKeys(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "vault: trimming retired signing-key versions failed; it runs again", "err", err)
		}
		if !clock.Sleep(s.cfg.Clock, s.cfg.PollEvery, ctx.Done()) {
			return nil
		}
	}
}

// claimBatch is how many keys one claim of the rotation pass takes.
const claimBatch = 16

// RotateDue runs the rotation pass once: it claims (under a lease of
// LeaseFor, so that one process handles each key) the keys whose dates or
// automatic rotation have come, stores and audits their date changes and
// rotates the due ones (actor "system"), and returns how many keys it
// handled. A process that dies holding a lease delays its keys until the
// lease lapses; another process then takes them. A rotation is added only
// while the key is still due, so a key handled twice rotates once.
func (s *Service) RotateDue(ctx context.Context) (int, error) {
	handled := 0
	for {
		keys, err := s.cfg.Store.ClaimKeys(ctx, s.cfg.Owner, s.now(), s.cfg.LeaseFor, claimBatch)
		if err != nil {
			return handled, err
		}
		for _, k := range keys {
			if err := s.advance(ctx, k); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "vault: a key's scheduled change failed; it is retried", "tenant", k.TenantID, "key", k.ID, "err", err)
			}
			if err := s.cfg.Store.ReleaseKey(context.WithoutCancel(ctx), k.TenantID, k.ID, s.cfg.Owner); err != nil {
				s.log.WarnContext(ctx, "vault: cannot release a key's lease; it lapses", "key", k.ID, "err", err)
			}
			handled++
		}
		if len(keys) < claimBatch || ctx.Err() != nil {
			return handled, ctx.Err()
		}
	}
}

// due reports whether k's automatic rotation has come at now.
func due(k Key, now time.Time) bool {
	return k.State == StateActive && k.Origin == OriginGenerated && k.AutoRotatePeriodSeconds > 0 &&
		k.NextRotationAt != nil && !now.Before(*k.NextRotationAt)
}

// advance does what has come for a claimed key: its date changes and its
// automatic rotation, each stored with its audit record (actor "system")
// in one transaction.
func (s *Service) advance(ctx context.Context, claimed Key) error {
	stored, err := s.cfg.Store.GetKey(ctx, claimed.TenantID, claimed.ID)
	if fault.Is(fault.NotFound, err) {
		return nil
	}
	if err != nil {
		return err
	}
	now := s.now()
	k, _ := stored.At(now)
	if due(k, now) {
		_, v, err := s.rotate(ctx, k, nil, false, func(k Key, now time.Time) bool { return due(k, now) }, "autoRotatePeriodSeconds")
		if err != nil || v.Status != "" {
			return err
		}
	}
	// Stores the dates' changes (updateSys audits them) and the key's
	// next event.
	_, _, err = s.update(ctx, k.TenantID, k.ID, func(k Key, now time.Time) (KeyUpdate, error) {
		return KeyUpdate{Key: k}, nil
	})
	return err
}

// systemEntries are the audit entries of changes the platform made to k
// by itself. A platform key's records go to the audit tenant when there
// is one (Config.AuditTenant).
func (s *Service) systemEntries(ctx context.Context, k Key, cs []Change) []audit.Entry {
	if len(cs) == 0 {
		return nil
	}
	tenant := k.TenantID
	if tenant == PlatformTenant && s.cfg.AuditTenant != nil {
		if t, err := s.cfg.AuditTenant(ctx); err == nil && t != "" {
			tenant = t
		}
	}
	out := make([]audit.Entry, 0, len(cs))
	for _, c := range cs {
		meta := map[string]any{"key": keyMeta(k)}
		for n, v := range c.Meta {
			meta[n] = v
		}
		out = append(out, audit.Entry{TenantID: tenant, Source: audit.SourcePlatform, Action: c.Action, ActorID: ActorSystem, Meta: meta})
	}
	return out
}

// buildRecords builds the records of entries (actor "system", no client)
// into *recs, to be written with the key; see audit.BuildRecords for the
// entries it gives back.
func (s *Service) buildRecords(ctx context.Context, recs *[]*audit.Record, entries []audit.Entry) (late []audit.Entry, err error) {
	*recs, late, err = audit.BuildRecords(audit.WithSystemActor(ctx, ActorSystem), s.cfg.Audit, entries)
	return late, err
}

// recordLate records entries that buildRecords gave back.
func (s *Service) recordLate(ctx context.Context, entries []audit.Entry) {
	audit.RecordLate(audit.WithSystemActor(ctx, ActorSystem), s.cfg.Audit, s.log, entries)
}

// FlushCounters adds this process's encryption counts to the store and
// rotates a current version that reached MaxEncryptionsPerVersion. Counts
// that cannot be stored are kept for the next flush.
func (s *Service) FlushCounters(ctx context.Context) {
	for _, e := range s.cache.counted() {
		n := e.o.encryptions.Swap(0)
		if n == 0 {
			continue
		}
		total, err := s.cfg.Store.AddKeyEncryptions(ctx, e.tenantID, e.keyID, e.version, n)
		if fault.Is(fault.NotFound, err) {
			continue // the key is gone
		}
		if err != nil {
			e.o.encryptions.Add(n)
			s.log.WarnContext(ctx, "vault: cannot store encryption counts; kept for the next flush", "key", e.keyID, "err", err)
			continue
		}
		if total >= MaxEncryptionsPerVersion {
			if err := s.rotateWornOut(ctx, e.tenantID, e.keyID, e.version); err != nil {
				s.log.WarnContext(ctx, "vault: cannot rotate a version that made 2^31 encryptions", "key", e.keyID, "version", e.version, "err", err)
			}
		}
	}
}

// rotateWornOut rotates a key whose current version version has made
// MaxEncryptionsPerVersion encryptions, if it is still current.
func (s *Service) rotateWornOut(ctx context.Context, tenantID, id string, version int) error {
	k, err := s.cfg.Store.GetKey(ctx, tenantID, id)
	if err != nil {
		return err
	}
	k, _ = k.At(s.now())
	if k.Version != version || rotatable(k) != nil {
		return nil
	}
	ctx = audit.WithSystemActor(ctx, ActorSystem)
	_, _, err = s.rotate(ctx, k, nil, false, func(k Key, _ time.Time) bool { return k.Version == version }, "encryptions")
	return err
}
