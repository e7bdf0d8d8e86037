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
}

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
	// processes included): it reads up to PageSize events of the
	// subscription's types with Seq > Cursor and ReceivedAt >= notBefore,
	// oldest first, and advances the cursor past them — to the last one
	// returned when the page is full, else to the log's head (every event
	// up to it has been looked at). It also increments Pages and sets
	// LastRequest to now. When rec is not nil it is the audit record of
	// the retrieval: the store sets its Meta "results" (the number of
	// events) and "page" (the new Pages) and appends it, with
	// audit.LogStore.AppendAuditRecords' rules, in the same transaction, so
	// that a retrieval and its record are durable together with one
	// commit. It returns the subscription as updated and the events.
	// fault.NotFound when the tenant has no such subscription;
	// fault.Forbidden when clientID is not the subscription's ClientID;
	// on any error nothing is changed and rec is not stored.
	ConsumeNotifications(ctx context.Context, tenantID, id, clientID string, notBefore, now time.Time, rec *audit.Record) (Subscription, []events.Event, error)

	// CountNotifications counts the events sub would still return: of its
	// types, Seq > sub.Cursor and ReceivedAt >= notBefore, counted up to
	// limit (so the count costs at most limit index steps per type; a
	// result equal to limit means "at least that many").
	CountNotifications(ctx context.Context, sub Subscription, notBefore time.Time, limit int) (int, error)
}
