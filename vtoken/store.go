package vtoken

import (
	"context"
	"time"
)

// Store keeps virtual tokens, their imported certificates and each tenant's
// exchange key. Every method takes the tenant (and, for tokens, the user)
// explicitly: a token of another tenant or user behaves exactly as one that
// does not exist. Implementations store sealed values as given, never read
// the clock (times come in the arguments), and return fault.Internal for
// any failure not named below (fault.Unavailable when busy). They are safe
// for concurrent use.
type Store interface {
	// GetExchangeKey returns the tenant's sealed exchange key. It returns
	// fault.NotFound when the tenant has none yet.
	GetExchangeKey(ctx context.Context, tenantID string) ([]byte, error)

	// PutExchangeKey stores sealed as the tenant's exchange key unless it
	// already has one, and returns the key the tenant has afterwards: the
	// first key stored wins, so concurrent first callers all use one key.
	PutExchangeKey(ctx context.Context, tenantID string, sealed []byte) ([]byte, error)

	// CreateToken stores t (CertificateCount is ignored). It returns
	// fault.Conflict when the id exists, or when the user already holds
	// maxPerUser tokens (checked in the same transaction as the insert).
	CreateToken(ctx context.Context, t Token, maxPerUser int) error

	// GetToken returns a token of the user with its CertificateCount. It
	// returns fault.NotFound when the user has no such token.
	GetToken(ctx context.Context, tenantID, userID, id string) (Token, error)

	// ListTokens returns the user's tokens with their CertificateCount,
	// ordered by CreatedAt then ID; none is an empty list.
	ListTokens(ctx context.Context, tenantID, userID string) ([]Token, error)

	// UpdateToken reads the token, calls fn on it and stores what fn left
	// (Label, State, User, Admin and UpdatedAt; the other fields are
	// kept), all in one transaction, and returns the stored token. fn may
	// run more than once (a store retries a transaction that lost a race),
	// so it must derive its changes from the token it is given. An error
	// from fn aborts the update and is returned as is. It returns
	// fault.NotFound when the user has no such token.
	UpdateToken(ctx context.Context, tenantID, userID, id string, fn func(*Token) error) (Token, error)

	// DeleteToken removes the token and its certificates. It returns
	// fault.NotFound when the user has no such token.
	DeleteToken(ctx context.Context, tenantID, userID, id string) error

	// AddCertificates stores certs in the token, in one transaction, and
	// sets the token's UpdatedAt to now. A certificate whose Thumbprint
	// the token already holds replaces it. It returns fault.NotFound when
	// the user has no such token and fault.Conflict when the token's State
	// is StateComplete (checked in the same transaction).
	AddCertificates(ctx context.Context, tenantID, userID, tokenID string, certs []Certificate, now time.Time) error

	// ListCertificates returns the token's certificates, private keys
	// included, ordered by CreatedAt, Position, then Thumbprint. It returns
	// fault.NotFound when the user has no such token.
	ListCertificates(ctx context.Context, tenantID, userID, tokenID string) ([]Certificate, error)
}
