package vault

import (
	"context"
	"fmt"

	"github.com/latchkey/latchkey/fault"
)

// Store keeps vault keys. Every method takes the tenant explicitly, and a key
// of another tenant behaves exactly as a key that does not exist, so no call
// can reveal another tenant's keys. Implementations store Key.Material as
// given (it is already sealed), never read the clock (times come in the
// Key), and return fault.Internal for any failure not named below. They are
// safe for concurrent use.
type Store interface {
	// CreateKey stores k, a key made by NewKey. It returns fault.Conflict
	// when the tenant already has a key with k.ID or with k.Name (names are
	// unique per tenant, so a key can be found by name).
	CreateKey(ctx context.Context, k Key) error

	// GetKey returns the tenant's key id, material included. It returns
	// fault.NotFound when the tenant has no such key.
	GetKey(ctx context.Context, tenantID, id string) (Key, error)

	// ListKeys returns one page of the tenant's keys matching q, ordered by
	// CreatedAt then ID (so pages are stable), and the number of keys
	// matching q on all pages. A page past the end is empty, not an error.
	// q is expected normalised (see ListQuery.Normalize).
	ListKeys(ctx context.Context, tenantID string, q ListQuery) (keys []Key, total int, err error)

	// DeleteKey removes the tenant's key id and its material. It returns
	// fault.NotFound when the tenant has no such key.
	DeleteKey(ctx context.Context, tenantID, id string) error
}

// Paging of key lists: the query parameters skip and limit.
const (
	DefaultListLimit = 10
	MaxListLimit     = 1000
)

// ListQuery selects a page of keys: GET {base_url}/vault/keys2?skip&limit&name.
type ListQuery struct {
	Skip  int    // keys to pass over, >= 0
	Limit int    // page size, 1..MaxListLimit
	Name  string // when not empty, only the key with exactly this name
}

// Normalize applies the defaults (limit 0 means DefaultListLimit) and
// returns fault.Invalid (field "skip" or "limit") for a negative skip or a
// limit outside 0..MaxListLimit.
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
	return q, nil
}
