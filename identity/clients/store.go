package clients

import (
	"context"
	"time"
)

// Store keeps the platform client CA, client profiles, registration tokens
// and registered clients. It is separate from identity.Store so that the
// identity core does not grow with client registration; the platform's Store
// embeds both. Every tenant-scoped method takes the tenant explicitly and
// treats another tenant's record exactly as a missing one. Methods return the
// fault kinds named below and fault.Internal for anything else; stores never
// read the clock (now is passed in) and are safe for concurrent use.
type Store interface {
	// CreateClientCA stores the platform's client CA. There is exactly one:
	// Conflict when one is already stored, so concurrent first starts agree
	// on the CA that was stored first (see Service.EnsureCA).
	CreateClientCA(ctx context.Context, ca CA) error
	// GetClientCA returns the stored client CA. NotFound when there is none.
	GetClientCA(ctx context.Context) (CA, error)

	// CreateProfile stores a client profile. Conflict when the id exists or
	// the tenant already has a profile with that name.
	CreateProfile(ctx context.Context, p Profile) error
	// GetProfile returns a tenant's profile by id. NotFound if absent.
	GetProfile(ctx context.Context, tenantID, id string) (Profile, error)
	// GetProfileByName returns a tenant's profile by name. NotFound if absent.
	GetProfileByName(ctx context.Context, tenantID, name string) (Profile, error)

	// CreateRegistrationToken stores a registration token (its hash only).
	// Conflict when the id or hash exists.
	CreateRegistrationToken(ctx context.Context, t RegistrationToken) error
	// GetRegistrationTokenByHash returns the token whose SHA-256 is hash,
	// whatever its state. NotFound if absent.
	GetRegistrationTokenByHash(ctx context.Context, hash []byte) (RegistrationToken, error)
	// UseRegistrationToken spends one registration of the token whose
	// SHA-256 is hash and returns it with Used incremented. The check and the
	// increment are one atomic step, so concurrent callers never register
	// more than MaxClients clients with one token. NotFound if absent;
	// Expired when now is not before ExpiresAt; Conflict when Used has
	// reached MaxClients. A refused call changes nothing.
	UseRegistrationToken(ctx context.Context, hash []byte, now time.Time) (RegistrationToken, error)

	// CreateClient stores a registered client. Conflict if the id exists.
	CreateClient(ctx context.Context, c Client) error
	// GetClient returns a tenant's client. NotFound if absent or deleted.
	GetClient(ctx context.Context, tenantID, id string) (Client, error)
	// LookupClient returns a client by id alone, whatever its tenant, for
	// the client login, where the id is the only name the caller gives.
	// NotFound if absent or deleted.
	LookupClient(ctx context.Context, id string) (Client, error)
	// ListClients returns a tenant's clients ordered by CreatedAt, then ID.
	ListClients(ctx context.Context, tenantID string) ([]Client, error)
	// DeleteClient removes a tenant's client, which revokes it: its
	// certificate no longer logs in. NotFound if absent.
	DeleteClient(ctx context.Context, tenantID, id string) error
}
