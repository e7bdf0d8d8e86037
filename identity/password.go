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
	"golang.org/x/sync/semaphore"

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

// Hasher hashes and verifies passwords with argon2id, and verifies the
// foreign hashes an import kept (see hash_comparator.go). Each check holds
// a CPU slot (at most concurrency at once: hashing is CPU-bound) and its
// memory out of max(concurrency × the argon2id memory, 128 MiB), weighted
// by what the hash needs: extra callers queue (honouring their context)
// instead of exhausting memory when many logins arrive together, so 200
// first logins with 128 MiB scrypt hashes wait their turn rather than ask
// for 25 GiB.
type Hasher struct {
	params PasswordParams
	sem    chan struct{}
	mem    *semaphore.Weighted // KiB
	memCap int64
	dummy  string // hash of a random password, verified when a user is unknown
}

// minHashMemoryKiB is the least memory the hashing slots share: enough for
// one check of the most expensive imported hash (128 MiB).
const minHashMemoryKiB = 128 << 10

// NewHasher returns a Hasher; concurrency <= 0 means GOMAXPROCS, since
// argon2id is CPU-bound and more parallel hashes only add memory.
func NewHasher(p PasswordParams, concurrency int) *Hasher {
	if concurrency <= 0 {
		concurrency = runtime.GOMAXPROCS(0)
	}
	memCap := max(int64(concurrency)*int64(p.MemoryKiB), minHashMemoryKiB)
	h := &Hasher{params: p, sem: make(chan struct{}, concurrency), mem: semaphore.NewWeighted(memCap), memCap: memCap}
	h.dummy = h.hash(rand.Text())
	return h
}

// MemoryCapacityKiB is the memory the hashing slots share.
func (h *Hasher) MemoryCapacityKiB() int64 { return h.memCap }

// Params returns the hasher's cost parameters.
func (h *Hasher) Params() PasswordParams { return h.params }

// acquire takes memKiB of the shared memory, then a CPU slot; release
// gives both back. Memory first, in FIFO order (semaphore.Weighted), so a
// large hash is not starved by small ones, and no CPU slot waits idle on
// memory.
func (h *Hasher) acquire(ctx context.Context, memKiB uint32) (release func(), err error) {
	w := min(int64(memKiB), h.memCap)
	if err := h.mem.Acquire(ctx, w); err != nil {
		return nil, fault.E(fault.Unavailable, "the server is busy; try again", err)
	}
	select {
	case h.sem <- struct{}{}:
		return func() { <-h.sem; h.mem.Release(w) }, nil
	case <-ctx.Done():
		h.mem.Release(w)
		return nil, fault.E(fault.Unavailable, "the server is busy; try again", ctx.Err())
	}
}

// Hash returns the PHC string of password. Under a recording span the
// wait for a hashing slot and the hash are a span (identity.hash_password)
// with an event when the slot is taken, so a slow login shows whether it
// queued or hashed.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	ctx, span := tracing.Start(ctx, "identity.hash_password")
	defer span.End()
	release, err := h.acquire(ctx, h.params.MemoryKiB)
	if err != nil {
		span.SetStatus(codes.Error, "no hashing slot")
		return "", err
	}
	defer release()
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
	release, err := h.acquire(ctx, h.params.MemoryKiB)
	if err != nil {
		span.SetStatus(codes.Error, "no hashing slot")
		return false, err
	}
	defer release()
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

// KeyLookup finds a tenant's named password-hash key (Firebase's hash
// config); fault.NotFound when there is none.
type KeyLookup func(ctx context.Context, name string) (FirebaseKey, error)

// CheckResult is what Check found.
type CheckResult struct {
	OK bool
	// Scheme is the stored hash's scheme.
	Scheme string
	// Upgrade, set when OK and the stored hash is foreign or an argon2id
	// weaker than the configured one, is an argon2id hash of the password
	// to store in its place.
	Upgrade string
}

// Check verifies password against a stored hash of any supported scheme
// (argon2id as Latchkey writes it, or a foreign hash an import kept), in
// one hashing slot weighted by the hash's memory. A hash that verifies and
// should be replaced is rehashed with argon2id in the same slot
// (CheckResult.Upgrade). An empty or unreadable stored hash, a missing
// key, or a failed check of a hash cheaper than the configured argon2id
// also runs the dummy argon2id, so that no failure answers faster than one
// for an unknown user.
//
// Under a recording span it is a span (identity.verify_password), as Hash.
func (h *Hasher) Check(ctx context.Context, encoded, password string, keys KeyLookup) (CheckResult, error) {
	ctx, span := tracing.Start(ctx, "identity.verify_password")
	defer span.End()
	var (
		ph  parsedHash
		err error
	)
	if strings.HasPrefix(encoded, "$argon2id$") {
		ph, err = parseArgon2Within(encoded, nativeArgon2)
	} else if encoded != "" {
		ph, err = parsePasswordHash(encoded)
	}
	if err == nil && ph != nil {
		if k, ok := ph.(keyedHash); ok && k.keyName() != "" {
			var key FirebaseKey
			if keys == nil {
				err = fault.E(fault.NotFound, "no password-hash keys")
			} else {
				key, err = keys(ctx, k.keyName())
			}
			if err != nil && !fault.Is(fault.NotFound, err) {
				return CheckResult{}, err
			}
			if err == nil {
				ph = k.withKey(key)
			}
		}
	}
	res := CheckResult{Scheme: PasswordSchemeOf(encoded)}
	mem := h.params.MemoryKiB
	if err == nil && ph != nil {
		mem = max(mem, ph.memoryKiB())
	}
	release, aerr := h.acquire(ctx, mem)
	if aerr != nil {
		span.SetStatus(codes.Error, "no hashing slot")
		return CheckResult{}, aerr
	}
	defer release()
	span.AddEvent("slot acquired")
	if err != nil || ph == nil {
		verifyPHC(h.dummy, password)
		return res, nil
	}
	pw := []byte(password)
	res.OK = ph.verify(pw)
	a, native := ph.(argon2Hash)
	native = native && a.id
	switch {
	case !res.OK && !(native && a.p.AtLeast(h.params)):
		verifyPHC(h.dummy, password)
	case res.OK && !(native && a.p.AtLeast(h.params)):
		res.Upgrade = h.hash(password)
	}
	return res, nil
}
