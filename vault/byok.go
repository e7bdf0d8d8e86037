package vault

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/ids"
	"github.com/latchkey/latchkey/vault/internal/kwp"
)

// The wrapping key: each tenant's RSA-4096 key that imports are wrapped
// for (usage UnwrapKey), made on first read. After a rotation its previous
// version still unwraps for WrappingGrace.
const (
	wrappingKeySize = 4096
	// WrappingGrace is how long a wrapping key's previous version is
	// accepted after its rotation.
	WrappingGrace = 24 * time.Hour
	// MinExportWrappingBits is the smallest RSA key export wraps for.
	MinExportWrappingBits = 3072
	ephemeralKeySize      = 32 // AES-256
)

// WrappingKeyInfo is the wrapping key as GET {base_url}/vault/wrapping-key
// shows it: its current version's public key.
type WrappingKeyInfo struct {
	PublicKey string `json:"publicKey"` // PEM
	JWK       JWK    `json:"jwk"`
	KID       string `json:"kid"`
	Version   int    `json:"version"`
}

// WrappingKey returns the caller's tenant's wrapping key, making it on
// first read (under the store's lock, so that processes reading it
// together make one).
func (s *Service) WrappingKey(ctx context.Context, p identity.Principal) (WrappingKeyInfo, error) {
	const action = "vault.wrapping-key.read"
	meta := withClient(map[string]any{}, p)
	if err := s.check(ctx, p, ScopeKeysRead, "", action, meta); err != nil {
		return WrappingKeyInfo{}, err
	}
	k, err := s.wrappingKey(ctx, p.TenantID, true)
	var info WrappingKeyInfo
	if err == nil {
		info, err = s.wrappingInfo(ctx, k)
		meta["kid"] = info.KID
	}
	return info, s.record(ctx, p.TenantID, action, err, meta)
}

// RotateWrappingKey adds a version to the caller's tenant's wrapping key
// (making the key if it has none).
func (s *Service) RotateWrappingKey(ctx context.Context, p identity.Principal) (WrappingKeyInfo, error) {
	meta := withClient(map[string]any{}, p)
	if err := s.check(ctx, p, ScopeKeysAdmin, AdminWrapping, ActionWrappingKey, meta); err != nil {
		return WrappingKeyInfo{}, err
	}
	k, err := s.wrappingKey(ctx, p.TenantID, true)
	var info WrappingKeyInfo
	if err == nil {
		if k, _, err = s.rotate(ctx, k, nil, false, nil, ""); err == nil {
			info, err = s.wrappingInfo(ctx, k)
			meta["kid"], meta["version"] = info.KID, info.Version
		}
	}
	return info, s.record(ctx, p.TenantID, ActionWrappingKey, err, meta)
}

// wrappingKey reads the tenant's wrapping key, making it when make is set.
func (s *Service) wrappingKey(ctx context.Context, tenantID string, make bool) (Key, error) {
	k, err := s.cfg.Store.GetKeyByName(ctx, tenantID, "")
	if err == nil || !fault.Is(fault.NotFound, err) || !make {
		if err == nil && k.Purpose != PurposeWrapping {
			return Key{}, fault.E(fault.Internal, "the wrapping key's name is taken")
		}
		return k, err
	}
	err = s.withLock(ctx, "vault-wrapping-key:"+tenantID, func(ctx context.Context) error {
		if k, err = s.cfg.Store.GetKeyByName(ctx, tenantID, ""); !fault.Is(fault.NotFound, err) {
			return err
		}
		now := s.now()
		m, err := generate(KeySpec{Algorithm: AlgorithmRSA, Size: wrappingKeySize})
		if err != nil {
			return err
		}
		defer m.wipe()
		k = Key{
			ID: ids.NewGUID(), TenantID: tenantID, Name: "", Algorithm: AlgorithmRSA, Size: wrappingKeySize,
			UsageMask: UsageUnwrapKey, State: StateActive, CreatedAt: now, UpdatedAt: now, ObjectType: ObjectTypePrivateKey,
			Unexportable: true, Undeletable: true, Origin: OriginGenerated, ActivationDate: &now, Purpose: PurposeWrapping,
		}
		v, err := m.version(k, 0, now, now, s.cfg.Sealer)
		if err != nil {
			return err
		}
		c := KeyCreate{Key: k, Versions: []Version{v}}
		late, err := s.buildRecords(ctx, &c.Audit, s.systemEntries(ctx, k, []Change{{ActionWrappingKey, map[string]any{"kid": v.KID, "version": 0}}}))
		if err != nil {
			return err
		}
		if err := s.cfg.Store.CreateKey(ctx, c); err != nil {
			if fault.Is(fault.Conflict, err) { // made meanwhile by a process without the lock
				k, err = s.cfg.Store.GetKeyByName(ctx, tenantID, "")
			}
			return err
		}
		s.recordLate(ctx, late)
		return nil
	})
	return k, err
}

