// Package eventstream is area E: push subscriptions that deliver the
// tenant's events from the one event log to an HTTP endpoint, and
// directory-sync subscriptions that push user and group changes to an
// identity provider through the same engine.
//
// The configuration part (Service) is pure Go: it validates, seals secrets,
// stores and audits subscriptions. The delivery engine (Engine) reads the
// event log after a per-subscription cursor and POSTs each matching event
// as a CloudEvents 1.0 JSON document, at least once, in log order,
// rate-limited to maxPerSecond, retried with exponential backoff and jitter
// (honouring Retry-After), signed per Standard Webhooks for auth type hmac,
// and keeps a dead letter after the last retry. One process delivers a
// subscription at a time, through a lease in the store.
//
// See docs/eventstream.md for the API and the guarantees.
package eventstream
