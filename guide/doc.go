// Package guide keeps the sessions of the interactive API guide (served by
// httpapi at /guide/): password login with the API login's check and
// throttle, single sign-on through a tenant's OpenID Connect provider
// (sso.go), and the spec's limits: a session ends after IdleTimeout (10
// minutes) without user activity while the guide is open, and
// ClosedTimeout (30 minutes) after the last login once its window is
// closed. Sessions live in the Store, keyed by the SHA-256 of their id;
// every login, failed login, logout and expiry is audited.
//
// The package does not serve HTTP; it is a client of the SSO provider only.
package guide
