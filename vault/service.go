package vault

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/ids"
	"github.com/latchkey/latchkey/seal"
)

// Defaults of the rotation pass (see Service.Run).
const (
	// DefaultLeaseFor is how long a process holds a key it claimed for the
	// rotation pass: long enough for an RSA-4096 key's generation.
	DefaultLeaseFor = 2 * time.Minute
	// DefaultPollEvery is how often the pass looks for due keys, and how
	// often encryption counters are added to the store.
	DefaultPollEvery = time.Minute
	// cacheTTL bounds how long a key read by this process is used before
	// it is read again, so that a change made by another process holds
	// here within it even when no notification arrives.
	cacheTTL = 5 * time.Second
)

// Config configures a Service. Store, Sealer, Audit and Clock are required.
type Config struct {
	Store  Store
	Sealer *seal.Sealer
	Audit  audit.Sink
	Clock  clock.Clock
	Logger *slog.Logger
	// Announce, when set, tells every process sharing the store that keys
	// changed (store/postgres: NOTIFY latchkey_vault_keys), so that their
	// caches read them again at once rather than within 5 seconds; they
	// call KeysChanged when told.
	Announce func(ctx context.Context) error
	// Lock, when set, runs fn under a lock named name that one caller in
	// any process holds at a time (store/postgres); without it fn runs
	// directly and the store's Conflicts suffice.
	Lock func(ctx context.Context, name string, fn func(ctx context.Context) error) error
	// Owner names this process in the rotation pass's leases; default a
	// random GUID.
	Owner string
	// LeaseFor and PollEvery tune the rotation pass; zero means
	// DefaultLeaseFor and DefaultPollEvery.
	LeaseFor  time.Duration
	PollEvery time.Duration
	// TokenLife is the longest life of a token the platform signs: a
	// retiring version of a signing key is trimmed that long (plus 5
	// minutes) after its successor's activation. Zero means
	// DefaultTokenLife (1 hour).
	TokenLife time.Duration
	// AuditTenant, when set, names the tenant whose audit log records the
	// platform's own changes to its signing keys (the root tenant); they
	// are recorded under PlatformTenant when it is unset or fails.
	AuditTenant func(ctx context.Context) (string, error)
	// SigningKeysChanged, when set, is called after this process changed
	// one of the platform's signing keys (made, rotated, its minimum
	// raised, trimmed), before the change is answered: the platform's key
	// set reads them again.
	SigningKeysChanged func(ctx context.Context)
}

// Service is the vault of every tenant.
//
// Who may use it: a platform JWT's tenant-admin (everything), its
// application-owner (everything but export, and of administration only
// create, update, rotate and delete), or an OAuth access token with the
// vault:* scopes of each route (see API-keys.md, "Access"); a key with
// grants answers cryptographic operations only to the principals they
// name. Keys are only ever those of the caller's own tenant.
type Service struct {
	cfg   Config
	log   *slog.Logger
	cache *cache
	// signingPeriod is the signing keys' period in seconds
	// (SetupSigningKeys), for a key made later.
	signingPeriod atomic.Int64
}

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Owner == "" {
		cfg.Owner = ids.NewGUID()
	}
	if cfg.LeaseFor <= 0 {
		cfg.LeaseFor = DefaultLeaseFor
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	return &Service{cfg: cfg, log: cfg.Logger, cache: newCache()}
}

// Audit actions.
const (
	ActionCreate   = "vault.key.create"
	ActionList     = "vault.key.list"
	ActionRead     = "vault.key.read"
	ActionDelete   = "vault.key.delete"
	ActionActivate = "vault.key.activate"
	ActionRevoke   = "vault.key.revoke"
	ActionDestroy  = "vault.key.destroy"
	ActionRotate   = "vault.key.rotate"
	ActionTrim     = "vault.key.trim"
	ActionUpdate   = "vault.key.update"
	ActionImport   = "vault.key.import"
	ActionExport   = "vault.key.export"
	// ActionCrypto prefixes the operations' actions: vault.crypto.encrypt, ...
	ActionCrypto = "vault.crypto."
	// ActionWrappingKey is the wrapping key's creation and rotation.
	ActionWrappingKey = "vault.wrapping-key.rotate"
)

// ActorSystem is the audit actor of what the rotation pass does.
const ActorSystem = "system"

// MayUse reports whether p may use its tenant's vault with a platform JWT.
func MayUse(p identity.Principal) bool {
	return p.TenantID != "" && (p.HasRole(identity.RoleTenantAdmin) || p.HasRole(identity.RoleApplicationOwner))
}

func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourcePlatform, Action: action, Err: err, Meta: meta})
}

