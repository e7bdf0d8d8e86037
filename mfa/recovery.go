package mfa

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Recovery codes: 10 codes of 10 Crockford base32 characters (50 bits),
// shown XXXXX-XXXXX once, read case-insensitively without hyphens or
// spaces. Each is stored as an argon2id hash (the password hasher and
// its bounded pool) with a 16-bit tag, an HMAC-SHA-256 under a
// master-derived key, that picks the candidate: a try costs at most one
// argon2id, and 16 bits are too few to test a guess offline. A code is
// spent by the store's "... WHERE used_at IS NULL": once, across
// processes.

const (
	// CodeCount is how many codes a set has.
	CodeCount = 10
	codeLen   = 10
	crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
)

// newCode is a random code in its shown form, XXXXX-XXXXX.
func newCode() string {
	var b [codeLen]byte
	rand.Read(b[:])
	out := make([]byte, 0, codeLen+1)
	for i, c := range b {
		if i == codeLen/2 {
			out = append(out, '-')
		}
		out = append(out, crockford[c&31])
	}
	return string(out)
}

// NormalizeCode reads a code as a user may type it: case-insensitive,
// hyphens and spaces ignored, and Crockford's readings of I, L (1) and
// O (0). ok is false when it cannot be a code.
func NormalizeCode(s string) (string, bool) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '-' || r == ' ':
			continue
		case r >= 'a' && r <= 'z':
			r -= 'a' - 'A'
		}
		switch r {
		case 'I', 'L':
			r = '1'
		case 'O':
			r = '0'
		}
		if r > 0x7f || !strings.ContainsRune(crockford, r) {
			return "", false
		}
		b.WriteRune(r)
		if b.Len() > codeLen {
			return "", false
		}
	}
	return b.String(), b.Len() == codeLen
}

// tag is a normalized code's 16-bit tag.
func (s *Service) tag(code string) int {
	m := hmac.New(sha256.New, s.cfg.TagKey)
	m.Write([]byte(code))
	return int(binary.BigEndian.Uint16(m.Sum(nil)))
}

// newCodeSet generates, hashes and stores a set of codes for u,
// replacing any other, and returns them in their shown form.
func (s *Service) newCodeSet(ctx context.Context, t identity.Tenant, u identity.User) ([]string, time.Time, error) {
	now := s.now()
	shown := make([]string, CodeCount)
	stored := make([]RecoveryCode, CodeCount)
	for i := range shown {
		shown[i] = newCode()
		n, _ := NormalizeCode(shown[i])
		h, err := s.cfg.Hasher.Hash(ctx, n)
		if err != nil {
			return nil, time.Time{}, err
		}
		stored[i] = RecoveryCode{TenantID: t.ID, UserID: u.ID, Index: i, Tag: s.tag(n), Hash: h, CreatedAt: now}
	}
	if err := s.st.ReplaceRecoveryCodes(ctx, t.ID, u.ID, stored); err != nil {
		return nil, time.Time{}, err
	}
	return shown, now, nil
}

// CodeSet is a new set of recovery codes, shown once.
type CodeSet struct {
	Codes     []string
	CreatedAt time.Time
}

// GenerateRecoveryCodes replaces the calling user's recovery codes with
// a new set. It needs the caller's step-up and another factor (recovery
// codes are a second factor only beside one: fault.Conflict without);
// a sixth set within an hour is fault.TooManyRequests.
func (s *Service) GenerateRecoveryCodes(ctx context.Context, p identity.Principal) (CodeSet, error) {
	t, u, err := s.self(ctx, p)
	if err != nil {
		return CodeSet{}, s.record(ctx, p.TenantID, ActionCodesGenerate, err, nil)
	}
	ctx = audit.WithActor(ctx, u.ID.String(), "")
	meta := userMeta(u)
	fail := func(err error) (CodeSet, error) {
		return CodeSet{}, s.record(ctx, t.ID, ActionCodesGenerate, err, meta)
	}
	if err := s.cfg.Identity.CheckStepUp(p); err != nil {
		return fail(err)
	}
	v, err := s.view(ctx, t, u)
	if err != nil {
		return CodeSet{}, err
	}
	if !v.hasFactor() {
		return fail(fault.E(fault.Conflict, "recovery codes need another second factor first"))
	}
	n, err := s.st.CountCodeSet(ctx, t.ID, u.ID, s.now(), time.Hour)
	if err != nil {
		return CodeSet{}, err
	}
	if n > MaxCodeSets {
		return fail(fault.E(fault.TooManyRequests, "too many recovery-code sets; try again in 3600 seconds"))
	}
	codes, created, err := s.newCodeSet(ctx, t, u)
	if err != nil {
		return CodeSet{}, err
	}
	if err := s.record(ctx, t.ID, ActionCodesGenerate, nil, meta); err != nil {
		return CodeSet{}, err
	}
	return CodeSet{Codes: codes, CreatedAt: created}, nil
}

// verifyCode checks a recovery code of u and spends it: true once it was
// an unused code of the user's set, taken by this call. It costs one
// argon2id whatever the tag picks.
func (s *Service) verifyCode(ctx context.Context, t identity.Tenant, u identity.User, v view, code string) (bool, error) {
	n, ok := NormalizeCode(code)
	if !ok {
		n = strings.Repeat("0", codeLen) // a wrong code, at a wrong code's cost
	}
	tag := s.tag(n)
	tried := false
	for _, c := range v.codes {
		if c.UsedAt != nil || c.Tag != tag {
			continue
		}
		tried = true
		match, err := s.cfg.Hasher.Verify(ctx, c.Hash, n)
		if err != nil {
			return false, err
		}
		if !match || !ok {
			continue
		}
		err = s.st.UseRecoveryCode(ctx, t.ID, u.ID, c.Index, c.CreatedAt, s.now())
		if fault.Is(fault.Conflict, err) || fault.Is(fault.NotFound, err) {
			return false, nil // spent meanwhile, by another process
		}
		return err == nil, err
	}
	if !tried {
		// No candidate: an argon2id all the same, so that the time of a
		// try does not tell whether its tag matched.
		if _, err := s.cfg.Hasher.Verify(ctx, "", n); err != nil {
			return false, err
		}
	}
	return false, nil
}
