package vtoken

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/ids"
	"github.com/latchkey/latchkey/seal"
)

// Limits and rules of the area. They are part of the API (docs/vtoken.md).
const (
	// MaxPFXBytes is the largest accepted PFX file; a multipart upload
	// may carry MaxUploadOverhead bytes more (headers, boundaries).
	MaxPFXBytes       = 256 << 10
	MaxUploadOverhead = 16 << 10
	// MaxTokensPerUser is how many tokens one user may hold unless the
	// tenant's settings say otherwise (identity.Settings.MaxTokensPerUser);
	// creating one more is fault.Conflict.
	MaxTokensPerUser = identity.DefaultMaxTokensPerUser
	// MaxLabelLength is the longest token label (characters).
	MaxLabelLength = 32
	// User passwords are MinUserPIN to MaxUserPIN characters; Admin
	// passwords exactly AdminPINLength hexadecimal characters.
	MinUserPIN     = 8
	MaxUserPIN     = 25
	AdminPINLength = 48
	// MaxPINFailures consecutive wrong current passwords lock the role
	// for PINLockout (ChangePin and Sign answer 429 meanwhile).
	MaxPINFailures = 5
	PINLockout     = 15 * time.Minute
	// maxEncryptedPassword bounds the base64 text of an encrypted
	// password (a 2048-bit RSA ciphertext is 344 characters).
	maxEncryptedPassword = 1024
)

// Audit actions (source latchkey-provisioning).
const (
	ActionExchangeKey = "vtoken.exchangekey.read"
	ActionCreate      = "vtoken.token.create"
	ActionList        = "vtoken.token.list"
	ActionImport      = "vtoken.certificate.import"
	ActionCertList    = "vtoken.certificate.list"
	ActionComplete    = "vtoken.token.complete"
	ActionDelete      = "vtoken.token.delete"
	ActionLabel       = "vtoken.token.label"
	ActionResetPIN    = "vtoken.pin.reset"
	ActionChangePIN   = "vtoken.pin.change"
	ActionPINLocked   = "vtoken.pin.locked"
	ActionSign        = "vtoken.sign"
)

// Hasher hashes and verifies passwords with argon2id (identity.Hasher).
type Hasher interface {
	Hash(ctx context.Context, password string) (string, error)
	Verify(ctx context.Context, encoded, password string) (bool, error)
}

// Directory finds tenants and users (identity.Store).
type Directory interface {
	GetTenant(ctx context.Context, id string) (identity.Tenant, error)
	GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error)
}

// Config configures a Service; every field but Logger is required.
type Config struct {
	Store     Store
	Directory Directory
	Hasher    Hasher
	Sealer    *seal.Sealer
	Audit     audit.Sink
	Clock     clock.Clock
	Logger    *slog.Logger
}

// Service is area G: virtual tokens of users, provisioned with PFX files
// through an API key of the tenant, and usable to sign.
//
// Every operation takes the caller (an API key principal allowed the
// provisioning area) and the path's names. The path's tenant must be the
// key's (else fault.Unauthenticated, the spec's 401 for a key without
// access, and nothing about the other tenant is revealed); a key bound to
// a user may only reach that user's tokens. Tenant, user and token must
// exist (fault.NotFound). Every action is audited, failures included.
type Service struct {
	cfg Config

	mu       sync.Mutex
	exchange map[string]*rsa.PrivateKey // opened exchange keys by tenant

	// parsing bounds concurrent PFX decodes: their cost is set by the
	// uploaded file (see MaxPBEIterations), so uploads cannot take every
	// core at once.
	parsing chan struct{}
}

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, exchange: map[string]*rsa.PrivateKey{}, parsing: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))}
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	if tenantID == "" {
		return err
	}
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourceProvisioning, Action: action, Err: err, Meta: meta})
}

func refMeta(r Ref) map[string]any {
	m := map[string]any{"tenantId": r.TenantID, "userId": r.UserID}
	if r.TokenID != "" {
		m["tokenId"] = r.TokenID
	}
	return m
}

var (
	errTenantAccess = fault.E(fault.Unauthenticated, "You do not have permission to access this tenant.")
	errUserAccess   = fault.E(fault.Unauthenticated, "This API key is bound to another user.")
	errNoToken      = fault.E(fault.NotFound, "token not found")
)