// check authorizes p and audits a refusal under action.
func (s *Service) check(ctx context.Context, p identity.Principal, scope, admin, action string, meta map[string]any) error {
	err := authorize(p, scope, admin)
	if err == nil {
		return nil
	}
	if p.TenantID == "" {
		return err
	}
	return s.record(ctx, p.TenantID, action, err, withClient(meta, p))
}

// withClient adds the caller's client_id to meta, when it has one.
func withClient(meta map[string]any, p identity.Principal) map[string]any {
	if p.ClientID != "" {
		if meta == nil {
			meta = map[string]any{}
		}
		meta["client_id"] = p.ClientID
	}
	return meta
}

// now is the clock's time as the stores keep it.
func (s *Service) now() time.Time { return utc(s.cfg.Clock.Now()) }

// announce tells the other processes that keys changed; a failure only
// delays them (they read again within 5 seconds), so it is logged.
func (s *Service) announce(ctx context.Context) {
	if s.cfg.Announce == nil {
		return
	}
	if err := s.cfg.Announce(ctx); err != nil {
		s.log.WarnContext(ctx, "vault: cannot announce a key change; other processes see it within 5 seconds", "err", err)
	}
}

// KeysChanged makes this process read every key again on its next use:
// another process changed one (Config.Announce).
func (s *Service) KeysChanged() { s.cache.expireAll() }

// withLock runs fn under Config.Lock, or directly.
func (s *Service) withLock(ctx context.Context, name string, fn func(context.Context) error) error {
	if s.cfg.Lock == nil {
		return fn(ctx)
	}
	return s.cfg.Lock(ctx, name, fn)
}

// KeyRef names a key in a path: {key} is an id when it parses as a GUID,
// else a name; ByName (?type=name) forces a name.
type KeyRef struct {
	Key    string
	ByName bool
}

// isID reports whether r names a key by id, and the id in canonical form.
func (r KeyRef) isID() (string, bool) {
	if r.ByName {
		return "", false
	}
	id := strings.ToLower(r.Key)
	return id, ids.IsGUID(id)
}

// keyMeta is a key's audit identity.
func keyMeta(k Key) map[string]any { return map[string]any{"id": k.ID, "name": k.Name} }

// refMeta is a key reference's audit identity before the key is found.
func refMeta(r KeyRef) map[string]any {
	if id, ok := r.isID(); ok {
		return map[string]any{"id": id}
	}
	return map[string]any{"name": r.Key}
}

var errNoKey = fault.E(fault.NotFound, "vault key not found")

// load reads the tenant's key that r names, through the cache, as it is at
// now (see Key.At). Keys of the platform's own purposes are not found.
func (s *Service) load(ctx context.Context, tenantID string, r KeyRef) (Key, error) {
	if r.Key == "" {
		return Key{}, errNoKey
	}
	k, err := s.cache.key(ctx, s, tenantID, r)
	if fault.Is(fault.NotFound, err) {
		return Key{}, fault.E(fault.NotFound, "vault key not found", err)
	}
	if err != nil {
		return Key{}, err
	}
	if k.Purpose != PurposeTenant {
		return Key{}, errNoKey
	}
	k, _ = k.At(s.cfg.Clock.Now())
	return k, nil
}

// fresh reads the tenant's key from the store (not the cache), for a
// compare-and-set write.
func (s *Service) fresh(ctx context.Context, tenantID, id string) (Key, error) {
	k, err := s.cfg.Store.GetKey(ctx, tenantID, id)
	if fault.Is(fault.NotFound, err) {
		return Key{}, fault.E(fault.NotFound, "vault key not found", err)
	}
	return k, err
}

// update changes the tenant's key id with change, applied to the key as
// it is now, and stores it over the revision it was read at: read, change
// and write again when another writer came first (compare-and-set), so
// concurrent changes on any process each apply once. change returns the
// update to store; its Key's dates are applied (At) before it sees it.
func (s *Service) update(ctx context.Context, tenantID, id string, change func(k Key, now time.Time) (KeyUpdate, error)) (Key, KeyUpdate, error) {
	return s.updateSys(ctx, tenantID, id, func(k Key, now time.Time) (KeyUpdate, []Change, error) {
		u, err := change(k, now)
		return u, nil, err
	})
}

