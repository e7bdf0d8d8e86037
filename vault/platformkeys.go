package vault

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/ids"
)

// The platform's own signing keys (API-keys.md, "The platform's own signing
// keys") are vault keys of the root tenant: platform-jwt (EC P-256: platform
// JWTs, access tokens, ES256 ID tokens, audit digests) and
// platform-oidc-rs256 (RSA-2048 ID tokens, made on first use). They are
// kept under PlatformTenant with PurposeSigning, since they exist before
// the root tenant does (New makes them, Bootstrap the tenant later); a root
// tenant-admin finds them by name or id in the root tenant's vault. They
// are undeletable and unexportable; sign, revoke and destroy on them are
// 403: only the platform signs, and a compromise is handled by rotation.
const (
	PurposeSigning = "signing"
	PlatformTenant = "platform"

	KeyPlatformJWT   = "platform-jwt"
	KeyPlatformRS256 = "platform-oidc-rs256"
	// KeyPlatformPS256 signs the PS256 ID tokens of FAPI 2.0 clients.
	KeyPlatformPS256 = "platform-oidc-ps256"

	// PrepublishFor is how long a rotation's version of a signing key is
	// pending: twice the JWKS max-age (300 s), so that every cached JWKS
	// holds it before any token does.
	PrepublishFor = 10 * time.Minute
	// DefaultSigningKeyRotation is the period of -signing-key-rotation.
	DefaultSigningKeyRotation = 720 * time.Hour
	// DefaultTokenLife is the longest token life assumed when Config's
	// TokenLife is zero.
	DefaultTokenLife = time.Hour
	// retireSlack is added to the longest token life before a retiring
	// version is trimmed.
	retireSlack = 5 * time.Minute
)

// ActionSigningKeyMigrate records the platform's stored signing keys
// becoming versions of its vault keys.
const ActionSigningKeyMigrate = "vault.signing-key.migrate"

// signingKeys lists the platform's signing keys: name, JWS algorithm and type.
var signingKeys = []struct {
	name, alg string
	spec      KeySpec
}{
	{KeyPlatformJWT, identity.AlgES256, KeySpec{Algorithm: AlgorithmEC, Size: 256, Curve: CurveP256}},
	{KeyPlatformRS256, identity.AlgRS256, KeySpec{Algorithm: AlgorithmRSA, Size: 2048}},
	{KeyPlatformPS256, identity.AlgPS256, KeySpec{Algorithm: AlgorithmRSA, Size: 2048}},
}

// isSigningKey reports whether k is one of the platform's signing keys.
func isSigningKey(k Key) bool { return k.Purpose == PurposeSigning }

// errPlatformKey refuses what only the platform does with its signing keys.
func errPlatformKey(what string) error {
	return fault.E(fault.Forbidden, "the platform's signing keys are not "+what+": only the platform signs with them, and a compromise is handled by rotation (rotate with immediate, then raise minDecryptionVersion)")
}

