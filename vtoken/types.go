package vtoken

import "time"

// Version is the API version a token was created through.
type Version string

// API versions (path segments).
const (
	V1 Version = "V1.0" // tokens hold a 2048-bit RSA key
	V2 Version = "V2.0" // tokens hold RSA keys of 2048 to 4096 bits
)

// MaxKeySize returns the largest RSA key a token of version v may hold.
func (v Version) MaxKeySize() int {
	if v == V2 {
		return 4096
	}
	return 2048
}

// Token states. The specification names only the operation that marks
// provisioning complete; these are the two states it implies.
const (
	StateProvisioning = "provisioning" // certificates, label and passwords may change
	StateComplete     = "complete"     // provisioned: no more imports or label changes
)

// Role names of a token's passwords (PINs).
const (
	RoleUser  = "User"
	RoleAdmin = "Admin"
)

// PIN is the state of one role's password.
type PIN struct {
	Hash        string    // argon2id PHC string; "" when never set
	Failures    int       // consecutive wrong current passwords
	LockedUntil time.Time // zero unless locked after MaxPINFailures
}

// Token is a virtual smart card of one user.
type Token struct {
	TenantID   string
	UserID     string // the user's object id, base64url
	ID         string // GUID
	Label      string
	Version    Version
	MaxKeySize int // bits
	State      string
	User       PIN
	Admin      PIN
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// CertificateCount is filled by GetToken and ListTokens.
	CertificateCount int
}

// pin returns the PIN of role.
func (t *Token) pin(role string) *PIN {
	if role == RoleAdmin {
		return &t.Admin
	}
	return &t.User
}

// Certificate is a certificate held by a token: an imported end-entity
// certificate with its sealed private key, or a certificate of its chain
// (PrivateKey nil).
type Certificate struct {
	TenantID     string
	TokenID      string
	Thumbprint   string // SHA-1 of DER, upper-case hex; unique per token
	SerialNumber string // upper-case hex
	Subject      string
	Issuer       string
	NotBefore    time.Time
	NotAfter     time.Time
	KeyAlgorithm string // "RSA", "EC", "Ed25519"
	KeySize      int    // bits
	DER          []byte
	PrivateKey   []byte // sealed PKCS#8, nil for chain certificates
	Position     int    // order within its import: 0 is the end-entity certificate
	CreatedAt    time.Time
}

// CertificateRecord is the API's view of a Certificate (API.md).
type CertificateRecord struct {
	SerialNumber  string    `json:"serialNumber"`
	Subject       string    `json:"subject"`
	Issuer        string    `json:"issuer"`
	NotBefore     time.Time `json:"notBefore"`
	NotAfter      time.Time `json:"notAfter"`
	Thumbprint    string    `json:"thumbprint"`
	KeyAlgorithm  string    `json:"keyAlgorithm"`
	KeySize       int       `json:"keySize"`
	HasPrivateKey bool      `json:"hasPrivateKey"`
}

// Record returns c's API view.
func (c Certificate) Record() CertificateRecord {
	return CertificateRecord{
		SerialNumber: c.SerialNumber, Subject: c.Subject, Issuer: c.Issuer, NotBefore: c.NotBefore, NotAfter: c.NotAfter,
		Thumbprint: c.Thumbprint, KeyAlgorithm: c.KeyAlgorithm, KeySize: c.KeySize, HasPrivateKey: c.PrivateKey != nil,
	}
}

// TokenDetails is a V2.0 list item (API.md).
type TokenDetails struct {
	TokenID          string    `json:"tokenId"`
	Label            string    `json:"label"`
	State            string    `json:"state"`
	MaxKeySize       int       `json:"maxKeySize"`
	CreatedAt        time.Time `json:"createdAt"`
	CertificateCount int       `json:"certificateCount"`
}

// ExchangePublicKey is the tenant configuration served by Get tenant
// exchange public key: modulus and exponent big-endian, standard base64.
type ExchangePublicKey struct {
	KeyType  string `json:"keyType"`
	Modulus  string `json:"modulus"`
	Exponent string `json:"exponent"`
}

// Ref names a token (or, with TokenID "", a user) from a request path.
type Ref struct {
	TenantID string
	UserID   string
	TokenID  string
}