// updateSys is update whose change also returns changes the platform
// makes by itself, audited with actor "system" in the write's own
// transaction. The changes of the key's dates that the write stores (a
// passed activation or deactivation date, a pending version come due)
// are audited so too, whoever writes: once stored they are no longer
// changes, and nobody else would record them.
func (s *Service) updateSys(ctx context.Context, tenantID, id string, change func(k Key, now time.Time) (KeyUpdate, []Change, error)) (Key, KeyUpdate, error) {
	for attempt := 0; ; attempt++ {
		stored, err := s.fresh(ctx, tenantID, id)
		if err != nil {
			return Key{}, KeyUpdate{}, err
		}
		now := s.now()
		k, dated := stored.At(now)
		u, sys, err := change(k, now)
		if err != nil {
			return Key{}, KeyUpdate{}, err
		}
		u.Key.Revision = stored.Revision
		u.Key.UpdatedAt = now
		u.Key.NextEventAt = u.Key.nextEvent()
		entries := s.systemEntries(ctx, u.Key, append(dated, sys...))
		late, err := s.buildRecords(ctx, &u.Audit, entries)
		if err != nil {
			return Key{}, KeyUpdate{}, err
		}
		err = s.cfg.Store.UpdateKey(ctx, u)
		if errors.Is(err, ErrChanged) && attempt < 100 {
			continue
		}
		if err != nil {
			return Key{}, KeyUpdate{}, err
		}
		u.Key.Revision++
		s.cache.forget(u.Key)
		s.recordLate(ctx, late)
		s.announce(ctx)
		if isSigningKey(u.Key) && s.cfg.SigningKeysChanged != nil {
			s.cfg.SigningKeysChanged(ctx)
		}
		return u.Key, u, nil
	}
}

// CreateRequest is a create request's body (POST {base_url}/vault/keys2).
type CreateRequest struct {
	Name string
	KeySpec
	// Exportable, when set, says whether the private or secret material
	// may be exported wrapped; Unexportable is its negation (keys2's older
	// field); both set must agree. Default: not exportable.
	Exportable, Unexportable *bool
	Undeletable              bool
	UsageMask                *UsageMask
	ActivationDate           *time.Time
	DeactivationDate         *time.Time
	AutoRotatePeriodSeconds  int64
	Grants                   []Grant
	// WrappedMaterial imports the key (BYOK, see ImportBlob); WrappingKid
	// picks the wrapping key version it was wrapped for (default current).
	WrappedMaterial string
	WrappingKid     string
	// PublicKey (PEM) makes a public-only key of the key's type.
	PublicKey string
}

// createMeta is a create request's audit meta (no material).
func createMeta(req CreateRequest) map[string]any {
	return map[string]any{"key": map[string]any{"name": req.Name, "algorithm": req.Algorithm, "size": req.Size, "curve": req.Curve}}
}

// CreateKey makes a key in the caller's tenant: generated, imported
// (WrappedMaterial) or public-only (PublicKey). Names are unique per
// tenant: a duplicate is fault.Conflict.
func (s *Service) CreateKey(ctx context.Context, p identity.Principal, req CreateRequest) (Key, error) {
	action, admin := ActionCreate, AdminCreate
	if req.WrappedMaterial != "" {
		action, admin = ActionImport, AdminCreate
	}
	meta := withClient(createMeta(req), p)
	if err := s.check(ctx, p, ScopeKeysAdmin, admin, action, meta); err != nil {
		return Key{}, err
	}
	k, err := s.createKey(ctx, p.TenantID, req)
	if err != nil {
		return Key{}, s.record(ctx, p.TenantID, action, err, meta)
	}
	m := keyMeta(k)
	m["algorithm"], m["size"], m["curve"], m["origin"], m["state"] = k.Algorithm, k.Size, k.Curve, k.Origin, k.State
	meta["key"] = m
	return k, s.record(ctx, p.TenantID, action, nil, meta)
}

