package memstore

import (
	"cmp"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// The generic shapes every area's methods share; callers hold s.mu.

// tenantKey is the map key of an entry whose id is unique within a tenant.
func tenantKey(tenantID, id string) string { return tenantID + "/" + id }

// lookup returns the stored m[k], or a NotFound error saying msg when there
// is none or match rejects it (match nil: none is rejected). Matches check,
// say, that the entry is the caller's tenant's, so that another tenant's
// looks just like a missing one.
func lookup[K comparable, V any](m map[K]V, k K, match func(V) bool, msg string) (V, error) {
	v, ok := m[k]
	if !ok || (match != nil && !match(v)) {
		var zero V
		return zero, fault.E(fault.NotFound, msg)
	}
	return v, nil
}

// get is lookup returning a clone of the entry.
func get[K comparable, V any](m map[K]V, k K, match func(V) bool, clone func(V) V, msg string) (V, error) {
	v, err := lookup(m, k, match, msg)
	if err != nil {
		return v, err
	}
	return clone(v), nil
}

// find returns a clone of any one entry that match accepts (clone nil: the
// values reference nothing), or a NotFound error saying msg.
func find[K comparable, V any](m map[K]V, match func(V) bool, clone func(V) V, msg string) (V, error) {
	for _, v := range m {
		if match(v) {
			if clone != nil {
				v = clone(v)
			}
			return v, nil
		}
	}
	var zero V
	return zero, fault.E(fault.NotFound, msg)
}

// update lets change edit the entry lookup finds and stores the result,
// unless change fails: then the entry stays as it was.
func update[K comparable, V any](m map[K]V, k K, match func(V) bool, msg string, change func(*V) error) error {
	v, err := lookup(m, k, match, msg)
	if err != nil {
		return err
	}
	if err := change(&v); err != nil {
		return err
	}
	m[k] = v
	return nil
}

// take deletes the entry lookup finds and returns it.
func take[K comparable, V any](m map[K]V, k K, match func(V) bool, msg string) (V, error) {
	v, err := lookup(m, k, match, msg)
	if err == nil {
		delete(m, k)
	}
	return v, err
}

// remove deletes the entry lookup finds.
func remove[K comparable, V any](m map[K]V, k K, match func(V) bool, msg string) error {
	_, err := take(m, k, match, msg)
	return err
}

// insert stores v at m[k], or returns a Conflict error saying msg when k
// is taken.
func insert[K comparable, V any](m map[K]V, k K, v V, msg string) error {
	return insertUnique(m, k, v, msg, nil, "")
}

// insertUnique is insert that also refuses v, with a Conflict error saying
// clashMsg, when clash (nil: never) says an entry has one of v's unique
// fields. The key is checked first, so a taken key always reports msg.
func insertUnique[K comparable, V any](m map[K]V, k K, v V, msg string, clash func(V) bool, clashMsg string) error {
	if _, ok := m[k]; ok {
		return fault.E(fault.Conflict, msg)
	}
	for _, o := range m {
		if clash != nil && clash(o) {
			return fault.E(fault.Conflict, clashMsg)
		}
	}
	m[k] = v
	return nil
}

// appendMatching appends to out clones of the values in m that keep
// accepts, in no particular order. Lists that return an empty non-nil
// slice pass one as out.
func appendMatching[K comparable, V any](out []V, m map[K]V, keep func(V) bool, clone func(V) V) []V {
	for _, v := range m {
		if keep(v) {
			out = append(out, clone(v))
		}
	}
	return out
}

// sortByTimeID sorts vs by the time key gives, then by its id: the order
// the SQL stores list in.
func sortByTimeID[V any](vs []V, key func(V) (time.Time, string)) {
	slices.SortFunc(vs, func(a, b V) int {
		ta, ida := key(a)
		tb, idb := key(b)
		return cmp.Or(ta.Compare(tb), cmp.Compare(ida, idb))
	})
}

// page returns up to limit of all from offset on (never nil), with
// len(all) as the total, for the List methods that page by offset.
func page[V any](all []V, offset, limit int) ([]V, int, error) {
	out := []V{}
	for i := max(offset, 0); i < len(all) && len(out) < limit; i++ {
		out = append(out, all[i])
	}
	return out, len(all), nil
}
