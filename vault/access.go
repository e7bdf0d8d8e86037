package vault

import (
	"fmt"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Scopes of the vault's OAuth access tokens (identity.ScopeVault*).
const (
	ScopeKeysRead   = identity.ScopeVaultKeysRead
	ScopeKeysAdmin  = identity.ScopeVaultKeysAdmin
	ScopeKeysExport = identity.ScopeVaultKeysExport
	ScopeEncrypt    = identity.ScopeVaultEncrypt
	ScopeDecrypt    = identity.ScopeVaultDecrypt
	ScopeDatakey    = identity.ScopeVaultDatakey
	ScopeSign       = identity.ScopeVaultSign
	ScopeVerify     = identity.ScopeVaultVerify
)

// Administrative actions: what vault:keys:admin allows, by name, since an
// application-owner's platform JWT allows only some of them.
const (
	AdminCreate   = "create"
	AdminImport   = "import"
	AdminUpdate   = "update"
	AdminRotate   = "rotate"
	AdminTrim     = "trim"
	AdminActivate = "activate"
	AdminRevoke   = "revoke"
	AdminDestroy  = "destroy"
	AdminDelete   = "delete"
	AdminWrapping = "wrapping-key rotate"
)

// ownerAdmin are the administrative actions an application-owner may take.
var ownerAdmin = []string{AdminCreate, AdminDelete, AdminUpdate, AdminRotate}

// ErrInsufficientScope marks a refusal for a missing OAuth scope, so that
// the HTTP layer answers with error="insufficient_scope" and names scope.
type ErrInsufficientScope struct{ Scope string }

func (e *ErrInsufficientScope) Error() string { return "insufficient_scope: " + e.Scope }

// viaAccessToken reports whether p authenticated with an OAuth access
// token, whose scopes alone decide; a platform JWT's roles decide
// otherwise (an OAuth client's role plays no part in the vault's scopes).
func viaAccessToken(p identity.Principal) bool { return p.Token == identity.AccessToken }

// authorize checks that p may act in the vault with scope (and, for
// vault:keys:admin, the administrative action). A refusal is
// fault.Forbidden; for an access token it wraps ErrInsufficientScope.
func authorize(p identity.Principal, scope, action string) error {
	if p.TenantID == "" {
		return fault.E(fault.Forbidden, "the vault needs a caller of a tenant")
	}
	if viaAccessToken(p) {
		if p.HasScope(scope) {
			return nil
		}
		return fault.E(fault.Forbidden, "the access token lacks scope "+scope, &ErrInsufficientScope{Scope: scope})
	}
	switch {
	case p.HasRole(identity.RoleTenantAdmin):
		return nil
	case p.HasRole(identity.RoleApplicationOwner):
		if scope == ScopeKeysExport {
			return fault.E(fault.Forbidden, "exporting keys needs the tenant-admin role")
		}
		if scope == ScopeKeysAdmin && !slices.Contains(ownerAdmin, action) {
			return fault.E(fault.Forbidden, "an application-owner may create, update, rotate and delete keys; "+action+" needs the tenant-admin role")
		}
		return nil
	}
	return fault.E(fault.Forbidden, "the vault requires the tenant-admin or application-owner role")
}

// authorizeAnyCrypto is random's check: any vault:crypto:* scope.
func authorizeAnyCrypto(p identity.Principal) error {
	if viaAccessToken(p) {
		for _, s := range p.Scopes {
			if strings.HasPrefix(s, "vault:crypto:") {
				return nil
			}
		}
		return fault.E(fault.Forbidden, "the access token lacks a vault:crypto:* scope", &ErrInsufficientScope{Scope: ScopeEncrypt})
	}
	return authorize(p, ScopeEncrypt, "")
}

// granted checks k's grants for op: a key without grants answers any
// caller its scope allows; a key with grants only a caller one of them
// names with op. A role grant names the roles of a platform JWT.
func granted(k Key, p identity.Principal, op string) error {
	if len(k.Grants) == 0 {
		return nil
	}
	for _, g := range k.Grants {
		if !slices.Contains(g.Operations, op) {
			continue
		}
		kind, who, _ := strings.Cut(g.Principal, ":")
		switch kind {
		case "client":
			if p.ClientID != "" && p.ClientID == who {
				return nil
			}
		case "user":
			if p.UserID != "" && p.UserID == who {
				return nil
			}
		case "role":
			if !viaAccessToken(p) && p.HasRole(who) {
				return nil
			}
		}
	}
	return fault.E(fault.Forbidden, fmt.Sprintf("no grant of this key allows %s to the caller", op))
}

// checkGrants validates grants as given in a create or PATCH body.
func checkGrants(gs []Grant) ([]Grant, error) {
	if len(gs) > 100 {
		return nil, fault.E(fault.Invalid, fault.Field("grants"), "at most 100 grants")
	}
	out := make([]Grant, 0, len(gs))
	for i, g := range gs {
		field := fault.Field(fmt.Sprintf("grants[%d]", i))
		kind, who, ok := strings.Cut(g.Principal, ":")
		if !ok || who == "" || len(g.Principal) > 512 || !slices.Contains([]string{"client", "user", "role"}, kind) {
			return nil, fault.E(fault.Invalid, field, `a grant's principal is "client:<client_id>", "user:<id>" or "role:<role>"`)
		}
		if kind == "role" && !slices.Contains([]string{identity.RoleTenantAdmin, identity.RoleApplicationOwner, identity.RoleUser}, who) {
			return nil, fault.E(fault.Invalid, field, fmt.Sprintf("role %q is not a role", who))
		}
		if len(g.Operations) == 0 {
			return nil, fault.E(fault.Invalid, field, "a grant names at least one operation")
		}
		ops := []string{}
		for _, op := range g.Operations {
			if !slices.Contains(CryptoOps, op) {
				return nil, fault.E(fault.Invalid, field, fmt.Sprintf("operation %q is not one of %s", op, strings.Join(CryptoOps, ", ")))
			}
			if !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
		out = append(out, Grant{Principal: g.Principal, Operations: ops})
	}
	return out, nil
}