func (s *Service) createKey(ctx context.Context, tenantID string, req CreateRequest) (Key, error) {
	if err := checkName(req.Name); err != nil {
		return Key{}, err
	}
	if req.WrappedMaterial != "" && req.PublicKey != "" {
		return Key{}, fault.E(fault.Invalid, fault.Field("publicKey"), "send wrappedMaterial or publicKey, not both")
	}
	exportable := false
	switch {
	case req.Exportable != nil && req.Unexportable != nil && *req.Exportable == *req.Unexportable:
		return Key{}, fault.E(fault.Invalid, fault.Field("exportable"), "exportable and unexportable contradict each other")
	case req.Exportable != nil:
		exportable = *req.Exportable
	case req.Unexportable != nil:
		exportable = !*req.Unexportable
	}
	now := s.now()
	id := ids.NewGUID()
	var (
		k   Key
		v   Version
		err error
	)
	switch {
	case req.PublicKey != "":
		k, v, err = s.newPublicKey(tenantID, id, req, now)
	case req.WrappedMaterial != "":
		k, v, err = s.newImportedKey(ctx, tenantID, id, req, now)
	default:
		k, v, err = NewKey(tenantID, id, req.Name, req.KeySpec, now, s.cfg.Sealer)
	}
	if err != nil {
		return Key{}, err
	}
	k.Unexportable = !exportable
	if exportable && k.PublicOnly() {
		k.Unexportable = false // public halves are always exportable
	}
	k.Undeletable = req.Undeletable
	if req.UsageMask != nil {
		if *req.UsageMask&^k.UsageMask != 0 {
			return Key{}, fault.E(fault.Invalid, fault.Field("usageMask"), fmt.Sprintf("usageMask %d is wider than a %s key allows (%d); it may only be narrowed", *req.UsageMask, k.Algorithm, k.UsageMask))
		}
		k.UsageMask = *req.UsageMask
	}
	if req.Grants != nil {
		if k.Grants, err = checkGrants(req.Grants); err != nil {
			return Key{}, err
		}
	}
	if err := checkPeriod(req.AutoRotatePeriodSeconds); err != nil {
		return Key{}, err
	}
	if req.AutoRotatePeriodSeconds != 0 && k.Origin != OriginGenerated {
		return Key{}, fault.E(fault.Invalid, fault.Field("autoRotatePeriodSeconds"), "only generated keys rotate automatically")
	}
	k.AutoRotatePeriodSeconds = req.AutoRotatePeriodSeconds
	if req.ActivationDate != nil {
		a := utc(*req.ActivationDate)
		if a.After(now) {
			k.State, k.ActivationDate = StatePreActive, &a
		} else {
			k.ActivationDate = &a
		}
		v.ActivationDate = a
	}
	if req.DeactivationDate != nil {
		d := utc(*req.DeactivationDate)
		if k.ActivationDate != nil && d.Before(*k.ActivationDate) {
			return Key{}, fault.E(fault.Invalid, fault.Field("deactivationDate"), "deactivationDate is before activationDate")
		}
		k.DeactivationDate = &d
	}
	k.scheduleRotation(now)
	k.NextEventAt = k.nextEvent()
	if err := s.storeNew(ctx, k, v); err != nil {
		return Key{}, err
	}
	k, _ = k.At(s.cfg.Clock.Now())
	return k, nil
}

// storeNew stores a new key, turning a duplicate into the name's 409.
func (s *Service) storeNew(ctx context.Context, k Key, v Version) error {
	err := s.cfg.Store.CreateKey(ctx, KeyCreate{Key: k, Versions: []Version{v}})
	if fault.Is(fault.Conflict, err) {
		return fault.E(fault.Conflict, fault.Field("name"), "a vault key with this name exists", err)
	}
	return err
}

// scheduleRotation sets NextRotationAt from the period: a period from now.
func (k *Key) scheduleRotation(now time.Time) {
	if k.AutoRotatePeriodSeconds == 0 || k.Origin != OriginGenerated {
		k.NextRotationAt = nil
		return
	}
	next := now.Add(time.Duration(k.AutoRotatePeriodSeconds) * time.Second)
	k.NextRotationAt = &next
}

func checkPeriod(p int64) error {
	if p != 0 && (p < MinAutoRotatePeriod || p > MaxAutoRotatePeriod) {
		return fault.E(fault.Invalid, fault.Field("autoRotatePeriodSeconds"),
			fmt.Sprintf("autoRotatePeriodSeconds is 0 (off) or %d to %d", MinAutoRotatePeriod, MaxAutoRotatePeriod))
	}
	return nil
}

// ListKeys returns a page of the caller's tenant's keys and the total
// matching q. A bad skip, limit, algorithm or state is fault.Invalid.
func (s *Service) ListKeys(ctx context.Context, p identity.Principal, q ListQuery) ([]Key, int, ListQuery, error) {
	meta := withClient(map[string]any{"skip": q.Skip, "limit": q.Limit, "name": q.Name}, p)
	if err := s.check(ctx, p, ScopeKeysRead, "", ActionList, meta); err != nil {
		return nil, 0, q, err
	}
	q, err := q.Normalize()
	if err != nil {
		return nil, 0, q, s.record(ctx, p.TenantID, ActionList, err, meta)
	}
	keys, total, err := s.cfg.Store.ListKeys(ctx, p.TenantID, q)
	if err != nil {
		return nil, 0, q, s.record(ctx, p.TenantID, ActionList, err, meta)
	}
	now := s.cfg.Clock.Now()
	for i := range keys {
		keys[i], _ = keys[i].At(now)
	}
	meta["total"] = total
	return keys, total, q, s.record(ctx, p.TenantID, ActionList, nil, meta)
}

