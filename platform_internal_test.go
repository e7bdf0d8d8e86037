package latchkey

import (
	"strings"
	"testing"
)

// Lease owners carry Config.InstanceName, so an operator (or bench/chaos)
// can tell which process holds a lease, and a random suffix, so two
// processes given one name, or a process and its restart, never share one.
func TestLeaseOwnerNamesTheInstance(t *testing.T) {
	p := &Platform{cfg: Config{InstanceName: "p7"}}
	a, b := p.leaseOwner(), p.leaseOwner()
	if !strings.HasPrefix(a, "p7-") || !strings.HasPrefix(b, "p7-") || a == b {
		t.Errorf("lease owners %q and %q, want two distinct names starting p7-", a, b)
	}
	if o := (&Platform{}).leaseOwner(); o == "" || strings.HasPrefix(o, "-") {
		t.Errorf("lease owner without an instance name: %q", o)
	}
}
