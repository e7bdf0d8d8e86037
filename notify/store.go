package notify

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
)

// Subscription is a stored notification subscription.
type Subscription struct {
	ID           string    // unique within the tenant; matches IDPattern
	TenantID     string    // owner
	ClientID     string    // the OAuth client that may read it
	EventTypeIDs []string  // subscribed event types, distinct, in the order given
	SubscribedBy string    // the administrator's client id (or user id) that created it
	Created      time.Time // subscription_date; UTC, microsecond precision
	PageSize     int       // notifications per retrieval, 1..MaxPageSize
	// Cursor is the Seq of the last event of the tenant's log the
	// subscription has passed: retrieval reads after it.
	Cursor int64
	// Pages counts retrievals (the page of the last one).
	Pages int64
	// LastRequest is the time of the last retrieval; zero before the first.
	LastRequest time.Time
	// AckDeadline is ack_deadline_seconds: how long a page handed out by
	// an acknowledged retrieval stays leased to its poller before it is
	// handed out again (whole seconds, MinAckDeadline..MaxAckDeadline;
	// zero, in a store, is DefaultAckDeadline).
	AckDeadline time.Duration
}

// ackDeadline is sub's lease length, DefaultAckDeadline when unset.
func (sub Subscription) ackDeadline() time.Duration {
	if sub.AckDeadline <= 0 {
		return DefaultAckDeadline
	}
	return sub.AckDeadline
}

// LeaseUntil is when a page leased at now to a poller of sub is handed
// out again unless confirmed first. Stores call it so that every store
// computes the lease the same way.
func (sub Subscription) LeaseUntil(now time.Time) time.Time { return now.Add(sub.ackDeadline()) }

// Store keeps subscriptions and consumes notifications from the event log
// kept by the same store (events.Store). Every method returns
// fault.Internal for a failure of the store itself (fault.Unavailable when
// it is busy or unreachable) unless stated.
type Store interface {
	// CreateNotifySubscription stores sub with its Cursor set (in place) to the
	// current head of the tenant's event log: the Seq of the last event
	// ever appended, 0 when none was. Events appended after it returns
	// are later than the cursor. An ID already used in the tenant is
	// fault.Conflict.
	CreateNotifySubscription(ctx context.Context, sub *Subscription) error

	// GetNotifySubscription returns a tenant's subscription; fault.NotFound when
	// the tenant has none with that id.
	GetNotifySubscription(ctx context.Context, tenantID, id string) (Subscription, error)

	// DeleteNotifySubscription deletes a tenant's subscription; fault.NotFound
	// when the tenant has none with that id.
	DeleteNotifySubscription(ctx context.Context, tenantID, id string) error

	// ConsumeNotifications is one retrieval, in one transaction that
	// excludes every other retrieval of the same subscription (several
	// processes included). When the subscription has a leased page whose
	// lease lapsed (see LeaseNotifications), the oldest such page is
	// handed out again, with its page number and its events (those still
	// stored and received at or after notBefore), and consumed: its lease
	// ends (a plain retrieval is never confirmed), so it is never handed
	// out again; Cursor and Pages are kept. A lapsed page none of whose
	// events is left is dropped instead. Otherwise it reads up to
	// PageSize events of the subscription's types with Seq > Cursor and
	// ReceivedAt >= notBefore, oldest first, and advances the cursor past
	// them — to the last one returned when the page is full, else to the
	// log's head (every event up to it has been looked at) — and
	// increments Pages. It sets LastRequest to now either way. When rec
	// is not nil it is the audit record of the retrieval: the store sets
	// its Meta "results" (the number of events), "page" (the returned
	// page number) and "redelivered" (true on a lapsed page handed out
	// again) and appends it, with audit.LogStore.AppendAuditRecords'
	// rules, in the same transaction, so that a retrieval and its record
	// are durable together with one commit. It returns the subscription
	// as updated, the page number and the events.
	// fault.NotFound when the tenant has no such subscription;
	// fault.Forbidden when clientID is not the subscription's ClientID;
	// on any error nothing is changed and rec is not stored.
	ConsumeNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (Subscription, int64, []events.Event, error)

	// CountNotifications counts the events the next retrievals of sub
	// would return at now: those of the subscription's leased pages whose
	// lease lapsed (lease until <= now), then those of its types with
	// Seq > sub.Cursor; both received at or after notBefore. It counts up
	// to limit (so the count costs at most limit index steps per type,
	// and reads at most limit lapsed pages; a result equal to limit means
	// "at least that many"). A page whose lease is live is not counted:
	// it is with a poller, and no retrieval hands it out before it lapses.
	CountNotifications(ctx context.Context, sub Subscription, notBefore, now time.Time, limit int) (int, error)

	// LeaseNotifications is one acknowledged retrieval, with
	// ConsumeNotifications' transaction, errors and audit record, except
	// that pages are leased rather than consumed (the record's Meta also
	// has "ack" true):
	//   - When the subscription has a leased page whose lease lapsed
	//     (lease until <= now), the oldest such page is handed out again:
	//     its lease becomes sub.LeaseUntil(now) and it is returned with
	//     its page number and its events (those still stored and received
	//     at or after notBefore). Cursor and Pages are kept. A lapsed
	//     page none of whose events is left is dropped instead.
	//   - Otherwise the next page is read and the cursor advanced as
	//     ConsumeNotifications does, Pages incremented, and a page with
	//     results is kept leased until sub.LeaseUntil(now).
	// LastRequest is set to now either way.
	LeaseNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (Subscription, int64, []events.Event, error)

	// AckNotifications confirms page of a subscription: it is never handed
	// out again. It is nil for a page whose lease is live, and for a page
	// from 1 to Pages that is not leased (confirmed already, empty, or
	// handed out by ConsumeNotifications, a lapsed page included).
	// fault.Conflict when the page's lease lapsed (lease until <= now)
	// and it was not handed out again; fault.NotFound when the tenant has
	// no such subscription, and fault.NotFound with Field "page" when the
	// subscription never handed out that page; fault.Forbidden when
	// clientID is not the subscription's ClientID.
	AckNotifications(ctx context.Context, tenantID, id, clientID string, page int64, now time.Time) error

	// NextNotifyLapse returns the earliest time at which a leased page of
	// the subscription lapses, the zero time when none is leased.
	NextNotifyLapse(ctx context.Context, tenantID, id string) (time.Time, error)
}