// GetKey returns a key of the caller's tenant; any other is fault.NotFound.
func (s *Service) GetKey(ctx context.Context, p identity.Principal, r KeyRef) (Key, error) {
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if err := s.check(ctx, p, ScopeKeysRead, "", ActionRead, meta); err != nil {
		return Key{}, err
	}
	k, err := s.loadFor(ctx, p, r)
	if err == nil {
		meta["key"] = keyMeta(k)
	}
	return k, s.record(ctx, p.TenantID, ActionRead, err, meta)
}

// loadFor reads the key r names for p's management routes, from the store:
// one of p's tenant's keys or, for a root tenant-admin, one of the
// platform's signing keys.
func (s *Service) loadFor(ctx context.Context, p identity.Principal, r KeyRef) (Key, error) {
	k, err := s.loadFresh(ctx, p.TenantID, r)
	if fault.Is(fault.NotFound, err) && p.IsRootAdmin() {
		if sk, serr := s.signingKeyFor(ctx, p, r); serr == nil {
			return sk, nil
		}
	}
	return k, err
}

// loadFresh reads a key from the store (not the cache): management reads
// show what is stored now.
func (s *Service) loadFresh(ctx context.Context, tenantID string, r KeyRef) (Key, error) {
	if r.Key == "" {
		return Key{}, errNoKey
	}
	var (
		k   Key
		err error
	)
	if id, ok := r.isID(); ok {
		k, err = s.cfg.Store.GetKey(ctx, tenantID, id)
	} else {
		k, err = s.cfg.Store.GetKeyByName(ctx, tenantID, r.Key)
	}
	if fault.Is(fault.NotFound, err) || (err == nil && k.Purpose != PurposeTenant) {
		return Key{}, fault.E(fault.NotFound, "vault key not found", err)
	}
	if err != nil {
		return Key{}, err
	}
	k, _ = k.At(s.cfg.Clock.Now())
	return k, nil
}

// DeleteKey removes a key of the caller's tenant, its versions and their
// material, in any state, unless it is undeletable (fault.Conflict).
func (s *Service) DeleteKey(ctx context.Context, p identity.Principal, r KeyRef) error {
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if err := s.check(ctx, p, ScopeKeysAdmin, AdminDelete, ActionDelete, meta); err != nil {
		return err
	}
	k, err := s.loadFor(ctx, p, r)
	if err == nil {
		meta["key"] = keyMeta(k)
		if isSigningKey(k) {
			err = errPlatformKey("deleted")
		} else if k.Undeletable {
			err = fault.E(fault.Conflict, "the key is undeletable; PATCH undeletable to false first")
		} else if err = s.cfg.Store.DeleteKey(ctx, k.TenantID, k.ID); fault.Is(fault.NotFound, err) {
			err = fault.E(fault.NotFound, "vault key not found", err)
		}
		if err == nil {
			s.cache.forget(k)
			s.announce(ctx)
		}
	}
	return s.record(ctx, p.TenantID, ActionDelete, err, meta)
}

// Patch is a PATCH body: the fields sent, each nil when absent.
type Patch struct {
	Name                    *string
	UsageMask               *UsageMask
	Exportable              *bool
	Unexportable            *bool
	Undeletable             *bool
	ActivationDate          *time.Time
	DeactivationDate        *time.Time
	AutoRotatePeriodSeconds *int64
	MinDecryptionVersion    *int
	MinEncryptionVersion    *int
	Grants                  *[]Grant
}

// UpdateKey applies a PATCH: usageMask may only narrow, exportable only go
// from true to false, activationDate only change while Pre-Active, and
// minEncryptionVersion >= minDecryptionVersion >= minAvailableVersion, all
// at most version (the ordering only among the values set).
func (s *Service) UpdateKey(ctx context.Context, p identity.Principal, r KeyRef, patch Patch) (Key, error) {
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if err := s.check(ctx, p, ScopeKeysAdmin, AdminUpdate, ActionUpdate, meta); err != nil {
		return Key{}, err
	}
	var fields []string
	k, err := s.loadFor(ctx, p, r)
	if err == nil && isSigningKey(k) {
		err = signingPatch(patch)
	}
	if err == nil {
		meta["key"] = keyMeta(k)
		k, _, err = s.update(ctx, k.TenantID, k.ID, func(k Key, now time.Time) (KeyUpdate, error) {
			var err error
			k, fields, err = applyPatch(k, patch, now)
			return KeyUpdate{Key: k}, err
		})
	}
	if err == nil {
		meta["key"] = keyMeta(k)
		meta["fields"] = fields
		if patch.MinDecryptionVersion != nil || patch.MinEncryptionVersion != nil {
			meta["minDecryptionVersion"], meta["minEncryptionVersion"] = k.MinDecryptionVersion, k.MinEncryptionVersion
		}
	}
	return k, s.record(ctx, p.TenantID, ActionUpdate, err, meta)
}

