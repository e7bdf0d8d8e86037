package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/events/filter"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/ids"
)

var _ events.Store = (*Store)(nil)

const (
	eventHead      = `SELECT seq FROM event_heads WHERE tenant_id = ?`
	eventSetHead   = `INSERT INTO event_heads (tenant_id, seq) VALUES (?, ?) ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq`
	eventInsert    = `INSERT INTO events (tenant_id, seq, id, type_id, occurred_at, received_at, user_ids, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	eventUserInsrt = `INSERT INTO event_users (tenant_id, user_id, seq) VALUES (?, ?, ?)`
	eventCols      = `e.seq, e.id, e.tenant_id, e.type_id, e.occurred_at, e.received_at, e.user_ids, e.body`
)

func init() {
	warmQueries = append(warmQueries, eventHead, eventSetHead, eventInsert, eventUserInsrt)
}

// AppendEvents implements events.Store. SQLite serialises write
// transactions, so reading and advancing each tenant's head inside one is
// race-free.
func (s *Store) AppendEvents(ctx context.Context, evs []*events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *sql.Tx) error { return s.appendEvents(ctx, tx, evs) })
}

var _ events.AuditedAppender = (*Store)(nil)

// AppendEventsAudited implements events.AuditedAppender: AppendEvents and
// AppendAuditRecords in one transaction, so one commit (one fsync) makes
// the events and the records of the posts that carried them durable
// together.
func (s *Store) AppendEventsAudited(ctx context.Context, evs []*events.Event, recs []*audit.Record) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if len(evs) > 0 {
			if err := s.appendEvents(ctx, tx, evs); err != nil {
				return err
			}
		}
		if len(recs) > 0 {
			return s.appendAudit(ctx, tx, recs)
		}
		return nil
	})
}

// appendEvents appends evs within tx.
func (s *Store) appendEvents(ctx context.Context, tx *sql.Tx, evs []*events.Event) error {
	head, err := s.txStmt(ctx, tx, eventHead)
	if err != nil {
		return err
	}
	ins, err := s.txStmt(ctx, tx, eventInsert)
	if err != nil {
		return err
	}
	insUser, err := s.txStmt(ctx, tx, eventUserInsrt)
	if err != nil {
		return err
	}
	setHead, err := s.txStmt(ctx, tx, eventSetHead)
	if err != nil {
		return err
	}
	heads := map[string]int64{}
	for _, e := range evs {
		seq, ok := heads[e.TenantID]
		if !ok {
			if err := head.QueryRowContext(ctx, e.TenantID).Scan(&seq); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		seq++
		users, err := json.Marshal(e.UserIDs)
		if err != nil {
			return fault.E(fault.Internal, err)
		}
		id := ids.NewGUID()
		if _, err := ins.ExecContext(ctx, e.TenantID, seq, id, e.TypeID, e.Time.UTC().Format(events.TimeLayout), micros(e.ReceivedAt), string(users), string(e.Body)); err != nil {
			return err
		}
		for _, u := range e.UserIDs {
			if _, err := insUser.ExecContext(ctx, e.TenantID, u, seq); err != nil {
				return err
			}
		}
		heads[e.TenantID] = seq
		e.Seq, e.ID = seq, id
	}
	for tenant, seq := range heads {
		if _, err := setHead.ExecContext(ctx, tenant, seq); err != nil {
			return err
		}
	}
	return nil
}

// eventWhere builds the WHERE clause and FROM of a query: the tenant, the
// user through event_users, the filter compiled by filter.SQL and the
// plain index conditions it implies.
func eventWhere(tenantID string, q events.Query) (from, where string, args []any, err error) {
	var conds []string
	if q.UserID != "" {
		from = `event_users u JOIN events e ON e.tenant_id = u.tenant_id AND e.seq = u.seq`
		conds = append(conds, `u.tenant_id = ?`, `u.user_id = ?`)
		args = append(args, tenantID, q.UserID)
	} else {
		from = `events e`
		conds = append(conds, `e.tenant_id = ?`)
		args = append(args, tenantID)
	}
	if q.Filter != nil {
		// The plain type and time comparisons steer the planner to the
		// type and time indexes. With a user the walk of that user's
		// event_users rows is the one to take (a user has few events of
		// the log, a type many): the comparisons are left out so that
		// the planner cannot prefer a type index walk over the whole log.
		if q.UserID == "" {
			for _, c := range events.IndexConds(q.Filter) {
				conds = append(conds, "e."+c.Column+" "+c.Op+" ?")
				args = append(args, c.Value)
			}
		}
		cols := make(map[string]string, len(events.Columns))
		for p, c := range events.Columns {
			cols[p] = "e." + c
		}
		w, fargs, err := filter.SQL(q.Filter, filter.Dialect{Engine: filter.SQLite, Body: "e.body"}, cols)
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
// Queries with a filter go through the bounded cache of caller-shaped
// statements (queryShaped): their text depends on the filter's structure
// only, so the few filters an application uses are prepared once.
func (s *Store) QueryEvents(ctx context.Context, tenantID string, q events.Query) ([]events.Event, int, error) {
	from, where, args, err := eventWhere(tenantID, q)
	if err != nil {
		return nil, 0, err
	}
	order := "e.seq"
	if q.UserID != "" {
		order = "u.seq"
	}
	page := `SELECT ` + eventCols + ` FROM ` + from + ` WHERE ` + where + ` ORDER BY ` + order + ` DESC LIMIT ? OFFSET ?`
	run := s.query
	if q.Filter != nil {
		run = s.queryShaped
	}
	rows, err := run(ctx, page, append(args, q.Limit, q.Offset)...)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, 0, err
	}
	total := 0
	if q.CountLimit > 0 {
		count := `SELECT count(*) FROM (SELECT 1 FROM ` + from + ` WHERE ` + where + ` LIMIT ?)`
		var row *sql.Row
		if q.Filter != nil {
			row = s.queryRowShaped(ctx, count, append(args, q.CountLimit)...)
		} else {
			row = s.queryRow(ctx, count, append(args, q.CountLimit)...)
		}
		if err := row.Scan(&total); err != nil {
			return nil, 0, mapErr(err)
		}
	}
	return evs, total, nil
}

func scanEvents(rows *sql.Rows) ([]events.Event, error) {
	defer rows.Close()
	var out []events.Event
	for rows.Next() {
		var (
			e               events.Event
			occurred, users string
			received        int64
			body            []byte
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.TenantID, &e.TypeID, &occurred, &received, &users, &body); err != nil {
			return nil, mapErr(err)
		}
		t, err := time.Parse(events.TimeLayout, occurred)
		if err != nil {
			return nil, fault.E(fault.Internal, err)
		}
		e.Time, e.ReceivedAt, e.Body = t, fromMicros(received), body
		if err := json.Unmarshal([]byte(users), &e.UserIDs); err != nil {
			return nil, fault.E(fault.Internal, err)
		}
		out = append(out, e)
	}
	return out, mapErr(rows.Err())
}

// ListEventsAfter implements events.Store: a forward walk of (tenant_id,
// seq), or of (tenant_id, type_id, seq) for one type.
func (s *Store) ListEventsAfter(ctx context.Context, tenantID string, afterSeq int64, typeIDs []string, notBefore time.Time, limit int) ([]events.Event, error) {
	q := `SELECT ` + eventCols + ` FROM events e WHERE e.tenant_id = ? AND e.seq > ? AND e.received_at >= ?`
	args := []any{tenantID, afterSeq, micros(notBefore)}
	if len(typeIDs) > 0 {
		q += ` AND e.type_id IN (?` + strings.Repeat(", ?", len(typeIDs)-1) + `)`
		for _, t := range typeIDs {
			args = append(args, t)
		}
	}
	q += ` ORDER BY e.seq LIMIT ?`
	rows, err := s.query(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, mapErr(err)
	}
	return scanEvents(rows)
}

// DeleteEventsBefore implements events.Store. It reads the doomed keys
// through the received_at index, then deletes each event and its user
// rows by primary key, in one transaction.
func (s *Store) DeleteEventsBefore(ctx context.Context, tenantID string, cutoff time.Time, limit int) (int, error) {
	n := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		q := `SELECT tenant_id, seq, user_ids FROM events WHERE received_at < ?`
		args := []any{micros(cutoff)}
		if tenantID != "" {
			q += ` AND tenant_id = ?`
			args = append(args, tenantID)
		}
		rows, err := tx.QueryContext(ctx, q+` ORDER BY received_at LIMIT ?`, append(args, limit)...)
		if err != nil {
			return err
		}
		type key struct {
			tenant string
			seq    int64
			users  []string
		}
		var keys []key
		for rows.Next() {
			var (
				k     key
				users string
			)
			if err := rows.Scan(&k.tenant, &k.seq, &users); err != nil {
				rows.Close()
				return err
			}
			if err := json.Unmarshal([]byte(users), &k.users); err != nil {
				rows.Close()
				return fault.E(fault.Internal, err)
			}
			keys = append(keys, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		delEvent, err := tx.PrepareContext(ctx, `DELETE FROM events WHERE tenant_id = ? AND seq = ?`)
		if err != nil {
			return err
		}
		defer delEvent.Close()
		delUser, err := tx.PrepareContext(ctx, `DELETE FROM event_users WHERE tenant_id = ? AND user_id = ? AND seq = ?`)
		if err != nil {
			return err
		}
		defer delUser.Close()
		for _, k := range keys {
			for _, u := range k.users {
				if _, err := delUser.ExecContext(ctx, k.tenant, u, k.seq); err != nil {
					return err
				}
			}
			if _, err := delEvent.ExecContext(ctx, k.tenant, k.seq); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	return n, err
}
