package events

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/filter"
)

// Store keeps each tenant's event log: one append-only sequence of events
// per tenant, numbered from 1 without gaps, read three ways — a filtered,
// paged query (newest first), a cursor read (oldest first after a sequence
// number, for notifications and event streams) and a retention delete.
//
// Every method returns fault.Internal for a failure of the store itself
// (fault.Unavailable when it is busy or unreachable) unless stated.
type Store interface {
	// AppendEvents appends evs, in order, to their tenants' logs in one
	// transaction (all or none). For each event it assigns ID (a new GUID)
	// and Seq, the next number of the event's tenant: sequences increase by
	// exactly one per event and are never reused, even after retention has
	// deleted every event of the tenant, and concurrent appenders (several
	// processes included) never interleave within one tenant's numbering.
	// The events passed in are updated in place. A ReceivedAt earlier
	// than that of the tenant's last event is raised to it, so that
	// ReceivedAt never decreases along a tenant's sequence: a bound on
	// ReceivedAt is then a bound on Seq, which prunes a log partitioned by
	// ReceivedAt (a Partitioner) and lets a cursor keep a lower bound on
	// every event after it (eventstream.Subscription.CursorAt). Events
	// stored before a store kept this order (PostgreSQL before its
	// migration 18, SQLite before its migration 20) may be out of it; every
	// later one is at or after all of them. TenantID, TypeID, Time,
	// ReceivedAt and Body must be set (as ValidateExternal or
	// ValidateNative leave them plus a TenantID); UserIDs is stored for
	// QueryEvents' UserID.
	AppendEvents(ctx context.Context, evs []*Event) error

	// QueryEvents returns a page of a tenant's events matching q, newest
	// first (descending Seq), and the number of matching events counted up
	// to q.CountLimit (so the count costs at most CountLimit index steps;
	// a result equal to CountLimit means "at least that many"). An invalid
	// filter (one filter.SQL refuses) is fault.Invalid.
	QueryEvents(ctx context.Context, tenantID string, q Query) (evs []Event, total int, err error)

	// ListEventsAfter returns up to limit events of a tenant with Seq >
	// afterSeq and ReceivedAt >= notBefore, oldest first (ascending Seq):
	// the read of a cursor. typeIDs, when not empty, keeps only events of
	// those types.
	ListEventsAfter(ctx context.Context, tenantID string, afterSeq int64, typeIDs []string, notBefore time.Time, limit int) ([]Event, error)

	// DeleteEventsBefore deletes up to limit events received before cutoff
	// (ReceivedAt < cutoff), of one tenant or, when tenantID is "", of
	// every tenant, and returns how many it deleted. Callers loop until it
	// returns fewer than limit, so that no transaction holds the log for
	// long. Sequence numbers of deleted events are not reused.
	DeleteEventsBefore(ctx context.Context, tenantID string, cutoff time.Time, limit int) (int, error)
}

// Partitioner is implemented by stores whose log is partitioned by
// ReceivedAt (PostgreSQL): retention drops whole partitions instead of
// deleting events one by one, and partitions must exist before events
// arrive. Service.DeleteExpired then calls MaintainPartitions instead of
// Store.DeleteEventsBefore, so an event outlives the retention by up to
// one partition's range.
type Partitioner interface {
	// MaintainPartitions creates the partitions the log needs for some
	// time after now and drops those wholly received before cutoff,
	// returning (an estimate of) how many events they held. Where several
	// processes share the store, one of them at a time does the work (the
	// others' calls return 0 and nil).
	MaintainPartitions(ctx context.Context, now, cutoff time.Time) (int64, error)
}

// AuditedAppender is implemented by stores that can append events and
// audit records in one transaction. When the Store implements it and the
// audit sink is an audit.Builder, the service writes the audit record of a
// successful post in the transaction of its events: the events and their
// record are durable together (one commit instead of two in turn), and a
// post is never answered before both are.
type AuditedAppender interface {
	// AppendEventsAudited does AppendEvents(evs) and
	// audit.LogStore.AppendAuditRecords(recs), with their contracts, in
	// one transaction: all of it or none. Either slice may be empty.
	AppendEventsAudited(ctx context.Context, evs []*Event, recs []*audit.Record) error
}

// Query selects events of one tenant for Store.QueryEvents.
type Query struct {
	// UserID, when set, keeps the events whose UserIDs hold it: end_user.id
	// or authenticated_user.id.
	UserID string
	// Filter, when not nil, keeps the events it matches (filter.Match on
	// the Body; SQL stores compile it with filter.SQL and Columns).
	Filter filter.Expr
	// Offset events are skipped, then at most Limit (>= 1) are returned.
	Offset, Limit int
	// CountLimit bounds the count of matching events; 0 skips counting
	// (total is then 0).
	CountLimit int
}

// Columns maps filter paths to the columns the SQL stores keep them in, so
// that filters on them use the (tenant, type, seq) and (tenant, time)
// indexes. Following filter.SQL's column contract, type_id holds
// event_type_id as text and occurred_at holds timestamp in TimeLayout text,
// both never NULL. SQL stores qualify the names with their table alias.
var Columns = map[string]string{"event_type_id": "type_id", "timestamp": "occurred_at"}

// IndexCond is a plain comparison of an indexed column with a text value.
type IndexCond struct {
	Column string // a value of Columns
	Op     string // "=", ">", ">=", "<" or "<="
	Value  string
}

// IndexConds returns comparisons on Columns that every event matched by e
// satisfies: e's top-level conjuncts that compare event_type_id or
// timestamp with a string. SQL stores add them, written plainly, next to
// the compiled filter so that the query planner uses the type and time
// indexes: filter.SQL wraps each comparison in COALESCE to keep logic
// two-valued, which no index serves. Adding an implied condition never
// changes the result.
func IndexConds(e filter.Expr) []IndexCond {
	var out []IndexCond
	var walk func(filter.Expr)
	walk = func(e filter.Expr) {
		switch e := e.(type) {
		case filter.And:
			walk(e.Left)
			walk(e.Right)
		case filter.Compare:
			col, ok := Columns[e.Path.String()]
			if !ok || e.Value.Kind != filter.String {
				return
			}
			v := e.Value.Str
			t, err := filter.ParseTime(v)
			isTime := err == nil
			if isTime {
				v = t.Format(TimeLayout)
			}
			sym := map[filter.Op]string{filter.Gt: ">", filter.Ge: ">=", filter.Lt: "<", filter.Le: "<="}[e.Op]
			switch {
			case e.Op == filter.Eq && !isTime:
				out = append(out, IndexCond{col, "=", v})
			case sym != "":
				out = append(out, IndexCond{col, sym, v})
			}
		}
	}
	if e != nil {
		walk(e)
	}
	return out
}