// checkTenant verifies that tenantID exists (else fault.NotFound, the
// spec's 404) and that the caller may act in it: an API key of that tenant
// allowed the provisioning area (else fault.Unauthenticated, the spec's 401
// for a key without access to the tenant).
func (s *Service) checkTenant(ctx context.Context, p identity.Principal, tenantID string) error {
	if p.TenantID == "" || !p.HasArea(identity.AreaProvisioning) {
		return errTenantAccess
	}
	if tenantID != p.TenantID {
		if !ids.IsGUID(tenantID) {
			return fault.E(fault.NotFound, "tenant not found")
		}
		if _, err := s.cfg.Directory.GetTenant(ctx, tenantID); fault.Is(fault.NotFound, err) {
			return fault.E(fault.NotFound, "tenant not found", err)
		} else if err != nil {
			return err
		}
		return errTenantAccess
	}
	if _, err := s.cfg.Directory.GetTenant(ctx, tenantID); err != nil {
		if fault.Is(fault.NotFound, err) {
			return fault.E(fault.NotFound, "tenant not found", err)
		}
		return err
	}
	return nil
}

// checkUser verifies the tenant and that the user exists in it, and
// returns the user id in its canonical (base64url) form. A userId that is
// no user id at all is fault.Invalid; an unknown one fault.NotFound.
func (s *Service) checkUser(ctx context.Context, p identity.Principal, r Ref) (Ref, error) {
	if err := s.checkTenant(ctx, p, r.TenantID); err != nil {
		return r, err
	}
	id, err := parseUserID(r.UserID)
	if err != nil {
		return r, fault.E(fault.Invalid, fault.Field("userId"), "userId must be a user's object id (base64url, or 32 hexadecimal digits)")
	}
	if p.UserID != "" && p.UserID != id.String() {
		return r, errUserAccess
	}
	if _, err := s.cfg.Directory.GetUser(ctx, r.TenantID, id); err != nil {
		if fault.Is(fault.NotFound, err) {
			return r, fault.E(fault.NotFound, "user not found", err)
		}
		return r, err
	}
	r.UserID = id.String()
	return r, nil
}

// parseUserID accepts a user id as base64url (the platform's default text
// form) or as 32 hexadecimal digits (Object-Id-Format: hex).
func parseUserID(s string) (identity.ObjectID, error) {
	if len(s) == 32 {
		if id, err := identity.ParseObjectID(s, identity.FormatHex); err == nil {
			return id, nil
		}
	}
	return identity.ParseObjectID(s, identity.FormatBase64)
}

// getToken checks the caller, the user and the token and returns it.
func (s *Service) getToken(ctx context.Context, p identity.Principal, r Ref) (Ref, Token, error) {
	r, err := s.checkUser(ctx, p, r)
	if err != nil {
		return r, Token{}, err
	}
	if !ids.IsGUID(r.TokenID) {
		return r, Token{}, errNoToken
	}
	t, err := s.cfg.Store.GetToken(ctx, r.TenantID, r.UserID, r.TokenID)
	if fault.Is(fault.NotFound, err) {
		err = fault.E(fault.NotFound, "token not found", err)
	}
	return r, t, err
}

// auditTenant is the tenant an action's record goes to: the caller's.
func auditTenant(p identity.Principal) string { return p.TenantID }

// ExchangeKey returns the tenant's exchange public key, creating the key
// pair (RSA-2048, sealed at rest) on first use.
func (s *Service) ExchangeKey(ctx context.Context, p identity.Principal, tenantID string) (ExchangePublicKey, error) {
	meta := map[string]any{"tenantId": tenantID}
	if err := s.checkTenant(ctx, p, tenantID); err != nil {
		return ExchangePublicKey{}, s.record(ctx, auditTenant(p), ActionExchangeKey, err, meta)
	}
	k, err := s.exchangeKey(ctx, tenantID)
	if err != nil {
		return ExchangePublicKey{}, s.record(ctx, auditTenant(p), ActionExchangeKey, err, meta)
	}
	out := ExchangePublicKey{
		KeyType:  "RSA",
		Modulus:  base64.StdEncoding.EncodeToString(k.N.Bytes()),
		Exponent: base64.StdEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
	}
	return out, s.record(ctx, auditTenant(p), ActionExchangeKey, nil, meta)
}