// signingPatch refuses the changes a platform signing key never takes: a
// new name (the platform finds it by name), exportable, deletable, usage
// or grants (only the platform signs), and dates that would end it.
func signingPatch(p Patch) error {
	switch {
	case p.Name != nil:
		return errPlatformKey("renamed")
	case p.Exportable != nil && *p.Exportable, p.Unexportable != nil && !*p.Unexportable:
		return errPlatformKey("exportable")
	case p.Undeletable != nil && !*p.Undeletable:
		return errPlatformKey("deletable")
	case p.UsageMask != nil, p.Grants != nil:
		return errPlatformKey("given other usage or grants")
	case p.ActivationDate != nil, p.DeactivationDate != nil:
		return errPlatformKey("deactivated")
	}
	return nil
}

// applyPatch is UpdateKey's rules; it returns the names of the fields that
// changed.
func applyPatch(k Key, p Patch, now time.Time) (Key, []string, error) {
	var fields []string
	set := func(name string) { fields = append(fields, name) }
	if p.Name != nil && *p.Name != k.Name {
		if err := checkName(*p.Name); err != nil {
			return k, nil, err
		}
		k.Name = *p.Name
		set("name")
	}
	if p.UsageMask != nil && *p.UsageMask != k.UsageMask {
		if *p.UsageMask&^k.UsageMask != 0 {
			return k, nil, fault.E(fault.Invalid, fault.Field("usageMask"), fmt.Sprintf("usageMask %d would widen the key's usage (%d); it may only be narrowed", *p.UsageMask, k.UsageMask))
		}
		k.UsageMask = *p.UsageMask
		set("usageMask")
	}
	if p.Exportable != nil || p.Unexportable != nil {
		var exportable bool
		switch {
		case p.Exportable != nil && p.Unexportable != nil && *p.Exportable == *p.Unexportable:
			return k, nil, fault.E(fault.Invalid, fault.Field("exportable"), "exportable and unexportable contradict each other")
		case p.Exportable != nil:
			exportable = *p.Exportable
		default:
			exportable = !*p.Unexportable
		}
		if exportable == k.Unexportable { // a change
			if exportable && !k.PublicOnly() {
				return k, nil, fault.E(fault.Conflict, fault.Field("exportable"), "an unexportable key never becomes exportable")
			}
			k.Unexportable = !exportable
			set("exportable")
		}
	}
	if p.Undeletable != nil && *p.Undeletable != k.Undeletable {
		k.Undeletable = *p.Undeletable
		set("undeletable")
	}
	if p.ActivationDate != nil {
		if k.State != StatePreActive {
			return k, nil, fault.E(fault.Conflict, fault.Field("activationDate"), "activationDate changes only while the key is Pre-Active; the key is "+k.State)
		}
		a := utc(*p.ActivationDate)
		k.ActivationDate = &a
		set("activationDate")
	}
	if p.DeactivationDate != nil {
		d := utc(*p.DeactivationDate)
		if k.ActivationDate != nil && d.Before(*k.ActivationDate) {
			return k, nil, fault.E(fault.Invalid, fault.Field("deactivationDate"), "deactivationDate is before activationDate")
		}
		k.DeactivationDate = &d
		set("deactivationDate")
	}
	if p.AutoRotatePeriodSeconds != nil && *p.AutoRotatePeriodSeconds != k.AutoRotatePeriodSeconds {
		if err := checkPeriod(*p.AutoRotatePeriodSeconds); err != nil {
			return k, nil, err
		}
		if *p.AutoRotatePeriodSeconds != 0 && k.Origin != OriginGenerated {
			return k, nil, fault.E(fault.Invalid, fault.Field("autoRotatePeriodSeconds"), "only generated keys rotate automatically")
		}
		k.AutoRotatePeriodSeconds = *p.AutoRotatePeriodSeconds
		k.scheduleRotation(now)
		set("autoRotatePeriodSeconds")
	}
	if p.MinDecryptionVersion != nil || p.MinEncryptionVersion != nil {
		dec, enc := k.MinDecryptionVersion, k.MinEncryptionVersion
		if p.MinDecryptionVersion != nil {
			dec = *p.MinDecryptionVersion
		}
		if p.MinEncryptionVersion != nil {
			enc = *p.MinEncryptionVersion
		}
		if err := checkMinimums(k, dec, enc); err != nil {
			return k, nil, err
		}
		if dec != k.MinDecryptionVersion {
			set("minDecryptionVersion")
		}
		if enc != k.MinEncryptionVersion {
			set("minEncryptionVersion")
		}
		k.MinDecryptionVersion, k.MinEncryptionVersion = dec, enc
	}
	if p.Grants != nil {
		gs, err := checkGrants(*p.Grants)
		if err != nil {
			return k, nil, err
		}
		k.Grants = gs
		set("grants")
	}
	slices.Sort(fields)
	return k, fields, nil
}

