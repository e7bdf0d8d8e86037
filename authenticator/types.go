// Package authenticator is area C of the platform: the FIDO authenticators
// of a tenant's users. Authenticators are imported from an external
// credential management system (their attestation verified with
// github.com/go-webauthn/webauthn against the tenant's relying party),
// read, suspended and resumed, renamed and deleted; the activation flow and
// inline registration are WebAuthn ceremonies run by the same service.
//
// The package is pure Go: httpapi serves it under
// {authenticator_url}/api/v1/tenants/{tenantCode}/users/{userId}/authenticators.
package authenticator

import (
	"time"

	"github.com/latchkey/latchkey/identity"
)

// TypeFIDO is the only authenticator type the API supports (rule 1).
const TypeFIDO = "FIDO"

// Authenticator states. The list is open-ended in the specification; these
// are the ones the service sets.
const (
	StatePending   = "pending"
	StateActive    = "active"
	StateSuspended = "suspended"
	StateLocked    = "locked"
)

// Provenances: imported through the API, or registered inline (in the
// service, through the WebAuthn attestation ceremony).
const (
	ProvenanceImported = "imported"
	ProvenanceInline   = "inline"
)

// Authenticator is one FIDO credential of a user.
type Authenticator struct {
	// ID is the credential id, base64url without padding: unique within a
	// tenant (a second import of the same credential is a conflict).
	ID       string
	TenantID string
	UserID   identity.ObjectID
	Type     string // TypeFIDO
	State    string
	// LastUsedAt is set by every assertion that names this credential,
	// LastSuccessAt only by a verified one.
	LastUsedAt    *time.Time
	LastSuccessAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time

	AAGUID       string // the attestation GUID, canonical UUID text
	FriendlyName string
	RPID         string
	SignCount    int64 // the authenticator's signature counter
	COSEAlg      int64 // the COSE algorithm of the credential key
	Provenance   string
	// PublicKey is the COSE_Key of the credential (public, not secret).
	PublicKey []byte
	// AttestationFormat is the attestation statement format of the
	// registration (none, packed, fido-u2f, tpm, ...), AttestationType the
	// verified attestation type (self, basic_full, attca, none...).
	AttestationFormat string
	AttestationType   string
}

// Challenge is a WebAuthn challenge issued by the service: single use and
// short-lived.
type Challenge struct {
	TenantID string
	// Value is the challenge, base64url without padding (as clientDataJSON
	// carries it).
	Value            string
	UserID           identity.ObjectID
	Ceremony         string // CeremonyCreate or CeremonyGet
	UserVerification string // required, preferred or discouraged
	CreatedAt        time.Time
	ExpiresAt        time.Time
}

// Ceremonies of a Challenge.
const (
	CeremonyCreate = "create"
	CeremonyGet    = "get"
)
