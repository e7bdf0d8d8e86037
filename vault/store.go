package vault

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

// Store keeps vault keys and their versions. Every method takes the tenant
// explicitly, and a key of another tenant behaves exactly as a key that
// does not exist, so no call can reveal another tenant's keys.
// Implementations store sealed material as given, never read the clock
// (times come in), and return fault.Internal for any failure not named
// below. They are safe for concurrent use.
type Store interface {
	// CreateKey stores c.Key, a new key, with its versions and audit
	// records, in one transaction. It returns fault.Conflict when the
	// tenant already has a key with the key's ID or Name (names are unique
	// per tenant, so a key can be found by name), and then writes nothing.
	CreateKey(ctx context.Context, c KeyCreate) error

	// GetKey returns the tenant's key id. It returns fault.NotFound when
	// the tenant has no such key.
	GetKey(ctx context.Context, tenantID, id string) (Key, error)

	// GetKeyByName returns the tenant's key named name, of any purpose;
	// fault.NotFound when there is none.
	GetKeyByName(ctx context.Context, tenantID, name string) (Key, error)

	// ListKeys returns one page of the tenant's keys of PurposeTenant
	// matching q, ordered by CreatedAt then ID (so pages are stable), and
	// the number of keys matching q on all pages. A page past the end is
	// empty, not an error. q is expected normalised (see ListQuery.Normalize).
	ListKeys(ctx context.Context, tenantID string, q ListQuery) (keys []Key, total int, err error)

	// DeleteKey removes the tenant's key id and all its versions. It
	// returns fault.NotFound when the tenant has no such key.
	DeleteKey(ctx context.Context, tenantID, id string) error

	// UpdateKey stores u.Key over the stored key of the same tenant and
	// id, only if the stored key's Revision is still u.Key.Revision
	// (compare-and-set); the stored revision becomes u.Key.Revision+1.
	// In the same transaction it inserts u.Add, if any, and erases the
	// material of the versions u.Erase selects. It returns fault.NotFound
	// when the key is gone, an error matching ErrChanged (fault.Conflict)
	// when its revision moved on, and fault.Conflict when the new name is
	// another key's. It leaves LeaseOwner, LeaseUntil and the versions'
	// Encryptions as they are.
	UpdateKey(ctx context.Context, u KeyUpdate) error

	// ListKeyVersions returns the versions of the tenant's key id in
	// version order; fault.NotFound when there is no such key.
	ListKeyVersions(ctx context.Context, tenantID, id string) ([]Version, error)

	// GetKeyVersion returns one version; fault.NotFound when the key or
	// the version does not exist.
	GetKeyVersion(ctx context.Context, tenantID, id string, version int) (Version, error)

	// SetKeyVersionPublic records the public key and kid of a version
	// stored without them (versions made before keys had them); it does
	// nothing to a version that has one.
	SetKeyVersionPublic(ctx context.Context, tenantID, id string, version int, public []byte, kid string) error

	// AddKeyEncryptions adds n to a version's Encryptions and returns the
	// new count; fault.NotFound when the version does not exist.
	AddKeyEncryptions(ctx context.Context, tenantID, id string, version int, n int64) (int64, error)

	// ClaimKeys gives owner, until now+leaseFor, the lease of up to limit
	// keys whose NextEventAt has come (NextEventAt <= now) and whose lease
	// has lapsed (LeaseUntil <= now) or is owner's, and returns them. A
	// key is claimed by at most one owner at a time, across processes.
	ClaimKeys(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]Key, error)

	// ReleaseKey ends owner's lease on a key (LeaseUntil becomes the zero
	// time); it does nothing when owner does not hold it.
	ReleaseKey(ctx context.Context, tenantID, id, owner string) error
}

// ErrChanged is the cause of UpdateKey's refusal when the key changed
// since it was read: the caller reads it again and retries.
var ErrChanged = errors.New("vault: the key changed since it was read")

// KeyCreate is the write of a new key.
type KeyCreate struct {
	Key Key
	// Versions are the key's versions, 0 first then ascending: one for a
	// made key, the earlier keys' for a platform signing key that takes
	// them over (see SetupSigningKeys).
	Versions []Version
	// Audit is records to append to the audit log with the key (see
	// KeyUpdate.Audit).
	Audit []*audit.Record
}

// KeyUpdate is one compare-and-set write of a key.
type KeyUpdate struct {
	// Key is the new record; its Revision is the one it was read at.
	Key Key
	// Add is a version to insert (rotation, import), or nil.
	Add *Version
	// EraseBelow erases the material of the versions below it (trim);
	// EraseAll that of every version (destroy).
	EraseBelow int
	EraseAll   bool
	// Audit is records to append to the audit log in the same transaction
	// (see audit.LogStore for the chain rules): a change the platform
	// makes by itself (a rotation or a date's change on the rotation
	// pass) is then stored with its record or not at all, so a process
	// killed between the two cannot leave a rotation nobody audited.
	Audit []*audit.Record
}

// Paging of key lists: the query parameters skip and limit.
const (
	DefaultListLimit = 10
	MaxListLimit     = 1000
)

// ListQuery selects a page of keys: GET {base_url}/vault/keys2?skip&limit&name&algorithm&state.
type ListQuery struct {
	Skip      int    // keys to pass over, >= 0
	Limit     int    // page size, 1..MaxListLimit
	Name      string // when not empty, only the key with exactly this name
	Algorithm string // when not empty, only keys of this algorithm
	State     string // when not empty, only keys in this state
}

// Normalize applies the defaults (limit 0 means DefaultListLimit) and
// returns fault.Invalid (field "skip", "limit", "algorithm" or "state") for
// a negative skip, a limit outside 0..MaxListLimit, or an unknown algorithm
// or state. Algorithms are read in any case; states by their KMIP names,
// in any case.
func (q ListQuery) Normalize() (ListQuery, error) {
	if q.Skip < 0 {
		return ListQuery{}, fault.E(fault.Invalid, fault.Field("skip"), "skip must not be negative")
	}
	if q.Limit < 0 || q.Limit > MaxListLimit {
		return ListQuery{}, fault.E(fault.Invalid, fault.Field("limit"), fmt.Sprintf("limit must be between 1 and %d", MaxListLimit))
	}
	if q.Limit == 0 {
		q.Limit = DefaultListLimit
	}
	if q.Algorithm != "" {
		a := strings.ToUpper(strings.TrimSpace(q.Algorithm))
		if !slices.Contains([]string{AlgorithmAES, AlgorithmChaCha20, AlgorithmHMAC, AlgorithmRSA, AlgorithmEC, AlgorithmEd25519, AlgorithmMLDSA, AlgorithmMLKEM, AlgorithmXWing}, a) {
			return ListQuery{}, fault.E(fault.Invalid, fault.Field("algorithm"), fmt.Sprintf("algorithm %q is not a key algorithm", q.Algorithm))
		}
		q.Algorithm = a
	}
	if q.State != "" {
		i := slices.IndexFunc(States, func(s string) bool { return strings.EqualFold(s, strings.TrimSpace(q.State)) })
		if i < 0 {
			return ListQuery{}, fault.E(fault.Invalid, fault.Field("state"), fmt.Sprintf("state %q is not a key state; use %s", q.State, strings.Join(States, ", ")))
		}
		q.State = States[i]
	}
	return q, nil
}