// checkMinimums is the ordering rule of the minimum versions.
func checkMinimums(k Key, dec, enc int) error {
	switch {
	case dec < 0 || enc < 0:
		return fault.E(fault.Invalid, fault.Field("minDecryptionVersion"), "minimum versions are not negative")
	case dec > k.Version:
		return fault.E(fault.Invalid, fault.Field("minDecryptionVersion"), fmt.Sprintf("minDecryptionVersion %d is above the key's version %d", dec, k.Version))
	case enc > k.Version:
		return fault.E(fault.Invalid, fault.Field("minEncryptionVersion"), fmt.Sprintf("minEncryptionVersion %d is above the key's version %d", enc, k.Version))
	case dec < k.MinAvailableVersion:
		return fault.E(fault.Invalid, fault.Field("minDecryptionVersion"), fmt.Sprintf("minDecryptionVersion %d is below minAvailableVersion %d (trimmed versions cannot decrypt)", dec, k.MinAvailableVersion))
	case enc != 0 && enc < dec:
		return fault.E(fault.Invalid, fault.Field("minEncryptionVersion"), fmt.Sprintf("minEncryptionVersion %d is below minDecryptionVersion %d", enc, dec))
	}
	return nil
}

// Activate moves a Pre-Active key to Active now.
func (s *Service) Activate(ctx context.Context, p identity.Principal, r KeyRef) (Key, error) {
	return s.transition(ctx, p, r, transition{route: "activate"}, AdminActivate, ActionActivate, nil, nil)
}

// Revoke moves a key to Compromised (reason "compromised", at
// compromiseDate, default now) or from Active to Deactivated (superseded,
// cessation, unspecified).
func (s *Service) Revoke(ctx context.Context, p identity.Principal, r KeyRef, reason string, compromiseDate *time.Time) (Key, error) {
	var bad error
	switch {
	case !slices.Contains([]string{ReasonCompromised, ReasonSuperseded, ReasonCessation, ReasonUnspecified}, reason):
		bad = fault.E(fault.Invalid, fault.Field("reason"), `reason is "compromised", "superseded", "cessation" or "unspecified"`)
	case compromiseDate != nil && reason != ReasonCompromised:
		bad = fault.E(fault.Invalid, fault.Field("compromiseDate"), `compromiseDate goes with reason "compromised"`)
	}
	return s.transition(ctx, p, r, transition{route: "revoke", reason: reason}, AdminRevoke, ActionRevoke, compromiseDate, bad)
}

// Destroy erases the material of every version of a Pre-Active,
// Deactivated or Compromised key; its record, dates and public keys stay.
func (s *Service) Destroy(ctx context.Context, p identity.Principal, r KeyRef) (Key, error) {
	return s.transition(ctx, p, r, transition{route: "destroy"}, AdminDestroy, ActionDestroy, nil, nil)
}

// transition applies a lifecycle route (the design's transition table);
// bad, when not nil, refuses the request's body once the key is found.
func (s *Service) transition(ctx context.Context, p identity.Principal, r KeyRef, t transition, admin, action string, date *time.Time, bad error) (Key, error) {
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if err := s.check(ctx, p, ScopeKeysAdmin, admin, action, meta); err != nil {
		return Key{}, err
	}
	k, err := s.loadFor(ctx, p, r)
	if err == nil && isSigningKey(k) {
		meta["key"], err = keyMeta(k), errPlatformKey(map[string]string{"activate": "activated", "revoke": "revoked", "destroy": "destroyed"}[t.route])
	}
	if err == nil && bad != nil {
		meta["key"], err = keyMeta(k), bad
	}
	var from string
	if err == nil {
		meta["key"] = keyMeta(k)
		k, _, err = s.update(ctx, k.TenantID, k.ID, func(k Key, now time.Time) (KeyUpdate, error) {
			from = k.State
			to, err := t.next(k.State)
			if err != nil {
				return KeyUpdate{}, err
			}
			k.State = to
			u := KeyUpdate{Key: k}
			switch {
			case t.route == "activate":
				u.Key.ActivationDate = &now
			case t.route == "revoke" && t.reason == ReasonCompromised:
				d := now
				if date != nil {
					d = utc(*date)
				}
				u.Key.CompromiseDate = &d
			case t.route == "revoke":
				u.Key.DeactivationDate = &now
			case t.route == "destroy":
				u.Key.DestroyDate, u.EraseAll = &now, true
			}
			return u, nil
		})
	}
	if err == nil {
		meta["from"], meta["to"] = from, k.State
		if t.reason != "" {
			meta["reason"] = t.reason
		}
		if t.route == "destroy" {
			s.cache.dropVersions(k, -1)
		}
	}
	return k, s.record(ctx, p.TenantID, action, err, meta)
}

