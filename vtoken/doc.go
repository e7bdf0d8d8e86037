// Package vtoken is virtual token provisioning (area G): virtual smart
// cards of a tenant's users, provisioned through an API key of the tenant.
// A token holds RSA keys imported from PFX (PKCS#12) files with their
// certificate chains (keys sealed at rest under the master key), two
// passwords (roles User and Admin, stored as argon2id, locked after
// repeated wrong ones) and a state that ends in "complete". Passwords may
// travel encrypted under the tenant's exchange key (RSA-OAEP, SHA-256).
// Beyond the specification, a token signs with its key once its User
// password is given.
//
// Service is the area's API, callable without HTTP (package httpapi serves
// it); Store is its storage, implemented by every platform store and
// checked by store/storetest. See docs/vtoken.md.
package vtoken