func exchangePurpose(tenantID string) string { return "vtoken-exchange-key:" + tenantID }

// exchangeKey returns the tenant's exchange private key.
func (s *Service) exchangeKey(ctx context.Context, tenantID string) (*rsa.PrivateKey, error) {
	s.mu.Lock()
	k := s.exchange[tenantID]
	s.mu.Unlock()
	if k != nil {
		return k, nil
	}
	sealed, err := s.cfg.Store.GetExchangeKey(ctx, tenantID)
	if fault.Is(fault.NotFound, err) {
		priv, gerr := rsa.GenerateKey(rand.Reader, 2048)
		if gerr != nil {
			return nil, fault.E(fault.Internal, gerr)
		}
		der, merr := x509.MarshalPKCS8PrivateKey(priv)
		if merr != nil {
			return nil, fault.E(fault.Internal, merr)
		}
		// Created on the side of the request that needs it: not the
		// request's own write, so it binds no Idempotency-Key claim.
		sealed, err = s.cfg.Store.PutExchangeKey(idempotency.Detach(ctx), tenantID, s.cfg.Sealer.Seal(exchangePurpose(tenantID), der))
	}
	if err != nil {
		return nil, err
	}
	der, err := s.cfg.Sealer.Open(exchangePurpose(tenantID), sealed)
	if err != nil {
		return nil, fault.E(fault.Internal, "exchange key cannot be opened", err)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fault.E(fault.Internal, err)
	}
	k, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, fault.E(fault.Internal, "exchange key is not RSA")
	}
	s.mu.Lock()
	s.exchange[tenantID] = k
	s.mu.Unlock()
	return k, nil
}

// decrypt returns the password text of a header or body: itself, or, when
// encrypted, the RSA-OAEP (SHA-256) decryption of its base64 under the
// tenant's exchange key. Anything that does not decrypt is fault.Invalid.
func (s *Service) decrypt(ctx context.Context, tenantID string, in PINInput, field string) (string, error) {
	if in.Err != nil {
		return "", in.Err
	}
	text, encrypted := in.Text, in.Encrypted
	if !encrypted {
		return text, nil
	}
	bad := fault.E(fault.Invalid, fault.Field(field), "the encrypted "+field+" cannot be decrypted with the tenant exchange key (RSA-OAEP SHA-256, base64)")
	if len(text) > maxEncryptedPassword {
		return "", bad
	}
	ct, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil {
		if ct, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(text)); err != nil {
			return "", bad
		}
	}
	k, err := s.exchangeKey(ctx, tenantID)
	if err != nil {
		return "", err
	}
	pt, err := rsa.DecryptOAEP(sha256.New(), nil, k, ct, nil)
	if err != nil || !utf8.Valid(pt) {
		return "", bad
	}
	return string(pt), nil
}

// CreateToken creates an empty token for the user, able to hold RSA keys
// of up to v.MaxKeySize() bits, and returns its id. A user holding the
// tenant's maxTokensPerUser tokens already is fault.Conflict.
func (s *Service) CreateToken(ctx context.Context, p identity.Principal, r Ref, v Version) (string, error) {
	meta := refMeta(r)
	meta["version"] = string(v)
	r, err := s.checkUser(ctx, p, r)
	if err != nil {
		return "", s.record(ctx, auditTenant(p), ActionCreate, err, meta)
	}
	if v != V1 && v != V2 {
		return "", s.record(ctx, auditTenant(p), ActionCreate, fault.E(fault.Invalid, "unknown API version"), meta)
	}
	now := s.now()
	t := Token{TenantID: r.TenantID, UserID: r.UserID, ID: ids.NewGUID(), Version: v, MaxKeySize: v.MaxKeySize(),
		State: StateProvisioning, CreatedAt: now, UpdatedAt: now}
	tn, err := s.cfg.Directory.GetTenant(ctx, r.TenantID)
	if err != nil {
		return "", s.record(ctx, auditTenant(p), ActionCreate, err, meta)
	}
	limit := tn.Settings.TokensPerUser()
	if err := s.cfg.Store.CreateToken(ctx, t, limit); err != nil {
		if fault.Is(fault.Conflict, err) {
			err = fault.E(fault.Conflict, fmt.Sprintf("the user already holds %d tokens, the tenant's maxTokensPerUser", limit), err)
		}
		return "", s.record(ctx, auditTenant(p), ActionCreate, err, meta)
	}
	meta["tokenId"] = t.ID
	return t.ID, s.record(ctx, auditTenant(p), ActionCreate, nil, meta)
}

