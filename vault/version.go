package vault

import "time"

// Version is one version of a key: its material, sealed, and its public
// key. Its JSON form is the API's version resource ({version, createdAt,
// activationDate, status, kid}); Status is filled in when it is read, from
// its key (see Key.StatusOf), and never stored.
type Version struct {
	TenantID       string    `json:"-"`
	KeyID          string    `json:"-"`
	Version        int       `json:"version"`
	CreatedAt      time.Time `json:"createdAt"`
	ActivationDate time.Time `json:"activationDate"`
	Status         string    `json:"status"`
	// KID is KID(Public): the hex of the first 8 bytes of the SHA-256 of
	// the SubjectPublicKeyInfo; none for symmetric keys.
	KID string `json:"kid,omitempty"`
	// Material is the private or secret material sealed under
	// MaterialPurpose(TenantID, KeyID, Version), nil once erased (trim,
	// destroy) and for public-only keys.
	Material []byte `json:"-"`
	// Public is the DER SubjectPublicKeyInfo, nil for symmetric keys. It
	// outlives the material.
	Public []byte `json:"-"`
	// Encryptions counts the encryptions made under the version (AES,
	// CHACHA20), as added to the store each minute.
	Encryptions int64 `json:"-"`
}