// ListVersions returns a key's versions with their statuses.
func (s *Service) ListVersions(ctx context.Context, p identity.Principal, r KeyRef) ([]Version, error) {
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if err := s.check(ctx, p, ScopeKeysRead, "", ActionRead, meta); err != nil {
		return nil, err
	}
	k, err := s.loadFor(ctx, p, r)
	var vs []Version
	if err == nil {
		meta["key"] = keyMeta(k)
		vs, err = s.versions(ctx, k)
	}
	return vs, s.record(ctx, p.TenantID, ActionRead, err, meta)
}

// versions reads k's versions, with status and (for versions stored
// before kids existed) the kid filled in.
func (s *Service) versions(ctx context.Context, k Key) ([]Version, error) {
	vs, err := s.cfg.Store.ListKeyVersions(ctx, k.TenantID, k.ID)
	if err != nil {
		return nil, err
	}
	for i := range vs {
		if err := s.backfillPublic(ctx, k, &vs[i]); err != nil {
			return nil, err
		}
		vs[i].Status = k.StatusOf(vs[i].Version, vs[i].Material == nil && !k.PublicOnly())
	}
	return vs, nil
}

// GetVersion returns one version of a key; an unknown one is fault.NotFound.
func (s *Service) GetVersion(ctx context.Context, p identity.Principal, r KeyRef, n int) (Version, error) {
	meta := withClient(map[string]any{"key": refMeta(r), "version": n}, p)
	if err := s.check(ctx, p, ScopeKeysRead, "", ActionRead, meta); err != nil {
		return Version{}, err
	}
	k, err := s.loadFor(ctx, p, r)
	var v Version
	if err == nil {
		meta["key"] = keyMeta(k)
		v, err = s.cfg.Store.GetKeyVersion(ctx, k.TenantID, k.ID, n)
		if fault.Is(fault.NotFound, err) {
			err = fault.E(fault.NotFound, fmt.Sprintf("the key has no version %d", n), err)
		}
		if err == nil {
			err = s.backfillPublic(ctx, k, &v)
			v.Status = k.StatusOf(v.Version, v.Material == nil && !k.PublicOnly())
		}
	}
	return v, s.record(ctx, p.TenantID, ActionRead, err, meta)
}

// backfillPublic fills in the public key and kid of an asymmetric version
// stored without them (keys made before versions had them), from its
// material, and stores them.
func (s *Service) backfillPublic(ctx context.Context, k Key, v *Version) error {
	if v.Public != nil || Symmetric(k.Algorithm) || v.Material == nil {
		return nil
	}
	o, err := s.openStored(k, *v)
	if err != nil {
		return err
	}
	v.Public, v.KID = o.spki, o.kid
	return s.cfg.Store.SetKeyVersionPublic(ctx, k.TenantID, k.ID, v.Version, o.spki, o.kid)
}

// spec is k's type as a KeySpec.
func (k Key) spec() KeySpec {
	return KeySpec{Algorithm: k.Algorithm, Size: k.Size, Curve: k.Curve, Hash: k.Hash}
}

// openStored opens a stored version: its sealed material, or its public
// key for a public-only key. An erased version is fault.Conflict.
func (s *Service) openStored(k Key, v Version) (*opened, error) {
	if k.PublicOnly() {
		o, err := openPublic(k.spec(), v.Public)
		if err != nil {
			return nil, fault.E(fault.Internal, err)
		}
		return o, nil
	}
	if v.Material == nil {
		return nil, fault.E(fault.Conflict, fmt.Sprintf("version %d of the key is destroyed", v.Version))
	}
	raw, err := s.cfg.Sealer.Open(MaterialPurpose(k.TenantID, k.ID, v.Version), v.Material)
	if err != nil {
		return nil, fault.E(fault.Op("vault.open"), fault.Internal, err)
	}
	o, err := openRaw(k.spec(), raw)
	if err != nil {
		clear(raw)
		return nil, fault.E(fault.Op("vault.open"), fault.Internal, err)
	}
	return o, nil
}