// ListTokens returns the user's tokens: through V1.0 only those created
// through V1.0 (API.md), through V2.0 all.
func (s *Service) ListTokens(ctx context.Context, p identity.Principal, r Ref, v Version) ([]Token, error) {
	meta := refMeta(r)
	meta["version"] = string(v)
	r, err := s.checkUser(ctx, p, r)
	if err != nil {
		return nil, s.record(ctx, auditTenant(p), ActionList, err, meta)
	}
	all, err := s.cfg.Store.ListTokens(ctx, r.TenantID, r.UserID)
	if err != nil {
		return nil, s.record(ctx, auditTenant(p), ActionList, err, meta)
	}
	out := []Token{}
	for _, t := range all {
		if v == V2 || t.Version == V1 {
			out = append(out, t)
		}
	}
	meta["count"] = len(out)
	return out, s.record(ctx, auditTenant(p), ActionList, nil, meta)
}

// Certificates returns the token's certificates.
func (s *Service) Certificates(ctx context.Context, p identity.Principal, r Ref) ([]Certificate, error) {
	meta := refMeta(r)
	r, _, err := s.getToken(ctx, p, r)
	if err != nil {
		return nil, s.record(ctx, auditTenant(p), ActionCertList, err, meta)
	}
	certs, err := s.cfg.Store.ListCertificates(ctx, r.TenantID, r.UserID, r.TokenID)
	if fault.Is(fault.NotFound, err) {
		err = fault.E(fault.NotFound, "token not found", err)
	}
	if err != nil {
		return nil, s.record(ctx, auditTenant(p), ActionCertList, err, meta)
	}
	meta["count"] = len(certs)
	return certs, s.record(ctx, auditTenant(p), ActionCertList, nil, meta)
}

var errComplete = fault.E(fault.Conflict, "provisioning of this token is complete; it can no longer be changed")

// update runs fn on the token in a store transaction, after the checks.
func (s *Service) update(ctx context.Context, p identity.Principal, r Ref, action string, meta map[string]any, fn func(*Token) error) (Token, error) {
	r, _, err := s.getToken(ctx, p, r)
	if err != nil {
		return Token{}, s.record(ctx, auditTenant(p), action, err, meta)
	}
	now := s.now()
	t, err := s.cfg.Store.UpdateToken(ctx, r.TenantID, r.UserID, r.TokenID, func(t *Token) error {
		if err := fn(t); err != nil {
			return err
		}
		t.UpdatedAt = now
		return nil
	})
	if fault.Is(fault.NotFound, err) {
		err = fault.E(fault.NotFound, "token not found", err)
	}
	return t, s.record(ctx, auditTenant(p), action, err, meta)
}

// Complete marks provisioning of the token complete. A token already
// complete is fault.Conflict.
func (s *Service) Complete(ctx context.Context, p identity.Principal, r Ref) error {
	_, err := s.update(ctx, p, r, ActionComplete, refMeta(r), func(t *Token) error {
		if t.State == StateComplete {
			return fault.E(fault.Conflict, "provisioning of this token is already complete")
		}
		t.State = StateComplete
		return nil
	})
	return err
}

