package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/internal/ids"
)

var _ events.Store = (*Store)(nil)

// lockEventHead locks a tenant's event head for the rest of the
// transaction and returns its seq and the received_at of the tenant's last
// event (NULL before its first append), creating it on the tenant's first
// append; see lockHead for why one upsert does both.
//
// Every database keeps received_at in the head and raises an append's
// earlier received_at to it, so that received_at never decreases along a
// tenant's seqs (events.Store.AppendEvents): on a partitioned log that is
// what lets a bound on one bound the other; event-stream cursors rely on
// it on every database (eventstream.Subscription.CursorAt).
const (
	lockEventHead = `INSERT INTO event_heads (tenant_id, seq) VALUES ($1, 0)
	ON CONFLICT (tenant_id) DO UPDATE SET seq = event_heads.seq
	RETURNING seq, received_at`
	advanceEvents = `UPDATE event_heads SET seq = $2, received_at = $3 WHERE tenant_id = $1`
)

// The user row of a partitioned log (see Dialect.PartitionedLogs) carries
// its event's received_at.
const insertEventUserAt = `INSERT INTO event_users (tenant_id, user_id, seq, received_at) VALUES ($1, $2, $3, $4)`

const (
	insertEvent     = `INSERT INTO events (tenant_id, seq, id, type_id, occurred_at, received_at, user_ids, body, trace_parent) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	insertEventUser = `INSERT INTO event_users (tenant_id, user_id, seq) VALUES ($1, $2, $3)`
	eventHeadOf     = `SELECT seq FROM event_heads WHERE tenant_id = $1`
	eventCols       = `e.seq, e.id, e.tenant_id, e.type_id, e.occurred_at, e.received_at, e.user_ids, e.body, e.trace_parent`
)

// AppendEvents implements events.Store: the heads of the call's tenants
// are locked (in tenant id order), the events numbered from them and
// inserted, the heads advanced, in one Conn.Pipeline transaction.
func (s *Store) AppendEvents(ctx context.Context, evs []*events.Event) error {
	return s.AppendEventsAudited(ctx, evs, nil)
}

var _ events.AuditedAppender = (*Store)(nil)

// AppendEventsAudited implements events.AuditedAppender: AppendEvents and
// AppendAuditRecords in one transaction, so a post and its audit record
// need one commit (one fsync). It locks the event heads (in tenant id
// order), then the audit heads (likewise); appends of one kind lock only
// their own heads, so no two appends can deadlock.
func (s *Store) AppendEventsAudited(ctx context.Context, evs []*events.Event, recs []*audit.Record) error {
	if len(evs) == 0 && len(recs) == 0 {
		return nil
	}
	ea := newEventAppend(evs, &s.d)
	aa := newAuditAppend(recs)
	return s.c.Pipeline(ctx, func(b *Batch) {
		ea.lock(b)
		aa.lock(b)
	}, func(b *Batch) {
		ea.write(b)
		aa.write(b)
	})
}

// eventAppend is the statements of one append of events, in the two
// batches of Conn.Pipeline: lock, then write.
type eventAppend struct {
	evs     []*events.Event
	tenants []string // sorted, distinct
	heads   map[string]int64
	// at is each head's received_at: no event is stored with an earlier
	// one.
	at map[string]time.Time
	d  *Dialect
}

func newEventAppend(evs []*events.Event, d *Dialect) *eventAppend {
	a := &eventAppend{evs: evs, d: d, at: make(map[string]time.Time)}
	for _, e := range evs {
		a.tenants = append(a.tenants, e.TenantID)
	}
	slices.Sort(a.tenants)
	a.tenants = slices.Compact(a.tenants)
	return a
}

// lock queues the locks of the heads, in tenant id order; their results
// fill a.heads and a.at.
func (a *eventAppend) lock(b *Batch) {
	a.heads = make(map[string]int64, len(a.tenants))
	for _, id := range a.tenants {
		b.QueryRow(func(row Row) error {
			var (
				seq int64
				at  *time.Time
			)
			if err := row.Scan(&seq, &at); err != nil {
				return err
			}
			a.heads[id], a.at[id] = seq, orZero(at)
			return nil
		}, lockEventHead, id)
	}
}

// write numbers the events from the locked heads, gives them ids, raises
// a received_at before the head's to it, and queues their inserts (with
// their user rows) and the heads' advance.
func (a *eventAppend) write(b *Batch) {
	if a.d.InsertEvents != "" {
		a.writeRows(b)
		return
	}
	for _, e := range a.evs {
		seq := a.number(e)
		users := e.UserIDs
		if users == nil {
			users = []string{}
		}
		b.Exec(nil, insertEvent, e.TenantID, seq, e.ID, e.TypeID, e.Time.UTC().Format(events.TimeLayout), e.ReceivedAt, users, string(e.Body), e.TraceParent)
		for _, u := range e.UserIDs {
			if a.d.PartitionedLogs {
				b.Exec(nil, insertEventUserAt, e.TenantID, u, seq, e.ReceivedAt)
			} else {
				b.Exec(nil, insertEventUser, e.TenantID, u, seq)
			}
		}
	}
	a.advance(b)
}

// number gives e the next seq of its tenant and a new id, and raises a
// received_at before the head's to it.
func (a *eventAppend) number(e *events.Event) int64 {
	seq := a.heads[e.TenantID] + 1
	a.heads[e.TenantID] = seq
	e.Seq, e.ID = seq, ids.NewGUID()
	if last := a.at[e.TenantID]; e.ReceivedAt.Before(last) {
		e.ReceivedAt = last
	}
	a.at[e.TenantID] = e.ReceivedAt
	return seq
}

// advance queues the heads' advance to the last numbers and received_at
// given.
func (a *eventAppend) advance(b *Batch) {
	for _, id := range a.tenants {
		b.Exec(nil, advanceEvents, id, a.heads[id], a.at[id])
	}
}

// writeRows is write with Dialect.InsertEvents: the rows go as arrays.
func (a *eventAppend) writeRows(b *Batch) {
	n := len(a.evs)
	var (
		tenants, evIDs, types, occurred, users, bodies, traces = make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		seqs             = make([]int64, n)
		received         = make([]time.Time, n)
		uTenants, uUsers []string
		uSeqs            []int64
		uReceived        []time.Time
	)
	for i, e := range a.evs {
		seq := a.number(e)
		u := e.UserIDs
		if u == nil {
			u = []string{}
		}
		tenants[i], seqs[i], evIDs[i], types[i] = e.TenantID, seq, e.ID, e.TypeID
		occurred[i], received[i], users[i] = e.Time.UTC().Format(events.TimeLayout), e.ReceivedAt, jsonText(u)
		bodies[i], traces[i] = string(e.Body), e.TraceParent
		for _, uid := range e.UserIDs {
			uTenants, uUsers, uSeqs, uReceived = append(uTenants, e.TenantID), append(uUsers, uid), append(uSeqs, seq), append(uReceived, e.ReceivedAt)
		}
	}
	b.Exec(nil, a.d.InsertEvents, tenants, seqs, evIDs, types, occurred, received, users, bodies, traces)
	if len(uTenants) > 0 {
		b.Exec(nil, a.d.InsertEventUsers, uTenants, uUsers, uSeqs, uReceived)
	}
	a.advance(b)
}

// eventWhere builds FROM and WHERE of a query: tenant, user through
// event_users, the compiled filter and the plain index conditions it
// implies.
//
// since, when not nil, keeps the events received since then (see
// QueryEvents), on both tables of a join.
func (s *Store) eventWhere(tenantID string, q events.Query, since *time.Time) (from, where string, args []any, err error) {
	var conds []string
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.UserID != "" {
		from = `event_users u JOIN events e ON e.tenant_id = u.tenant_id AND e.seq = u.seq`
		if s.d.PartitionedLogs {
			// Each probe of events prunes to the row's partition.
			from += ` AND e.received_at = u.received_at`
		}
		conds = append(conds, `u.tenant_id = `+arg(tenantID), `u.user_id = `+arg(q.UserID))
		if since != nil {
			// On both sides: the planner does not carry a range across
			// the join's equality.
			n := arg(*since)
			conds = append(conds, `u.received_at >= `+n, `e.received_at >= `+n)
		}
	} else {
		from = `events e`
		conds = append(conds, `e.tenant_id = `+arg(tenantID))
		if since != nil {
			conds = append(conds, `e.received_at >= `+arg(*since))
		}
	}
	if q.Filter != nil {
		// The plain type and time comparisons steer the planner to the
		// type and time indexes. With a user the walk of that user's
		// event_users rows is the one to take (a user has few events of
		// the log, a type many): the comparisons are left out so that
		// the planner cannot prefer a type index walk over the whole log.
		if q.UserID == "" {
			for _, c := range events.IndexConds(q.Filter) {
				conds = append(conds, "e."+c.Column+" "+c.Op+" "+arg(c.Value))
			}
		}
		cols := make(map[string]string, len(events.Columns))
		for p, c := range events.Columns {
			cols[p] = "e." + c
		}
		w, fargs, err := filter.SQL(q.Filter, filter.Dialect{Engine: s.d.Filter, FirstArg: len(args) + 1, Body: "e.body"}, cols)
		if err != nil {
			return "", "", nil, err
		}
		conds = append(conds, w)
		args = append(args, fargs...)
	}
	return from, strings.Join(conds, " AND "), args, nil
}

// QueryEvents implements events.Store. Without a user the page walks
// (tenant_id, seq) or, for a type filter, (tenant_id, type_id, seq)
// backwards; with a user it walks event_users' (tenant_id, user_id, seq).
//
// With Dialect.RecentEvents the page and the count are first read from
// the tenant's recent events only (on a partitioned log: the newest
// partitions, the others pruned when the statements are planned). Since
// seqs and received_at grow together, the newest matches there are the
// newest of the whole log: when they fill the page and reach the count's
// limit, they are the answer; what falls short is read again from the
// whole log.
func (s *Store) QueryEvents(ctx context.Context, tenantID string, q events.Query) ([]events.Event, int, error) {
	since, err := s.recentSince(ctx, tenantID)
	if err != nil {
		return nil, 0, err
	}
	recent := since != nil
	page, count, args, err := s.eventQueries(tenantID, q, since)
	if err != nil {
		return nil, 0, err
	}
	evs, err := s.readEvents(ctx, s.c.Read(), page, append(slices.Clip(args), q.Limit, q.Offset)...)
	if err != nil {
		return nil, 0, err
	}
	total, err := s.countEvents(ctx, count, args, q.CountLimit)
	if err != nil || !recent || (len(evs) == q.Limit && total == q.CountLimit) {
		return evs, total, err
	}
	page, count, args, err = s.eventQueries(tenantID, q, nil)
	if err != nil {
		return nil, 0, err
	}
	if len(evs) < q.Limit {
		if evs, err = s.readEvents(ctx, s.c.Read(), page, append(slices.Clip(args), q.Limit, q.Offset)...); err != nil {
			return nil, 0, err
		}
	}
	if total < q.CountLimit {
		total, err = s.countEvents(ctx, count, args, q.CountLimit)
	}
	return evs, total, err
}

// countEvents runs an events count statement up to limit (0: none).
func (s *Store) countEvents(ctx context.Context, count string, args []any, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	total := 0
	err := s.c.Read().QueryRow(ctx, count, append(slices.Clip(args), limit)...).Scan(&total)
	return total, s.c.MapErr(err)
}

// recentSince runs Dialect.RecentEvents: nil when there is none, or it
// has no answer.
func (s *Store) recentSince(ctx context.Context, tenantID string) (*time.Time, error) {
	if s.d.RecentEvents == "" {
		return nil, nil
	}
	var since *time.Time
	err := s.c.Read().QueryRow(ctx, s.d.RecentEvents, tenantID).Scan(&since)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, s.c.MapErr(err)
	}
	return since, nil
}

// EventQuery returns the statement QueryEvents runs first for a page, with
// its arguments (the page's limit and offset last): for a look at its plan
// (EXPLAIN) in tests and by operators.
func (s *Store) EventQuery(ctx context.Context, tenantID string, q events.Query) (string, []any, error) {
	since, err := s.recentSince(ctx, tenantID)
	if err != nil {
		return "", nil, err
	}
	page, _, args, err := s.eventQueries(tenantID, q, since)
	return page, append(args, q.Limit, q.Offset), err
}

// eventQueries returns the page and count statements of a query and
// their common arguments; the page's limit and offset, or the count's
// limit, follow them. since: see eventWhere.
func (s *Store) eventQueries(tenantID string, q events.Query, since *time.Time) (page, count string, args []any, err error) {
	from, where, args, err := s.eventWhere(tenantID, q, since)
	if err != nil {
		return "", "", nil, err
	}
	order := "e.seq"
	if q.UserID != "" {
		order = "u.seq"
	}
	n := strconv.Itoa(len(args) + 1)
	page = `SELECT ` + eventCols + ` FROM ` + from + ` WHERE ` + where + ` ORDER BY ` + order + ` DESC LIMIT $` + n + ` OFFSET $` + strconv.Itoa(len(args)+2)
	inner := ``
	if s.d.PartitionedLogs {
		// The count walks the page's index too, and stops at its limit:
		// left to choose, PostgreSQL's planner reads the whole of a
		// partition's type range into a bitmap first.
		inner = ` ORDER BY ` + order + ` DESC`
	}
	count = `SELECT count(*) FROM (SELECT 1 FROM ` + from + ` WHERE ` + where + inner + ` LIMIT $` + n + `) c`
	return page, count, args, nil
}

// readEvents runs a query of eventCols on q.
func (s *Store) readEvents(ctx context.Context, q Querier, query string, args ...any) ([]events.Event, error) {
	return list(ctx, s, q, func(row Row) (events.Event, error) {
		var (
			e        events.Event
			occurred string
			body     []byte
		)
		if err := row.Scan(&e.Seq, &e.ID, &e.TenantID, &e.TypeID, &occurred, &e.ReceivedAt, &e.UserIDs, &body, &e.TraceParent); err != nil {
			return events.Event{}, err
		}
		t, err := time.Parse(events.TimeLayout, occurred)
		if err != nil {
			return events.Event{}, fault.E(fault.Internal, err)
		}
		e.Time, e.Body = t, body
		if len(e.UserIDs) == 0 {
			e.UserIDs = nil
		}
		return e, nil
	}, query, args...)
}

// ListEventsAfter implements events.Store: a forward walk of (tenant_id,
// seq), or of (tenant_id, type_id, seq) for one type. On a partitioned log
// the bound on received_at leaves out the partitions before notBefore
// (the planner prunes them; a cursor's walk by seq would otherwise probe
// each partition's index once).
func (s *Store) ListEventsAfter(ctx context.Context, tenantID string, afterSeq int64, typeIDs []string, notBefore time.Time, limit int) ([]events.Event, error) {
	q, args := s.EventsAfterQuery(tenantID, afterSeq, typeIDs, notBefore, limit)
	return s.readEvents(ctx, s.c.Read(), q, args...)
}

// EventsAfterQuery returns the statement ListEventsAfter runs, with its
// arguments: for a look at its plan (EXPLAIN) in tests and by operators.
func (s *Store) EventsAfterQuery(tenantID string, afterSeq int64, typeIDs []string, notBefore time.Time, limit int) (string, []any) {
	q := `SELECT ` + eventCols + ` FROM events e WHERE e.tenant_id = $1 AND e.seq > $2 AND e.received_at >= $3`
	args := []any{tenantID, afterSeq, notBefore}
	if len(typeIDs) > 0 {
		q += ` AND ` + s.d.In("e.type_id", 4)
		args = append(args, typeIDs)
	}
	args = append(args, limit)
	return q + ` ORDER BY e.seq LIMIT $` + strconv.Itoa(len(args)), args
}

// DeleteEventsBefore implements events.Store: one transaction deletes the
// oldest events (through the received_at index; rows another process is
// deleting are skipped where the database locks rows) and then their user
// rows, by primary key.
func (s *Store) DeleteEventsBefore(ctx context.Context, tenantID string, cutoff time.Time, limit int) (int, error) {
	n := 0
	err := s.c.Tx(ctx, func(q Querier) error {
		type gone struct {
			tenant string
			seq    int64
			users  []string
			at     time.Time
		}
		doomed, err := list(ctx, s, q, func(row Row) (gone, error) {
			var g gone
			err := row.Scan(&g.tenant, &g.seq, &g.users, &g.at)
			return g, err
		}, `DELETE FROM events WHERE (tenant_id, seq) IN (SELECT tenant_id, seq FROM events
			WHERE received_at < $1 AND ($2 = '' OR tenant_id = $2) ORDER BY received_at LIMIT $3`+s.d.SkipLocked+`)
			RETURNING tenant_id, seq, user_ids, received_at`, cutoff, tenantID, limit)
		if err != nil {
			return err
		}
		b := &Batch{}
		for _, g := range doomed {
			for _, u := range g.users {
				if s.d.PartitionedLogs {
					b.Exec(nil, `DELETE FROM event_users WHERE tenant_id = $1 AND user_id = $2 AND seq = $3 AND received_at = $4`, g.tenant, u, g.seq, g.at)
				} else {
					b.Exec(nil, `DELETE FROM event_users WHERE tenant_id = $1 AND user_id = $2 AND seq = $3`, g.tenant, u, g.seq)
				}
			}
		}
		n = len(doomed)
		return q.Batch(ctx, b)
	})
	return n, err
}