func (s *Service) wrappingInfo(ctx context.Context, k Key) (WrappingKeyInfo, error) {
	v, err := s.cfg.Store.GetKeyVersion(ctx, k.TenantID, k.ID, k.Version)
	if err != nil {
		return WrappingKeyInfo{}, err
	}
	o, err := openPublic(k.spec(), v.Public)
	if err != nil {
		return WrappingKeyInfo{}, fault.E(fault.Internal, err)
	}
	jwk, _ := jwkOf(k, o, v.Version)
	jwk.Alg, jwk.Use = "RSA-OAEP-256", "enc"
	return WrappingKeyInfo{PublicKey: pemOf(v.Public), JWK: jwk, KID: v.KID, Version: v.Version}, nil
}

// unwrapImport unwraps an import blob for the tenant's wrapping key (the
// version wrappingKid names, default the current one; the previous one is
// accepted for WrappingGrace after a rotation) and returns the material,
// checked against spec.
//
// The blob is OpenBao's import format and PKCS #11's CKM_RSA_AES_KEY_WRAP
// output: base64(RSA-OAEP-SHA-256(wrapping key, ephemeral AES-256 key) ||
// AES-KWP(ephemeral key, material)), material being raw bytes (AES,
// CHACHA20, HMAC of 32 to 128 bytes), PKCS #8 DER (RSA, EC, ED25519;
// ML-DSA and ML-KEM in the LAMPS seed forms) or the X-Wing seed.
func (s *Service) unwrapImport(ctx context.Context, tenantID string, spec KeySpec, wrapped, wrappingKid string) (*material, error) {
	bad := func(msg string, cause error) (*material, error) {
		return nil, fault.E(fault.Invalid, fault.Field("wrappedMaterial"), msg, cause)
	}
	blob, err := decodeBinary(wrapped, "wrappedMaterial")
	if err != nil {
		return nil, err
	}
	wk, err := s.wrappingKey(ctx, tenantID, false)
	if fault.Is(fault.NotFound, err) {
		return bad("the tenant has no wrapping key yet: GET /vault/wrapping-key and wrap the material for it", err)
	}
	if err != nil {
		return nil, err
	}
	vs, err := s.cfg.Store.ListKeyVersions(ctx, tenantID, wk.ID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	pick := -1
	for i, v := range vs {
		switch {
		case wrappingKid == "" && v.Version == wk.Version:
			pick = i
		case wrappingKid != "" && v.KID == wrappingKid:
			pick = i
		}
	}
	if pick < 0 {
		return nil, fault.E(fault.Invalid, fault.Field("wrappingKid"), "wrappingKid names no version of the tenant's wrapping key")
	}
	if v := vs[pick]; v.Version < wk.Version {
		// Superseded: accepted until its successor is WrappingGrace old.
		if next := vs[pick+1]; !now.Before(next.CreatedAt.Add(WrappingGrace)) {
			return nil, fault.E(fault.Invalid, fault.Field("wrappingKid"), "that wrapping key version was rotated more than 24 hours ago; wrap for the current one")
		}
	}
	o, err := s.openStored(wk, vs[pick])
	if err != nil {
		return nil, err
	}
	n := o.rsaPriv.Size()
	if len(blob) <= n {
		return bad("wrappedMaterial is shorter than an RSA-4096 block and a wrapped key", nil)
	}
	eph, err := rsa.DecryptOAEP(sha256.New(), nil, o.rsaPriv, blob[:n], nil)
	if err != nil {
		return bad("wrappedMaterial's key does not unwrap: RSA-OAEP with SHA-256 (and MGF1-SHA-256) under the wrapping key is expected", err)
	}
	defer clear(eph)
	if len(eph) != 16 && len(eph) != 24 && len(eph) != 32 {
		return bad("wrappedMaterial's ephemeral key is not an AES key", nil)
	}
	in, err := kwp.Unwrap(eph, blob[n:])
	if err != nil {
		return bad("wrappedMaterial does not unwrap with AES-KWP (RFC 5649) under its ephemeral key", err)
	}
	defer clear(in)
	if spec.Algorithm == AlgorithmHMAC && (len(in) < 32 || len(in) > 128) {
		return bad(fmt.Sprintf("HMAC material is 32 to 128 bytes, not %d", len(in)), nil)
	}
	raw, err := importRaw(spec, in)
	if err != nil {
		return bad("wrappedMaterial: "+err.Error(), err)
	}
	op, err := openRaw(spec, raw)
	if err != nil {
		clear(raw)
		return bad("wrappedMaterial is not a "+spec.Algorithm+" key of the given type: "+err.Error(), err)
	}
	return &material{spec: spec, raw: raw, public: op.spki}, nil
}

// newImportedKey makes an imported key (origin imported) from req.
func (s *Service) newImportedKey(ctx context.Context, tenantID, id string, req CreateRequest, now time.Time) (Key, Version, error) {
	spec := req.KeySpec
	if spec.Algorithm == AlgorithmHMAC || spec.Algorithm == "hmac" {
		// An HMAC key's size follows from its material.
		spec.Size = 0
	}
	spec, err := spec.Normalize()
	if err != nil {
		return Key{}, Version{}, err
	}
	m, err := s.unwrapImport(ctx, tenantID, spec, req.WrappedMaterial, req.WrappingKid)
	if err != nil {
		return Key{}, Version{}, err
	}
	defer m.wipe()
	if spec.Algorithm == AlgorithmHMAC && len(m.raw)*8 != spec.Size {
		if req.Size != 0 && req.Size != len(m.raw)*8 {
			return Key{}, Version{}, fault.E(fault.Invalid, fault.Field("size"), fmt.Sprintf("size %d does not match the %d-byte material", req.Size, len(m.raw)))
		}
		spec.Size = len(m.raw) * 8
		m.spec = spec
	}
	k := Key{
		ID: id, TenantID: tenantID, Name: req.Name, Algorithm: spec.Algorithm, Size: spec.Size, Curve: spec.Curve, Hash: spec.Hash,
		UsageMask: UsageMaskFor(spec.Algorithm), State: StateActive, CreatedAt: now, UpdatedAt: now,
		ObjectType: ObjectTypeFor(spec.Algorithm), Origin: OriginImported, ActivationDate: &now,
	}
	v, err := m.version(k, 0, now, now, s.cfg.Sealer)
	return k, v, err
}

// newPublicKey makes a public-only key (origin public) from req.PublicKey.
func (s *Service) newPublicKey(tenantID, id string, req CreateRequest, now time.Time) (Key, Version, error) {
	bad := func(msg string) (Key, Version, error) {
		return Key{}, Version{}, fault.E(fault.Invalid, fault.Field("publicKey"), msg)
	}
	block, rest := pem.Decode([]byte(req.PublicKey))
	if block == nil || block.Type != "PUBLIC KEY" || len(bytesTrim(rest)) != 0 {
		return bad("publicKey is one PEM block of type PUBLIC KEY (a SubjectPublicKeyInfo)")
	}
	spec, err := publicSpec(block.Bytes)
	if err != nil {
		return bad("publicKey: " + err.Error())
	}
	if spec, err = spec.Normalize(); err != nil {
		return bad("publicKey: " + fault.MessageOf(err))
	}
	if req.Algorithm != "" {
		asked, err := req.KeySpec.Normalize()
		if err != nil {
			return Key{}, Version{}, err
		}
		if asked != spec {
			return bad(fmt.Sprintf("publicKey is a %s %d %s key, not the %s %d %s asked for", spec.Algorithm, spec.Size, spec.Curve, asked.Algorithm, asked.Size, asked.Curve))
		}
	}
	o, err := openPublic(spec, block.Bytes)
	if err != nil {
		return bad("publicKey: " + err.Error())
	}
	k := Key{
		ID: id, TenantID: tenantID, Name: req.Name, Algorithm: spec.Algorithm, Size: spec.Size, Curve: spec.Curve,
		UsageMask: PublicUsageMask(spec.Algorithm), State: StateActive, CreatedAt: now, UpdatedAt: now,
		ObjectType: ObjectTypePublicKey, Origin: OriginPublic, ActivationDate: &now,
	}
	m := &material{spec: spec, public: o.spki}
	v, err := m.version(k, 0, now, now, s.cfg.Sealer)
	return k, v, err
}

func bytesTrim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// Exported is one version of an export: the material wrapped for the
// caller's key.
type Exported struct {
	Version         int    `json:"version"`
	WrappedMaterial string `json:"wrappedMaterial"`
}

// Export wraps the private or secret material of an exportable key for
// wrappingKey (PEM, an RSA public key of MinExportWrappingBits or more),
// in the import blob's format, so that the key moves to another Latchkey,
// OpenBao or an HSM: version, or every untrimmed version. An unexportable
// key is fault.Forbidden.
func (s *Service) Export(ctx context.Context, p identity.Principal, r KeyRef, wrappingKey string, version *int) ([]Exported, error) {
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if err := s.check(ctx, p, ScopeKeysExport, "", ActionExport, meta); err != nil {
		return nil, err
	}
	k, err := s.loadFor(ctx, p, r)
	var out []Exported
	if err == nil {
		meta["key"] = keyMeta(k)
		var fp string
		out, fp, err = s.export(ctx, k, wrappingKey, version)
		meta["wrappingKey"] = fp
		if err == nil {
			var vs []int
			for _, e := range out {
				vs = append(vs, e.Version)
			}
			meta["versions"] = vs
		}
	}
	return out, s.record(ctx, p.TenantID, ActionExport, err, meta)
}

func (s *Service) export(ctx context.Context, k Key, wrappingKey string, version *int) ([]Exported, string, error) {
	switch {
	case k.PublicOnly():
		return nil, "", fault.E(fault.Invalid, "a public-only key has no private material; GET its /public")
	case k.Unexportable:
		return nil, "", fault.E(fault.Forbidden, "the key is not exportable")
	}
	if err := checkState(k, OpExport); err != nil {
		return nil, "", err
	}
	pub, fp, err := parseWrappingKey(wrappingKey)
	if err != nil {
		return nil, fp, err
	}
	vs, err := s.cfg.Store.ListKeyVersions(ctx, k.TenantID, k.ID)
	if err != nil {
		return nil, fp, err
	}
	var out []Exported
	for _, v := range vs {
		if version != nil && v.Version != *version {
			continue
		}
		if v.Material == nil || v.Version < k.MinAvailableVersion {
			if version != nil {
				return nil, fp, fault.E(fault.Conflict, fmt.Sprintf("version %d of the key is trimmed", v.Version))
			}
			continue
		}
		o, err := s.openStored(k, v)
		if err != nil {
			return nil, fp, err
		}
		blob, err := wrapFor(pub, exportRaw(k.spec(), o.raw))
		clear(o.raw)
		if err != nil {
			return nil, fp, err
		}
		out = append(out, Exported{Version: v.Version, WrappedMaterial: blob})
	}
	if version != nil && len(out) == 0 {
		return nil, fp, fault.E(fault.NotFound, fmt.Sprintf("the key has no version %d", *version))
	}
	return out, fp, nil
}

// parseWrappingKey reads export's wrappingKey and returns it with its
// fingerprint (hex SHA-256 of its SubjectPublicKeyInfo) for the audit.
func parseWrappingKey(text string) (*rsa.PublicKey, string, error) {
	bad := func(msg string) (*rsa.PublicKey, string, error) {
		return nil, "", fault.E(fault.Invalid, fault.Field("wrappingKey"), msg)
	}
	block, _ := pem.Decode([]byte(text))
	if block == nil {
		return bad("wrappingKey is a PEM RSA public key")
	}
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	default:
		return bad("wrappingKey is a PEM block of type PUBLIC KEY or RSA PUBLIC KEY")
	}
	pub, ok := key.(*rsa.PublicKey)
	if err != nil || !ok {
		return bad("wrappingKey is not an RSA public key")
	}
	if pub.N.BitLen() < MinExportWrappingBits {
		return bad(fmt.Sprintf("wrappingKey is an RSA key of %d bits; at least %d are needed", pub.N.BitLen(), MinExportWrappingBits))
	}
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return bad("wrappingKey is not an RSA public key")
	}
	sum := sha256.Sum256(spki)
	return pub, hex.EncodeToString(sum[:]), nil
}

// wrapFor makes an import blob of material for pub: RSA-OAEP-SHA-256 of a
// fresh AES-256 key, then AES-KWP of the material under it.
func wrapFor(pub *rsa.PublicKey, material []byte) (string, error) {
	defer clear(material)
	eph := make([]byte, ephemeralKeySize)
	rand.Read(eph)
	defer clear(eph)
	head, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, eph, nil)
	if err != nil {
		return "", fault.E(fault.Internal, err)
	}
	tail, err := kwp.Wrap(eph, material)
	if err != nil {
		return "", fault.E(fault.Internal, err)
	}
	return b64str(append(head, tail...)), nil
}

// WrapForImport makes an import blob of material (in the import form) for
// a wrapping key's PEM: what a client does with openssl before an import.
// It is exported for tests and embedders that import programmatically.
func WrapForImport(wrappingKeyPEM string, material []byte) (string, error) {
	block, _ := pem.Decode([]byte(wrappingKeyPEM))
	if block == nil {
		return "", errors.New("vault: not PEM")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return "", err
	}
	pub, ok := key.(*rsa.PublicKey)
	if !ok {
		return "", errors.New("vault: not an RSA key")
	}
	return wrapFor(pub, append([]byte(nil), material...))
}
