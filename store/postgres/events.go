package postgres

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/events/filter"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/ids"
)

var _ events.Store = (*Store)(nil)

// lockEventHead locks a tenant's event head for the rest of the
// transaction and returns its seq, creating it on the tenant's first
// append; see lockHead in audit.go for why one upsert does both.
const lockEventHead = `INSERT INTO event_heads (tenant_id, seq) VALUES ($1, 0)
	ON CONFLICT (tenant_id) DO UPDATE SET seq = event_heads.seq
	RETURNING seq`

const (
	insertEvent     = `INSERT INTO events (tenant_id, seq, id, type_id, occurred_at, received_at, user_ids, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	insertEventUser = `INSERT INTO event_users (tenant_id, user_id, seq) VALUES ($1, $2, $3)`
	advanceEvents   = `UPDATE event_heads SET seq = $2 WHERE tenant_id = $1`
	eventColumns    = `e.seq, e.id, e.tenant_id, e.type_id, e.occurred_at, e.received_at, e.user_ids, e.body`
)

// AppendEvents implements events.Store. It locks the head row of every
// tenant in the call, in tenant id order (no deadlock between two calls),
// then inserts the events and advances the heads: two round trips in all
// (see pipelinedTx).
func (s *Store) AppendEvents(ctx context.Context, evs []*events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	a := newEventAppend(evs)
	return s.pipelinedTx(ctx, a.lock, a.write)
}

var _ events.AuditedAppender = (*Store)(nil)

// AppendEventsAudited implements events.AuditedAppender: AppendEvents and
// AppendAuditRecords in one transaction, still two round trips, so a post
// and its audit record need one commit. It locks the event heads (in
// tenant id order), then the audit heads (likewise); appends of one kind
// lock only their own heads, so no two appends can deadlock.
func (s *Store) AppendEventsAudited(ctx context.Context, evs []*events.Event, recs []*audit.Record) error {
	if len(evs) == 0 && len(recs) == 0 {
		return nil
	}
	ea := newEventAppend(evs)
	aa, err := newAuditAppend(recs)
	if err != nil {
		return err
	}
	return s.pipelinedTx(ctx, func(b *pgx.Batch) {
		ea.lock(b)
		aa.lock(b)
	}, func(b *pgx.Batch) {
		ea.write(b)
		aa.write(b)
	})
}

// eventAppend is the statements of one append of events, in the two
// batches of pipelinedTx: lock, then write.
type eventAppend struct {
	evs     []*events.Event
	tenants []string // sorted, distinct
	heads   map[string]int64
}

func newEventAppend(evs []*events.Event) *eventAppend {
	a := &eventAppend{evs: evs}
	for _, e := range evs {
		a.tenants = append(a.tenants, e.TenantID)
	}
	slices.Sort(a.tenants)
	a.tenants = slices.Compact(a.tenants)
	return a
}

// lock queues the locks of the heads, in tenant id order; their results
// fill a.heads.
func (a *eventAppend) lock(b *pgx.Batch) {
	a.heads = make(map[string]int64, len(a.tenants))
	for _, id := range a.tenants {
		b.Queue(lockEventHead, id).QueryRow(func(row pgx.Row) error {
			var seq int64
			if err := row.Scan(&seq); err != nil {
				return err
			}
			a.heads[id] = seq
			return nil
		})
	}
}

// write numbers the events from the locked heads, gives them ids, and
// queues their inserts (with their user rows) and the heads' advance.
func (a *eventAppend) write(b *pgx.Batch) {
	for _, e := range a.evs {
		seq := a.heads[e.TenantID] + 1
		a.heads[e.TenantID] = seq
		e.Seq, e.ID = seq, ids.NewGUID()
		users := e.UserIDs
		if users == nil {
			users = []string{}
		}
		b.Queue(insertEvent, e.TenantID, seq, e.ID, e.TypeID, e.Time.UTC().Format(events.TimeLayout), e.ReceivedAt, users, string(e.Body))
		for _, u := range e.UserIDs {
			b.Queue(insertEventUser, e.TenantID, u, seq)
		}
	}
	for _, id := range a.tenants {
		b.Queue(advanceEvents, id, a.heads[id])
	}
}

// eventWhere builds FROM and WHERE of a query: tenant, user through
// event_users, the compiled filter and the plain index conditions it
// implies.
func eventWhere(tenantID string, q events.Query) (from, where string, args []any, err error) {
	var conds []string
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.UserID != "" {
		from = `event_users u JOIN events e ON e.tenant_id = u.tenant_id AND e.seq = u.seq`
		conds = append(conds, `u.tenant_id = `+arg(tenantID), `u.user_id = `+arg(q.UserID))
	} else {
		from = `events e`
		conds = append(conds, `e.tenant_id = `+arg(tenantID))
	}
	if q.Filter != nil {
		for _, c := range events.IndexConds(q.Filter) {
			conds = append(conds, "e."+c.Column+" "+c.Op+" "+arg(c.Value))
		}
		cols := make(map[string]string, len(events.Columns))
		for p, c := range events.Columns {
			cols[p] = "e." + c
		}
		w, fargs, err := filter.SQL(q.Filter, filter.Dialect{Engine: filter.PostgreSQL, FirstArg: len(args) + 1, Body: "e.body"}, cols)
		if err != nil {
			return "", "", nil, err
		}
		conds = append(conds, w)
		args = append(args, fargs...)
	}
	return from, strings.Join(conds, " AND "), args, nil
}

// QueryEvents implements events.Store.
func (s *Store) QueryEvents(ctx context.Context, tenantID string, q events.Query) ([]events.Event, int, error) {
	from, where, args, err := eventWhere(tenantID, q)
	if err != nil {
		return nil, 0, err
	}
	order := "e.seq"
	if q.UserID != "" {
		order = "u.seq"
	}
	n := len(args)
	page := `SELECT ` + eventColumns + ` FROM ` + from + ` WHERE ` + where + ` ORDER BY ` + order +
		` DESC LIMIT $` + strconv.Itoa(n+1) + ` OFFSET $` + strconv.Itoa(n+2)
	rows, err := s.pool.Query(ctx, page, append(slices.Clone(args), q.Limit, q.Offset)...)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	evs, err := collectEvents(rows)
	if err != nil {
		return nil, 0, err
	}
	total := 0
	if q.CountLimit > 0 {
		count := `SELECT count(*) FROM (SELECT 1 FROM ` + from + ` WHERE ` + where + ` LIMIT $` + strconv.Itoa(n+1) + `) c`
		if err := s.pool.QueryRow(ctx, count, append(args, q.CountLimit)...).Scan(&total); err != nil {
			return nil, 0, mapErr(err)
		}
	}
	return evs, total, nil
}

func collectEvents(rows pgx.Rows) ([]events.Event, error) {
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (events.Event, error) {
		var (
			e        events.Event
			occurred string
			body     []byte
		)
		if err := row.Scan(&e.Seq, &e.ID, &e.TenantID, &e.TypeID, &occurred, &e.ReceivedAt, &e.UserIDs, &body); err != nil {
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
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return evs, nil
}

// ListEventsAfter implements events.Store.
func (s *Store) ListEventsAfter(ctx context.Context, tenantID string, afterSeq int64, typeIDs []string, notBefore time.Time, limit int) ([]events.Event, error) {
	q := `SELECT ` + eventColumns + ` FROM events e WHERE e.tenant_id = $1 AND e.seq > $2 AND e.received_at >= $3`
	args := []any{tenantID, afterSeq, notBefore}
	if len(typeIDs) > 0 {
		q += ` AND e.type_id = ANY($4) ORDER BY e.seq LIMIT $5`
		args = append(args, typeIDs, limit)
	} else {
		q += ` ORDER BY e.seq LIMIT $4`
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectEvents(rows)
}

// DeleteEventsBefore implements events.Store: one statement deletes the
// oldest events (through the received_at index) and, through a
// data-modifying CTE, their user rows.
func (s *Store) DeleteEventsBefore(ctx context.Context, tenantID string, cutoff time.Time, limit int) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `WITH doomed AS (
			SELECT tenant_id, seq FROM events
			WHERE received_at < $1 AND ($2 = '' OR tenant_id = $2)
			ORDER BY received_at LIMIT $3 FOR UPDATE SKIP LOCKED
		), gone AS (
			DELETE FROM events e USING doomed d WHERE e.tenant_id = d.tenant_id AND e.seq = d.seq
			RETURNING e.tenant_id, e.seq, e.user_ids
		), users AS (
			DELETE FROM event_users u USING (SELECT tenant_id, seq, unnest(user_ids) AS user_id FROM gone) g
			WHERE u.tenant_id = g.tenant_id AND u.user_id = g.user_id AND u.seq = g.seq
		)
		SELECT count(*) FROM gone`, cutoff, tenantID, limit).Scan(&n)
	if err != nil {
		return 0, mapErr(err)
	}
	return n, nil
}