// SetupSigningKeys makes the platform's signing keys vault keys, once per
// store, under the store's lock: the keys kept so far (legacy, from the
// identity Store's own table) become their versions with their kids, the
// newest ES256 key and the oldest RS256 key current, so that every token
// issued before keeps verifying. platform-jwt is made when there was none.
// Then both keys' autoRotatePeriodSeconds is set to period (0: off), audited
// when it changes; a key made later (RS256, on first use) takes it too.
func (s *Service) SetupSigningKeys(ctx context.Context, legacy []identity.StoredSigningKey, period time.Duration) error {
	secs := int64(period / time.Second)
	if err := checkPeriod(secs); err != nil {
		return fmt.Errorf("vault: signing-key rotation %s: %w", period, err)
	}
	s.signingPeriod.Store(secs)
	return s.withLock(ctx, "vault-signing-keys", func(ctx context.Context) error {
		for _, sk := range signingKeys {
			k, err := s.cfg.Store.GetKeyByName(ctx, PlatformTenant, sk.name)
			if fault.Is(fault.NotFound, err) {
				var olds []identity.StoredSigningKey
				for _, l := range legacy {
					if l.Alg == sk.alg {
						olds = append(olds, l)
					}
				}
				if len(olds) == 0 && sk.alg != identity.AlgES256 {
					continue // made on first use
				}
				k, err = s.makeSigningKey(ctx, sk.name, sk.spec, olds)
			}
			if err != nil {
				return err
			}
			if k.AutoRotatePeriodSeconds != secs {
				if err := s.setSigningPeriod(ctx, k, secs); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// setSigningPeriod stores a signing key's period, audited.
func (s *Service) setSigningPeriod(ctx context.Context, k Key, secs int64) error {
	_, _, err := s.updateSys(ctx, k.TenantID, k.ID, func(k Key, now time.Time) (KeyUpdate, []Change, error) {
		from := k.AutoRotatePeriodSeconds
		k.AutoRotatePeriodSeconds = secs
		k.scheduleRotation(now)
		return KeyUpdate{Key: k}, []Change{{ActionUpdate, map[string]any{
			"fields": []string{"autoRotatePeriodSeconds"}, "from": from, "to": secs, "reason": "-signing-key-rotation"}}}, nil
	})
	return err
}

// makeSigningKey stores a signing key: the legacy keys as its versions
// (ES256 oldest first; RS256 with the oldest, the one that signed, last so
// that it is current), or one generated version.
func (s *Service) makeSigningKey(ctx context.Context, name string, spec KeySpec, legacy []identity.StoredSigningKey) (Key, error) {
	now := s.now()
	var (
		mats  []*material
		times []time.Time
		kids  []string
	)
	defer func() {
		for _, m := range mats {
			m.wipe()
		}
	}()
	if spec.Algorithm == AlgorithmRSA && len(legacy) > 1 {
		legacy = append(slices.Clone(legacy[1:]), legacy[0])
	}
	for _, l := range legacy {
		raw := slices.Clone(l.PKCS8)
		o, err := openRaw(spec, raw)
		if err != nil {
			clear(raw)
			return Key{}, fault.E(fault.Internal, fmt.Errorf("vault: stored signing key %s: %w", l.Kid, err))
		}
		if o.kid != l.Kid {
			return Key{}, fault.E(fault.Internal, fmt.Errorf("vault: stored signing key %s has kid %s as a version", l.Kid, o.kid))
		}
		mats = append(mats, &material{spec: spec, raw: raw, public: o.spki})
		times = append(times, utc(l.CreatedAt))
		kids = append(kids, l.Kid)
	}
	if len(mats) == 0 {
		m, err := generate(spec)
		if err != nil {
			return Key{}, err
		}
		mats, times = append(mats, m), append(times, now)
	}
	k := Key{
		ID: ids.NewGUID(), TenantID: PlatformTenant, Name: name, Algorithm: spec.Algorithm, Size: spec.Size, Curve: spec.Curve,
		UsageMask: UsageSign | UsageVerify, State: StateActive, CreatedAt: now, UpdatedAt: now, ObjectType: ObjectTypePrivateKey,
		Unexportable: true, Undeletable: true, Origin: OriginGenerated, ActivationDate: &now, Purpose: PurposeSigning,
		AutoRotatePeriodSeconds: s.signingPeriod.Load(),
	}
	k.Version, k.LatestVersion = len(mats)-1, len(mats)-1
	k.scheduleRotation(now)
	k.NextEventAt = k.nextEvent()
	c := KeyCreate{Key: k}
	for i, m := range mats {
		v, err := m.version(k, i, times[i], times[i], s.cfg.Sealer)
		if err != nil {
			return Key{}, err
		}
		c.Versions = append(c.Versions, v)
	}
	change := Change{ActionCreate, map[string]any{"algorithm": k.Algorithm, "size": k.Size, "curve": k.Curve, "purpose": PurposeSigning}}
	if len(kids) > 0 {
		change = Change{ActionSigningKeyMigrate, map[string]any{"kids": kids, "version": k.Version}}
	}
	late, err := s.buildRecords(ctx, &c.Audit, s.systemEntries(ctx, k, []Change{change}))
	if err != nil {
		return Key{}, err
	}
	// One transaction: a process killed while making the key leaves none,
	// rather than a key missing some earlier keys' versions, or unaudited.
	if err := s.cfg.Store.CreateKey(ctx, c); err != nil {
		if fault.Is(fault.Conflict, err) { // made meanwhile by a process without the lock
			return s.cfg.Store.GetKeyByName(ctx, PlatformTenant, name)
		}
		return Key{}, err
	}
	s.recordLate(ctx, late)
	s.announce(ctx)
	if s.cfg.SigningKeysChanged != nil {
		s.cfg.SigningKeysChanged(ctx)
	}
	return k, nil
}

// PlatformSigningKeys is the vault's platform signing keys as the identity
// key set reads them (identity.SigningKeySource).
type PlatformSigningKeys struct{ s *Service }

// SigningKeySource returns the platform's signing keys as an
// identity.SigningKeySource.
func (s *Service) SigningKeySource() PlatformSigningKeys { return PlatformSigningKeys{s} }

var _ identity.SigningKeySource = PlatformSigningKeys{}

// SigningKeys returns the published versions of both keys: pending,
// current and retiring ones, that is every version not trimmed and not
// below minDecryptionVersion.
func (ps PlatformSigningKeys) SigningKeys(ctx context.Context) ([]identity.SigningVersion, error) {
	s := ps.s
	var out []identity.SigningVersion
	for _, sk := range signingKeys {
		k, err := s.cfg.Store.GetKeyByName(ctx, PlatformTenant, sk.name)
		if fault.Is(fault.NotFound, err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		vs, err := s.cfg.Store.ListKeyVersions(ctx, PlatformTenant, k.ID)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if v.Version < k.MinDecryptionVersion || v.Version < k.MinAvailableVersion || v.Material == nil || Destroyed(k.State) {
				continue
			}
			o, err := s.cache.opened(ctx, s, k, v.Version)
			if err != nil {
				return nil, err
			}
			sv := identity.SigningVersion{Alg: sk.alg, Kid: o.kid, Version: v.Version, Activation: v.ActivationDate}
			switch {
			case o.ecPriv != nil:
				sv.Signer, sv.Public = o.ecPriv, o.ecPub
			case o.rsaPriv != nil:
				sv.Signer, sv.Public = o.rsaPriv, o.rsaPub
			default:
				return nil, fault.E(fault.Internal, "vault: signing key "+sk.name+" is not EC or RSA")
			}
			out = append(out, sv)
		}
	}
	return out, nil
}

// SigningKeysStamp is both keys' revisions: any change to them (a
// rotation, a raised minimum, a trim) moves it.
func (ps PlatformSigningKeys) SigningKeysStamp(ctx context.Context) (string, error) {
	stamp := ""
	for _, sk := range signingKeys {
		k, err := ps.s.cfg.Store.GetKeyByName(ctx, PlatformTenant, sk.name)
		if fault.Is(fault.NotFound, err) {
			stamp += "-/"
			continue
		}
		if err != nil {
			return "", err
		}
		stamp += k.ID + ":" + strconv.FormatInt(k.Revision, 10) + "/"
	}
	return stamp, nil
}

// CreateSigningKey makes the signing key of alg when there is none.
func (ps PlatformSigningKeys) CreateSigningKey(ctx context.Context, alg string) error {
	s := ps.s
	for _, sk := range signingKeys {
		if sk.alg != alg {
			continue
		}
		return s.withLock(ctx, "vault-signing-keys", func(ctx context.Context) error {
			_, err := s.cfg.Store.GetKeyByName(ctx, PlatformTenant, sk.name)
			if fault.Is(fault.NotFound, err) {
				_, err = s.makeSigningKey(ctx, sk.name, sk.spec, nil)
			}
			return err
		})
	}
	return fault.E(fault.Internal, "vault: no platform signing key for "+alg)
}

// PublicSigningKey is a version of a platform signing key as
// GET {audit_url}/v1/signing-keys lists it: its public half outlives the
// private one, so that archives signed long ago still verify.
type PublicSigningKey struct {
	identity.JWK
	Version        int       `json:"version"`
	Status         string    `json:"status"`
	ActivationDate time.Time `json:"activationDate"`
}

// PublicSigningKeys returns every version of the platform's signing keys,
// trimmed ones included, public halves only.
func (s *Service) PublicSigningKeys(ctx context.Context) ([]PublicSigningKey, error) {
	out := []PublicSigningKey{}
	for _, sk := range signingKeys {
		k, err := s.cfg.Store.GetKeyByName(ctx, PlatformTenant, sk.name)
		if fault.Is(fault.NotFound, err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		k, _ = k.At(s.cfg.Clock.Now())
		vs, err := s.versions(ctx, k)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			o, err := openPublic(k.spec(), v.Public)
			if err != nil {
				return nil, fault.E(fault.Internal, err)
			}
			var pub crypto.PublicKey = o.ecPub
			if o.rsaPub != nil {
				pub = o.rsaPub
			}
			j, ok := identity.JWKOf(pub, v.KID, sk.alg)
			if !ok {
				return nil, fault.E(fault.Internal, errors.New("vault: a signing key's public half is not EC or RSA"))
			}
			out = append(out, PublicSigningKey{JWK: j, Version: v.Version, Status: v.Status, ActivationDate: v.ActivationDate})
		}
	}
	return out, nil
}

// TrimSigningKeys erases the private half of every retiring version whose
// tokens have all expired: a version is kept until its successor's
// activation plus the longest token life (Config.TokenLife) plus 5
// minutes; then minDecryptionVersion and minAvailableVersion move above
// it, it leaves the JWKS and only its public half stays. Every process
// runs it (Run); the compare-and-set makes it happen once.
func (s *Service) TrimSigningKeys(ctx context.Context) error {
	var errs []error
	for _, sk := range signingKeys {
		k, err := s.cfg.Store.GetKeyByName(ctx, PlatformTenant, sk.name)
		if fault.Is(fault.NotFound, err) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vs, err := s.cfg.Store.ListKeyVersions(ctx, PlatformTenant, k.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		act := map[int]time.Time{}
		for _, v := range vs {
			act[v.Version] = v.ActivationDate
		}
		retired := func(k Key, now time.Time) int {
			n := k.MinAvailableVersion
			for n < k.Version {
				succ, ok := act[n+1]
				if !ok || now.Before(succ.Add(s.tokenLife()+retireSlack)) {
					break
				}
				n++
			}
			return n
		}
		k, _ = k.At(s.cfg.Clock.Now())
		if retired(k, s.now()) <= k.MinAvailableVersion {
			continue
		}
		k, _, err = s.updateSys(ctx, k.TenantID, k.ID, func(k Key, now time.Time) (KeyUpdate, []Change, error) {
			n := retired(k, now)
			if n <= k.MinAvailableVersion {
				return KeyUpdate{}, nil, errSkip
			}
			from := k.MinAvailableVersion
			k.MinAvailableVersion = n
			k.MinDecryptionVersion = max(k.MinDecryptionVersion, n)
			if k.MinEncryptionVersion != 0 {
				k.MinEncryptionVersion = max(k.MinEncryptionVersion, n)
			}
			return KeyUpdate{Key: k, EraseBelow: n}, []Change{{ActionTrim, map[string]any{
				"from": from, "minAvailableVersion": n, "reason": "retired"}}}, nil
		})
		if errors.Is(err, errSkip) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.cache.dropVersions(k, k.MinAvailableVersion)
	}
	return errors.Join(errs...)
}

// tokenLife is Config.TokenLife or DefaultTokenLife.
func (s *Service) tokenLife() time.Duration {
	if s.cfg.TokenLife > 0 {
		return s.cfg.TokenLife
	}
	return DefaultTokenLife
}

// signingKeyFor finds a platform signing key that r names, for a root
// tenant-admin (the keys live under PlatformTenant); fault.NotFound for
// anyone else and any other name.
func (s *Service) signingKeyFor(ctx context.Context, p identity.Principal, r KeyRef) (Key, error) {
	if !p.IsRootAdmin() {
		return Key{}, errNoKey
	}
	var (
		k   Key
		err error
	)
	if id, ok := r.isID(); ok {
		k, err = s.cfg.Store.GetKey(ctx, PlatformTenant, id)
	} else {
		k, err = s.cfg.Store.GetKeyByName(ctx, PlatformTenant, r.Key)
	}
	if err != nil || !isSigningKey(k) {
		return Key{}, fault.E(fault.NotFound, "vault key not found", err)
	}
	k, _ = k.At(s.cfg.Clock.Now())
	return k, nil
}
