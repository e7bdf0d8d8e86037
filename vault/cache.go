package vault

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// cache keeps, per process, the keys the cryptographic operations read and
// their opened versions, so that an operation costs no store read and no
// key parse. A key is read again when its entry is older than cacheTTL (on
// the platform's clock), at once after a change made through this process
// (forget), and after any change announced by another (expireAll): a
// change holds on every process within 5 seconds, as revocations do.
// Opened versions hold material that never changes; they are dropped when
// the key is deleted, trimmed or destroyed, and checked against the key's
// current record on every use, so a version erased elsewhere is refused
// as soon as the key is read again.
type cache struct {
	mu       sync.RWMutex
	epoch    uint64              // bumped by expireAll: older entries are stale
	keys     map[string]keyEntry // by tenant "\x00" id
	names    map[string]nameEntry
	versions map[versionKey]*opened
	kids     map[string]kidEntry // by tenant "\x00" id: kid -> version
}

type keyEntry struct {
	k     Key
	read  time.Time
	epoch uint64
}

type nameEntry struct {
	id    string
	read  time.Time
	epoch uint64
}

type kidEntry struct {
	byKID map[string]int
	read  time.Time
}

type versionKey struct {
	tenantID, keyID string
	version         int
}

// maxOpened bounds the opened versions kept; past it, arbitrary ones are
// dropped (and opened again when used).
const maxOpened = 10000

func newCache() *cache {
	return &cache{keys: map[string]keyEntry{}, names: map[string]nameEntry{}, versions: map[versionKey]*opened{}, kids: map[string]kidEntry{}}
}

func tenantKey(tenantID, s string) string { return tenantID + "\x00" + s }

// key returns the tenant's key r names, from the cache while its entry is
// fresh, else from the store.
func (c *cache) key(ctx context.Context, s *Service, tenantID string, r KeyRef) (Key, error) {
	now := s.cfg.Clock.Now()
	id, byID := r.isID()
	c.mu.RLock()
	epoch := c.epoch
	if !byID {
		if n, ok := c.names[tenantKey(tenantID, r.Key)]; ok && n.epoch == epoch && now.Sub(n.read) < cacheTTL {
			id, byID = n.id, true
		}
	}
	if byID {
		if e, ok := c.keys[tenantKey(tenantID, id)]; ok && e.epoch == epoch && now.Sub(e.read) < cacheTTL {
			c.mu.RUnlock()
			return e.k, nil
		}
	}
	c.mu.RUnlock()
	var (
		k   Key
		err error
	)
	if byID {
		k, err = s.cfg.Store.GetKey(ctx, tenantID, id)
	} else {
		k, err = s.cfg.Store.GetKeyByName(ctx, tenantID, r.Key)
	}
	if err != nil {
		return Key{}, err
	}
	c.mu.Lock()
	if c.epoch == epoch {
		tk := tenantKey(tenantID, k.ID)
		if old, ok := c.keys[tk]; ok && old.k.Revision != k.Revision {
			c.dropVersionsLocked(k, k.MinAvailableVersion)
		}
		c.keys[tk] = keyEntry{k: k, read: now, epoch: epoch}
		c.names[tenantKey(tenantID, k.Name)] = nameEntry{id: k.ID, read: now, epoch: epoch}
	}
	c.mu.Unlock()
	return k, nil
}

// forget drops k's entries after a change made through this process.
func (c *cache) forget(k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.keys, tenantKey(k.TenantID, k.ID))
	for name, n := range c.names {
		if n.id == k.ID {
			delete(c.names, name)
		}
	}
	delete(c.kids, tenantKey(k.TenantID, k.ID))
}

// expireAll makes every entry stale: another process changed a key.
func (c *cache) expireAll() {
	c.mu.Lock()
	c.epoch++
	c.mu.Unlock()
}

// dropVersions drops k's opened versions below below (every one for -1,
// and for a deleted or destroyed key).
func (c *cache) dropVersions(k Key, below int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropVersionsLocked(k, below)
}

func (c *cache) dropVersionsLocked(k Key, below int) {
	if Destroyed(k.State) {
		below = -1
	}
	for vk, o := range c.versions {
		if vk.tenantID == k.TenantID && vk.keyID == k.ID && (below < 0 || vk.version < below) {
			if o.raw != nil {
				clear(o.raw)
			}
			delete(c.versions, vk)
		}
	}
}

// opened returns version v of k opened, from the cache or the store. The
// caller has checked v against k (not trimmed, not destroyed).
func (c *cache) opened(ctx context.Context, s *Service, k Key, v int) (*opened, error) {
	vk := versionKey{k.TenantID, k.ID, v}
	c.mu.RLock()
	o, ok := c.versions[vk]
	c.mu.RUnlock()
	if ok {
		return o, nil
	}
	stored, err := s.cfg.Store.GetKeyVersion(ctx, k.TenantID, k.ID, v)
	if fault.Is(fault.NotFound, err) {
		return nil, fault.E(fault.Conflict, "version "+strconv.Itoa(v)+" of the key does not exist", err)
	}
	if err != nil {
		return nil, err
	}
	o, err = s.openStored(k, stored)
	if err != nil {
		return nil, err
	}
	if stored.Public == nil && o.spki != nil {
		if err := s.cfg.Store.SetKeyVersionPublic(ctx, k.TenantID, k.ID, v, o.spki, o.kid); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.versions[vk]; ok {
		clear(o.raw)
		return prev, nil // another caller opened it meanwhile: one counter
	}
	if len(c.versions) >= maxOpened {
		for other, old := range c.versions {
			if old.encryptions.Load() == 0 {
				delete(c.versions, other)
				break
			}
		}
	}
	c.versions[vk] = o
	return o, nil
}

// countedVersion is an opened version with encryption counts to store.
type countedVersion struct {
	tenantID, keyID string
	version         int
	o               *opened
}

// counted lists the opened versions whose counters are not zero.
func (c *cache) counted() []countedVersion {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []countedVersion
	for vk, o := range c.versions {
		if o.encryptions.Load() != 0 {
			out = append(out, countedVersion{vk.tenantID, vk.keyID, vk.version, o})
		}
	}
	return out
}

// kidVersion finds the version of k whose kid is kid: from the cache, else
// (a kid not seen yet, at most once a second per key) from the store.
func (c *cache) kidVersion(ctx context.Context, s *Service, k Key, kid string) (int, bool, error) {
	tk := tenantKey(k.TenantID, k.ID)
	now := s.cfg.Clock.Now()
	c.mu.RLock()
	e, ok := c.kids[tk]
	c.mu.RUnlock()
	if ok {
		if v, found := e.byKID[kid]; found {
			return v, true, nil
		}
		if now.Sub(e.read) < time.Second {
			return 0, false, nil
		}
	}
	vs, err := s.versions(ctx, k)
	if err != nil {
		return 0, false, err
	}
	byKID := map[string]int{}
	for _, v := range vs {
		if v.KID != "" {
			byKID[v.KID] = v.Version
		}
	}
	c.mu.Lock()
	c.kids[tk] = kidEntry{byKID: byKID, read: now}
	c.mu.Unlock()
	v, found := byKID[kid]
	return v, found, nil
}
