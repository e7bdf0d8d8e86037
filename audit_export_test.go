package latchkey_test

import (
	"testing"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
)

// The audit package cannot import identity (identity records through it), so
// it repeats the names it authorizes with; they must not drift.
func TestAuditAuthorizationNamesMatchIdentity(t *testing.T) {
	for _, c := range []struct{ audit, identity string }{
		{audit.ScopeExport, identity.ScopeAuditExport},
		{audit.RoleTenantAdmin, identity.RoleTenantAdmin},
		{audit.RoleApplicationOwner, identity.RoleApplicationOwner},
	} {
		if c.audit != c.identity {
			t.Errorf("audit has %q where identity has %q", c.audit, c.identity)
		}
	}
}