// SetLabel sets the token's label (1 to MaxLabelLength characters). A
// complete token is fault.Conflict. The label is judged after the access
// checks, like every input.
func (s *Service) SetLabel(ctx context.Context, p identity.Principal, r Ref, label string) error {
	meta := refMeta(r)
	valid := utf8.ValidString(label) && !strings.ContainsFunc(label, isControl)
	if n := utf8.RuneCountInString(label); n < 1 || n > MaxLabelLength || !valid {
		valid = false
	} else {
		meta["label"] = label
	}
	_, err := s.update(ctx, p, r, ActionLabel, meta, func(t *Token) error {
		if !valid {
			return fault.E(fault.Invalid, fault.Field("tokenLabel"),
				fmt.Sprintf("the token label must be 1 to %d characters, without control characters", MaxLabelLength))
		}
		if t.State == StateComplete {
			return errComplete
		}
		t.Label = label
		return nil
	})
	return err
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// DeleteToken removes the token, its certificates and their keys.
func (s *Service) DeleteToken(ctx context.Context, p identity.Principal, r Ref) error {
	meta := refMeta(r)
	r, _, err := s.getToken(ctx, p, r)
	if err == nil {
		err = s.cfg.Store.DeleteToken(ctx, r.TenantID, r.UserID, r.TokenID)
		if fault.Is(fault.NotFound, err) {
			err = fault.E(fault.NotFound, "token not found", err)
		}
	}
	return s.record(ctx, auditTenant(p), ActionDelete, err, meta)
}

var adminPINRE = regexp.MustCompile(`^[0-9A-Fa-f]{48}$`)

// checkRole returns fault.NotFound for a role name other than User and
// Admin: the role is a path segment, and the spec answers 404 for it.
func checkRole(role string) error {
	if role != RoleUser && role != RoleAdmin {
		return fault.E(fault.NotFound, "role not found: the role name is User or Admin")
	}
	return nil
}

// CheckPIN applies the password rules of role: User 8 to 25 characters,
// Admin 48 hexadecimal characters.
func CheckPIN(role, pin string) error {
	switch role {
	case RoleAdmin:
		if !adminPINRE.MatchString(pin) {
			return fault.E(fault.Invalid, fault.Field("password"), fmt.Sprintf("an Admin password is %d hexadecimal characters", AdminPINLength))
		}
	default:
		if n := utf8.RuneCountInString(pin); n < MinUserPIN || n > MaxUserPIN || !utf8.ValidString(pin) {
			return fault.E(fault.Invalid, fault.Field("password"), fmt.Sprintf("a User password is %d to %d characters", MinUserPIN, MaxUserPIN))
		}
	}
	return nil
}

// canonicalPIN is the form of a password that is hashed and verified: an
// Admin password is 24 bytes written in hexadecimal, so its letters' case
// does not matter (upper-case); a User password is kept as typed.
func canonicalPIN(role, pin string) string {
	if role == RoleAdmin {
		return strings.ToUpper(pin)
	}
	return pin
}

// PINInput is a password as received: the text, and whether it is
// encrypted with the tenant exchange key.
type PINInput struct {
	Text      string
	Encrypted bool
	// Err, when set, is why the password could not be read from the
	// request (a malformed body or header). It is returned after the
	// access checks, so that a caller without access learns nothing from
	// how its request is refused.
	Err error
}

// ResetPIN sets role's password to newPIN without the current one (the
// provisioning key is the token's administrator) and unlocks the role.
func (s *Service) ResetPIN(ctx context.Context, p identity.Principal, r Ref, role string, newPIN PINInput) error {
	meta := refMeta(r)
	meta["role"] = role
	fail := func(err error) error { return s.record(ctx, auditTenant(p), ActionResetPIN, err, meta) }
	r, _, err := s.getToken(ctx, p, r)
	if err != nil {
		return fail(err)
	}
	if err := checkRole(role); err != nil {
		return fail(err)
	}
	pin, err := s.decrypt(ctx, r.TenantID, newPIN, "password")
	if err != nil {
		return fail(err)
	}
	if err := CheckPIN(role, pin); err != nil {
		return fail(err)
	}
	return fail(s.setPIN(ctx, r, role, pin))
}

// ChangePIN sets role's password to newPIN. The specification gives
// ChangePin the same body and header as ResetPin, so without a current
// password it does what ResetPIN does (audited as a change, meta
// verified false). With one, the current password must be role's: a role
// without a password is then fault.Conflict (reset it first), and a wrong
// current password is fault.Invalid and counts: after MaxPINFailures in a
// row the role is locked for PINLockout (fault.TooManyRequests, audited as
// ActionPINLocked); a right one resets the count.
func (s *Service) ChangePIN(ctx context.Context, p identity.Principal, r Ref, role string, current, newPIN PINInput) error {
	meta := refMeta(r)
	meta["role"] = role
	fail := func(err error) error { return s.record(ctx, auditTenant(p), ActionChangePIN, err, meta) }
	r, t, err := s.getToken(ctx, p, r)
	if err != nil {
		return fail(err)
	}
	if err := checkRole(role); err != nil {
		return fail(err)
	}
	cur, err := s.decrypt(ctx, r.TenantID, current, "currentPassword")
	if err != nil {
		return fail(err)
	}
	pin, err := s.decrypt(ctx, r.TenantID, newPIN, "password")
	if err != nil {
		return fail(err)
	}
	if err := CheckPIN(role, pin); err != nil {
		return fail(err)
	}
	meta["verified"] = cur != ""
	if cur == "" { // the specification's ChangePin: reset's body and header
		return fail(s.setPIN(ctx, r, role, pin))
	}
	if err := s.verifyPIN(ctx, p, r, t, role, canonicalPIN(role, cur)); err != nil {
		return fail(err)
	}
	return fail(s.setPIN(ctx, r, role, pin))
}

// setPIN stores the argon2id hash of role's new password pin (which
// passed CheckPIN), clearing its failure count and lock.
func (s *Service) setPIN(ctx context.Context, r Ref, role, pin string) error {
	hash, err := s.cfg.Hasher.Hash(ctx, canonicalPIN(role, pin))
	if err != nil {
		return err
	}
	now := s.now()
	_, err = s.cfg.Store.UpdateToken(ctx, r.TenantID, r.UserID, r.TokenID, func(t *Token) error {
		*t.pin(role) = PIN{Hash: hash}
		t.UpdatedAt = now
		return nil
	})
	if fault.Is(fault.NotFound, err) {
		err = fault.E(fault.NotFound, "token not found", err)
	}
	return err
}

// verifyPIN checks pin against role's password of t, counting failures
// and locking the role as ChangePIN describes.
func (s *Service) verifyPIN(ctx context.Context, p identity.Principal, r Ref, t Token, role, pin string) error {
	now := s.now()
	cur := t.pin(role)
	if cur.Hash == "" {
		return fault.E(fault.Conflict, "the "+role+" password is not set; reset it first")
	}
	if locked := lockedFor(*cur, now); locked > 0 {
		return fault.E(fault.TooManyRequests, fmt.Sprintf("the %s role is locked after %d wrong passwords; try again in %d seconds", role, MaxPINFailures, locked))
	}
	ok, err := s.cfg.Hasher.Verify(ctx, cur.Hash, pin)
	if err != nil {
		return err
	}
	var lockedNow bool
	_, err = s.cfg.Store.UpdateToken(ctx, r.TenantID, r.UserID, r.TokenID, func(t *Token) error {
		lockedNow = false
		pp := t.pin(role)
		if pp.Hash != cur.Hash {
			return fault.E(fault.Conflict, "the "+role+" password changed meanwhile; try again")
		}
		if ok {
			if pp.Failures == 0 && pp.LockedUntil.IsZero() {
				return errUnchanged
			}
			pp.Failures, pp.LockedUntil = 0, time.Time{}
			return nil
		}
		if lockedFor(*pp, now) > 0 {
			return nil
		}
		pp.Failures++
		if pp.Failures >= MaxPINFailures {
			pp.Failures, pp.LockedUntil, lockedNow = 0, now.Add(PINLockout), true
		}
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return err
	}
	if lockedNow {
		meta := refMeta(r)
		meta["role"] = role
		meta["lockedUntil"] = now.Add(PINLockout)
		if err := s.record(ctx, auditTenant(p), ActionPINLocked, nil, meta); err != nil {
			return err
		}
	}
	if !ok {
		return fault.E(fault.Invalid, fault.Field("currentPassword"), "the current "+role+" password is wrong")
	}
	return nil
}

// errUnchanged aborts an update that would change nothing.
var errUnchanged = fault.E(fault.Internal, "unchanged")

// lockedFor returns the whole seconds (rounded up) a PIN stays locked.
func lockedFor(p PIN, now time.Time) int64 {
	if !p.LockedUntil.After(now) {
		return 0
	}
	d := p.LockedUntil.Sub(now)
	return int64((d + time.Second - 1) / time.Second)
}
