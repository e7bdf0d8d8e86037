// Package notify is area D: notification subscriptions read by polling.
//
// A subscription names event types (event_type_ids) and the OAuth client
// that may read it (client_id). It keeps a cursor into its tenant's event
// log (package events): nothing is copied per subscriber. Retrieval reads
// the next page of matching events after the cursor and advances the
// cursor in the same store transaction, so each notification is returned
// at most once, whichever process or poller asks. A new subscription's
// cursor starts at the log's head: it sees only later events.
//
// Retention is enforced when reading: an event received more than the
// tenant's NotificationRetentionSeconds ago is neither returned nor
// counted, whether or not the events clean-up has deleted it.
//
// Retrieval may wait (long polling) for events to arrive, woken by a Waker
// (events.Service.Appended, which other processes sharing PostgreSQL wake
// through LISTEN/NOTIFY).
package notify
