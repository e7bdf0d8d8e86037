package authenticator

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/audit"

	"github.com/latchkey/latchkey/identity"
)

// Store keeps authenticators and WebAuthn challenges. Every method takes the
// tenant explicitly, and a record of another tenant behaves exactly as one
// that does not exist. Implementations never read the clock (times come in
// the records and arguments), are safe for concurrent use, and return
// fault.Internal (fault.Unavailable when busy or unreachable) for any failure
// not named below.
type Store interface {
	// CreateAuthenticator stores a. It returns fault.Conflict when the
	// tenant already has an authenticator with a.ID (a credential id is in
	// use at most once per tenant, whichever user holds it).
	CreateAuthenticator(ctx context.Context, a Authenticator) error

	// GetAuthenticator returns the tenant's authenticator id, or
	// fault.NotFound.
	GetAuthenticator(ctx context.Context, tenantID, id string) (Authenticator, error)

	// ListAuthenticators returns the user's authenticators ordered by
	// CreatedAt then ID, skipping offset and returning at most limit, and
	// the number the user has in all. A page past the end is empty.
	ListAuthenticators(ctx context.Context, tenantID string, userID identity.ObjectID, offset, limit int) ([]Authenticator, int, error)

	// UpdateAuthenticator replaces the mutable fields of the stored
	// authenticator a.TenantID/a.ID (State, FriendlyName, SignCount,
	// LastUsedAt, LastSuccessAt, UpdatedAt) when its UpdatedAt still equals
	// prevUpdatedAt: a compare-and-set, so two concurrent assertions or
	// PATCHes cannot both apply to the same state. It returns
	// fault.NotFound when the authenticator does not exist and
	// fault.Conflict when it changed since it was read.
	UpdateAuthenticator(ctx context.Context, a Authenticator, prevUpdatedAt time.Time) error

	// DeleteAuthenticator removes the tenant's authenticator id, or
	// returns fault.NotFound.
	DeleteAuthenticator(ctx context.Context, tenantID, id string) error

	// CreateChallenge stores c (c.Value unique per tenant: fault.Conflict
	// otherwise) and deletes the challenges of every tenant that expired
	// before c.CreatedAt, so unused challenges do not accumulate.
	CreateChallenge(ctx context.Context, c Challenge) error

	// TakeChallenge deletes and returns the tenant's challenge value: a
	// challenge can be taken once. It returns fault.NotFound when there is
	// none (never issued, already taken or swept). Expiry is the caller's
	// to check.
	TakeChallenge(ctx context.Context, tenantID, value string) (Challenge, error)
}

// BatchStore is implemented by stores that can create several
// authenticators in one transaction (every store of this module does).
// When the Store is one, concurrent imports and registrations share
// transactions (group commit): one durable commit serves all of them,
// instead of one commit each.
type BatchStore interface {
	// CreateAuthenticators stores as in one transaction and returns, for
	// each, nil or fault.Conflict (its tenant already has that id,
	// including from earlier in as), as CreateAuthenticator would. err is
	// a failure of the whole transaction: then none is stored.
	CreateAuthenticators(ctx context.Context, as []Authenticator) (errs []error, err error)
}

// AuditedBatchStore is implemented by stores that can write the audit
// record of each creation in the transaction of the creations (every store
// of this module): with an audit.Builder sink, an import is then one commit, not
// two, and its record is durable exactly when it is.
type AuditedBatchStore interface {
	BatchStore
	// CreateAuthenticatorsAudited does CreateAuthenticators(as) and, in the
	// same transaction, appends for each i ok[i] when as[i] was stored and
	// conflict[i] when it was a conflict (nil records are skipped), with
	// audit.LogStore.AppendAuditRecords' rules.
	CreateAuthenticatorsAudited(ctx context.Context, as []Authenticator, ok, conflict []*audit.Record) (errs []error, err error)
}
