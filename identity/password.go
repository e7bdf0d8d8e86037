package identity

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"golang.org/x/crypto/argon2"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/tracing"
)

// PasswordParams are argon2id cost parameters.
type PasswordParams struct {
	Time      uint32 // iterations
	MemoryKiB uint32
	Threads   uint8
}

// OWASPMinimum returns OWASP's minimum recommended argon2id configuration
// (m=19 MiB, t=2, p=1), the default for passwords and PINs. It is a function
// so that no caller can lower the floor that latchkey.New enforces.
func OWASPMinimum() PasswordParams { return PasswordParams{Time: 2, MemoryKiB: 19 * 1024, Threads: 1} }

// AtLeast reports whether p costs at least as much as q in every dimension
// that matters for an attacker (memory and time).
func (p PasswordParams) AtLeast(q PasswordParams) bool {
	return p.MemoryKiB >= q.MemoryKiB && p.Time >= q.Time
}

const (
	saltLen = 16
	keyLen  = 32
)

// Hasher hashes and verifies passwords with argon2id. Each hash holds
// MemoryKiB of memory for its duration, so the number running at once is
// bounded: extra callers queue (honouring their context) instead of
// exhausting memory when many logins arrive together.
type Hasher struct {
	params PasswordParams
	sem    chan struct{}
	dummy  string // hash of a random password, verified when a user is unknown
}

// NewHasher returns a Hasher; concurrency <= 0 means GOMAXPROCS, since
// argon2id is CPU-bound and more parallel hashes only add memory.
func NewHasher(p PasswordParams, concurrency int) *Hasher {
	if concurrency <= 0 {
		concurrency = runtime.GOMAXPROCS(0)
	}
	h := &Hasher{params: p, sem: make(chan struct{}, concurrency)}
	h.dummy = h.hash(rand.Text())
	return h
}

// Params returns the hasher's cost parameters.
func (h *Hasher) Params() PasswordParams { return h.params }

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fault.E(fault.Unavailable, "the server is busy; try again", ctx.Err())
	}
}

func (h *Hasher) release() { <-h.sem }

// Hash returns the PHC string of password. Under a recording span the
// wait for a hashing slot and the hash are a span (identity.hash_password)
// with an event when the slot is taken, so a slow login shows whether it
// queued or hashed.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	ctx, span := tracing.Start(ctx, "identity.hash_password")
	defer span.End()
	if err := h.acquire(ctx); err != nil {
		span.SetStatus(codes.Error, "no hashing slot")
		return "", err
	}
	defer h.release()
	span.AddEvent("slot acquired")
	return h.hash(password), nil
}

func (h *Hasher) hash(password string) string {
	salt := make([]byte, saltLen)
	rand.Read(salt)
	p := h.params
	key := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// Verify reports whether password matches the PHC string encoded. An empty
// encoded value (unknown user) is checked against a dummy hash so that the
// answer takes as long as for a real user.
//
// Under a recording span it is a span (identity.verify_password), as Hash.
func (h *Hasher) Verify(ctx context.Context, encoded, password string) (bool, error) {
	ctx, span := tracing.Start(ctx, "identity.verify_password")
	defer span.End()
	if err := h.acquire(ctx); err != nil {
		span.SetStatus(codes.Error, "no hashing slot")
		return false, err
	}
	defer h.release()
	span.AddEvent("slot acquired")
	if encoded == "" {
		verifyPHC(h.dummy, password)
		return false, nil
	}
	return verifyPHC(encoded, password), nil
}

func verifyPHC(encoded, password string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	var p PasswordParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil {
		return false
	}
	if p.MemoryKiB == 0 || p.MemoryKiB > 1<<22 || p.Time == 0 || p.Time > 64 || p.Threads == 0 {
		return false
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(want) == 0 || len(want) > 128 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}
