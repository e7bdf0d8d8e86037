package eventstream

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/audit"
)

// Store keeps subscriptions, their delivery state and lease, and their dead
// letters. Subscriptions are keyed by (TenantID, ID); a tenant never reads
// another tenant's subscription.
//
// Every method returns fault.Internal for a failure of the store itself
// (fault.Unavailable when it is busy or unreachable) unless stated.
type Store interface {
	// CreateSubscription stores a new subscription with every field as
	// given (CursorAt must bound the events after Cursor, see
	// Subscription.CursorAt). An existing (TenantID, ID) is fault.Conflict.
	CreateSubscription(ctx context.Context, sub Subscription) error

	// GetSubscription returns a subscription; fault.NotFound when the
	// tenant has none with that id.
	GetSubscription(ctx context.Context, tenantID, id string) (Subscription, error)

	// ListSubscriptions returns up to limit subscriptions of a tenant and
	// kind with ID > afterID, in ascending ID order.
	ListSubscriptions(ctx context.Context, tenantID, kind, afterID string, limit int) ([]Subscription, error)

	// UpdateSubscription replaces the configuration of a stored
	// subscription (EventTypes, MaxPerSecond, NumberOfRetries, Auth,
	// GroupConfig, Connect, UpdatedAt) and, when resume is true, clears
	// Status.Paused, PausedAt and FailingSince. Endpoint, Kind, Cursor,
	// CursorAt, the rest of Status and the lease are kept. fault.NotFound
	// when absent.
	UpdateSubscription(ctx context.Context, sub Subscription, resume bool) error

	// DeleteSubscription deletes a subscription of a kind and its dead
	// letters; fault.NotFound when the tenant has none with that id and
	// kind.
	DeleteSubscription(ctx context.Context, tenantID, kind, id string) error

	// ClaimSubscriptions leases to owner, until now+leaseFor, every
	// subscription whose lease owner is owner or whose lease has lapsed
	// (LeaseUntil <= now), at most limit of the lapsed ones (own leases
	// are always renewed), and returns every subscription owner now
	// holds. Claims by concurrent callers (processes included) never
	// both win one subscription.
	ClaimSubscriptions(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, limit int) ([]Subscription, error)

	// ReleaseSubscription ends owner's lease on a subscription (LeaseUntil
	// becomes the zero time); nothing happens when owner does not hold it.
	ReleaseSubscription(ctx context.Context, tenantID, id, owner string) error

	// RecordDelivery applies u in one transaction when u.Owner holds a
	// live lease on the subscription (LeaseUntil > u.Now): sets Cursor (it
	// never moves back) and Status, adds NewDeadLetters, deletes the dead
	// letters Redelivered, and stores Redead's Attempts and LastError with
	// Requeued false. Unless u.Cursor is behind the stored Cursor, CursorAt
	// becomes the later of the stored one and u.CursorAt: a bound of an
	// earlier cursor also bounds the events after a later one, never the
	// reverse. A store whose log held events out of ReceivedAt order
	// before an upgrade keeps the stored CursorAt of a subscription made
	// before it until Cursor has passed those events. It appends u.Audit,
	// with audit.LogStore.AppendAuditRecords' rules, in the same
	// transaction. Without the lease it changes nothing, appends nothing
	// and returns fault.Conflict; a deleted subscription is
	// fault.NotFound.
	RecordDelivery(ctx context.Context, u DeliveryUpdate) error

	// ListDeadLetters returns up to limit dead letters of a subscription
	// with ID > afterID in ascending ID order; with requeuedOnly, only
	// those Requeued.
	ListDeadLetters(ctx context.Context, tenantID, subscriptionID, afterID string, requeuedOnly bool, limit int) ([]DeadLetter, error)

	// RequeueDeadLetters sets Requeued on the subscription's dead letters
	// whose ids are in ids (every one of them when ids is empty) and
	// returns how many it set.
	RequeueDeadLetters(ctx context.Context, tenantID, subscriptionID string, ids []string) (int, error)
}

// DeliveryUpdate is the outcome of a run of deliveries of one
// subscription, stored by Store.RecordDelivery. CursorAt is the ReceivedAt
// of the event at Cursor (see Subscription.CursorAt); the zero time keeps
// the stored one.
type DeliveryUpdate struct {
	TenantID, SubscriptionID, Owner string
	Now                             time.Time
	Cursor                          int64
	CursorAt                        time.Time
	Status                          Status
	NewDeadLetters                  []DeadLetter
	Redelivered                     []string
	Redead                          []DeadLetter
	// Audit are the records of the update (a dead letter, a pause),
	// durable with it or not at all: once the cursor has passed an event
	// nothing comes back to record what became of it.
	Audit []*audit.Record
}
