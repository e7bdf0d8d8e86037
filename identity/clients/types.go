// Package clients is client registration and the registered-client login of
// area A: the platform client CA, client profiles, registration tokens,
// registered clients and the mutual-TLS client_credential login. It builds
// on package identity (principals, tenants, the JWT key set) and on the pure
// certificate core in identity/pki; it knows nothing of HTTP, so an embedder
// passes the TLS peer certificates in.
package clients

import (
	"time"
)

// CA is the stored form of the platform's client CA: the certificate in PEM
// and the private key sealed under the master key (pki.CA.Marshal).
type CA struct {
	CertPEM   []byte
	SealedKey []byte
	CreatedAt time.Time
}

// Certificate lifetimes of a profile, in days.
const (
	DefaultCertLifetimeDays = 365
	MaxCertLifetimeDays     = 3650
)

// Profile is a tenant's template for registering clients: how the subject DN
// of their certificates is formed, how long the certificates are valid and
// which role the clients' tokens carry.
type Profile struct {
	ID       string `json:"id"`
	TenantID string `json:"-"`
	Name     string `json:"name"` // unique per tenant
	// SubjectField is the subject attribute set to the client id: pki's
	// SubjectFieldUID (the default) or SubjectFieldCN.
	SubjectField     string    `json:"subject_dn_field_to_modify"`
	CertLifetimeDays int       `json:"cert_lifetime_days"`
	Role             string    `json:"role,omitempty"` // role of the clients' JWTs (DefaultClientRole unless given); "" only in profiles stored before that default
	CreatedAt        time.Time `json:"created_at"`
}

// RegistrationToken lets whoever holds it register up to MaxClients clients
// under a profile until ExpiresAt. The token text is random and shown once;
// only its SHA-256 is stored.
type RegistrationToken struct {
	ID         string
	TenantID   string
	ProfileID  string
	Hash       []byte // SHA-256 of the token text
	MaxClients int
	Used       int // clients registered with it so far
	ExpiresAt  time.Time
	CreatedAt  time.Time
}

// Client is a registered client: the holder of the private key of the
// certificate issued to it. Its ID is the client_id of the client login.
type Client struct {
	ID                  string
	TenantID            string
	Name                string
	ProfileID           string
	RegistrationTokenID string
	Role                string // copied from the profile at registration
	SubjectDN           string // RFC 4514 form of the certificate subject
	CertificatePEM      []byte
	Fingerprint         string // pki.Fingerprint of the certificate, checked at login
	Serial              string // certificate serial number, upper-case hex
	NotBefore           time.Time
	NotAfter            time.Time
	CreatedAt           time.Time
}
