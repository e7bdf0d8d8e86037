package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/notify"
	"github.com/latchkey/latchkey/store/postgres"
	"github.com/latchkey/latchkey/store/sqlstore"
	"github.com/latchkey/latchkey/store/storetest"
)

// connect returns a connection to the test database with schema as its
// search_path.
func connect(t *testing.T, schema string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	c, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func openWith(t *testing.T, schema string, opts postgres.Options) *postgres.Store {
	t.Helper()
	opts.Schema, opts.MaxConns = schema, 8
	s, err := postgres.Open(t.Context(), dsn(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// event is one external event of tenant of type typeID for user, received
// at at.
func event(t *testing.T, tenant, typeID, user string, at time.Time) *events.Event {
	t.Helper()
	return storetest.NewEvent(t, tenant, fmt.Sprintf(`{"event_type_id":%q,"end_user":{"id":%q}}`, typeID, user), at)
}

func seqs(evs []events.Event) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

// checkContiguous fails unless each table's partitions follow each other
// without gap or overlap and cover at least until.
func checkContiguous(t *testing.T, parts []postgres.Partition, until time.Time) {
	t.Helper()
	by := map[string][]postgres.Partition{}
	for _, p := range parts {
		by[p.Table] = append(by[p.Table], p)
	}
	for _, table := range []string{"events", "event_users", "audit_batches"} {
		ps := by[table]
		if len(ps) == 0 {
			t.Fatalf("%s: no partitions", table)
		}
		for i := 1; i < len(ps); i++ {
			if !ps[i].Lower.Equal(ps[i-1].Upper) {
				t.Errorf("%s: partition %s starts at %v, the one before ends at %v", table, ps[i].Name, ps[i].Lower, ps[i-1].Upper)
			}
		}
		if last := ps[len(ps)-1].Upper; last.Before(until) {
			t.Errorf("%s: partitions end at %v, before %v", table, last, until)
		}
	}
}

// TestMigrationFromV14 builds a schema at migration 14 (the schema before
// the log was partitioned) from the migration files, stores events, user
// rows and heads in it as the stores of that version did, and opens it:
// migration 18 must turn the tables into partitions in place, keep every
// row readable by seq, type, user and cursor, continue the seqs from the
// heads, and raise a new event's received_at to the newest stored one.
func TestMigrationFromV14(t *testing.T) {
	schema := freshSchema(t)
	c := connect(t, schema)
	ctx := t.Context()
	if _, err := c.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()+`;
		CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		v, _ := strconv.Atoi(name[:4])
		if v > 14 {
			continue
		}
		sql, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := c.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, name); err != nil {
			t.Fatal(err)
		}
	}
	// Tenant t1's received_at is out of seq order (two processes' clocks),
	// as the stores before migration 18 allowed.
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	if _, err := c.Exec(ctx, `INSERT INTO events (tenant_id, seq, id, type_id, occurred_at, received_at, user_ids, body) VALUES
			('t1', 1, 'e1', '10001', '2026-03-04T05:06:07.000000Z', $1, '{alice}', '{"event_type_id":"10001","end_user":{"id":"alice"}}'),
			('t1', 2, 'e2', '10002', '2026-03-04T05:06:08.000000Z', $3, '{bob}', '{"event_type_id":"10002","end_user":{"id":"bob"}}'),
			('t1', 3, 'e3', '10001', '2026-03-04T05:06:09.000000Z', $2, '{alice}', '{"event_type_id":"10001","end_user":{"id":"alice"}}'),
			('t2', 1, 'e4', '10001', '2026-03-04T05:06:10.000000Z', $2, '{}', '{"event_type_id":"10001"}')`,
		t0, t0.Add(time.Second), t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO event_users (tenant_id, user_id, seq) VALUES ('t1', 'alice', 1), ('t1', 'bob', 2), ('t1', 'alice', 3);
		INSERT INTO event_heads (tenant_id, seq) VALUES ('t1', 3), ('t2', 1)`); err != nil {
		t.Fatal(err)
	}

	s := openWith(t, schema, postgres.Options{PartitionInterval: time.Hour})
	all, err := s.ListEventsAfter(ctx, "t1", 0, nil, time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int64{1, 2, 3}, seqs(all)); d != "" {
		t.Errorf("t1's events after the migration (-want +got):\n%s", d)
	}
	f, err := filter.Parse(`event_type_id eq "10001"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		q    events.Query
		want []int64
	}{
		{"all", events.Query{Limit: 10, CountLimit: 10}, []int64{3, 2, 1}},
		{"type", events.Query{Filter: f, Limit: 10, CountLimit: 10}, []int64{3, 1}},
		{"user", events.Query{UserID: "alice", Limit: 10, CountLimit: 10}, []int64{3, 1}},
	} {
		got, n, err := s.QueryEvents(ctx, "t1", c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := cmp.Diff(c.want, seqs(got)); d != "" || n != len(c.want) {
			t.Errorf("query %s: count %d, seqs (-want +got):\n%s", c.name, n, d)
		}
	}

	// The next append continues t1's seqs; its received_at, before the
	// newest stored one, is raised to it.
	ev := event(t, "t1", "10001", "alice", t0)
	if err := s.AppendEvents(ctx, []*events.Event{ev}); err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 4 || !ev.ReceivedAt.Equal(t0.Add(2*time.Second)) {
		t.Errorf("appended seq %d received %v, want 4 at %v", ev.Seq, ev.ReceivedAt, t0.Add(2*time.Second))
	}
	got, _, err := s.QueryEvents(ctx, "t1", events.Query{UserID: "alice", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int64{4, 3, 1}, seqs(got)); d != "" {
		t.Errorf("alice's events after an append (-want +got):\n%s", d)
	}

	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var now time.Time
	if err := c.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, parts, now.Add(postgres.DefaultPartitionsAhead*time.Hour))
	for _, table := range []string{"audit_batches", "event_users", "events"} {
		if first := firstOf(parts, table); first.Name != table+"_legacy" || !first.Lower.IsZero() {
			t.Errorf("first partition of %s: %+v, want %s_legacy from MINVALUE", table, first, table)
		}
	}
}

// firstOf is table's first partition in parts (sorted by table and range).
func firstOf(parts []postgres.Partition, table string) postgres.Partition {
	for _, p := range parts {
		if p.Table == table {
			return p
		}
	}
	return postgres.Partition{}
}

// TestPartitionMaintenance drives MaintainPartitions with its own clock:
// it keeps partitions made ahead without gaps (a pause included), drops
// whole partitions at the cutoff with their user rows while the seqs go
// on, and does nothing while another process holds the lease.
func TestPartitionMaintenance(t *testing.T) {
	schema := freshSchema(t)
	s := openWith(t, schema, postgres.Options{PartitionInterval: time.Hour, PartitionsAhead: 2})
	ctx := t.Context()
	c := connect(t, schema)
	var dbNow time.Time
	if err := c.QueryRow(ctx, `SELECT now()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	// Hours after Open's partitions, with a pause of a day in between.
	h0 := dbNow.Truncate(time.Hour).Add(48 * time.Hour)
	if _, err := s.MaintainPartitions(ctx, h0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, parts, h0.Add(2*time.Hour))

	// Events an hour apart, each in a partition of its own; alice in all.
	var evs []*events.Event
	for i := range 4 {
		evs = append(evs, event(t, "t1", "10001", "alice", h0.Add(time.Duration(i)*time.Hour+time.Minute)))
	}
	if _, err := s.MaintainPartitions(ctx, h0.Add(3*time.Hour), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}

	// The lease held elsewhere: nothing is created or dropped.
	if parts, err = s.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.PartitionLockKey(schema)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.MaintainPartitions(ctx, h0.Add(10*time.Hour), h0.Add(2*time.Hour)); err != nil || n != 0 {
		t.Fatalf("maintenance under another's lease: %d, %v", n, err)
	}
	if after, err := s.Partitions(ctx); err != nil || len(after) != len(parts) {
		t.Errorf("partitions under another's lease: %d, want %d (%v)", len(after), len(parts), err)
	}
	if _, err := c.Exec(ctx, `SELECT pg_advisory_unlock($1)`, postgres.PartitionLockKey(schema)); err != nil {
		t.Fatal(err)
	}

	// The cutoff at h0+2h drops every partition ending by then: the
	// events of h0 and h0+1h, and their user rows.
	if _, err := s.MaintainPartitions(ctx, h0.Add(3*time.Hour), h0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	left, err := s.ListEventsAfter(ctx, "t1", 0, nil, time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int64{3, 4}, seqs(left)); d != "" {
		t.Errorf("events after the drop (-want +got):\n%s", d)
	}
	var users int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM event_users`).Scan(&users); err != nil || users != 2 {
		t.Errorf("user rows after the drop: %d, want 2 (%v)", users, err)
	}
	parts, err = s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The audit log has no retention: its partitions all stay.
	eventParts := 0
	for _, p := range parts {
		if p.Table == "audit_batches" {
			continue
		}
		eventParts++
		if !p.Upper.After(h0.Add(2 * time.Hour)) {
			t.Errorf("partition %s ending %v outlived the cutoff", p.Name, p.Upper)
		}
	}
	if first := firstOf(parts, "audit_batches"); first.Name != "audit_batches_legacy" {
		t.Errorf("first audit partition after event retention: %+v, want the legacy one kept", first)
	}
	checkContiguous(t, parts, h0.Add(5*time.Hour))
	var tables int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'event%\_p%'`, schema).Scan(&tables); err != nil || tables != eventParts {
		t.Errorf("partition tables: %d, want %d listed (%v)", tables, eventParts, err)
	}
	ev := event(t, "t1", "10001", "alice", h0.Add(3*time.Hour))
	if err := s.AppendEvents(ctx, []*events.Event{ev}); err != nil || ev.Seq != 5 {
		t.Errorf("append after the drop: seq %d, %v; want 5", ev.Seq, err)
	}
}

// TestDeleteExpiredDropsPartitions checks that the events service's
// retention, on the PostgreSQL store, drops partitions instead of deleting
// rows: an event of a partition that straddles the cutoff stays.
func TestDeleteExpiredDropsPartitions(t *testing.T) {
	schema := freshSchema(t)
	s := openWith(t, schema, postgres.Options{PartitionInterval: time.Hour})
	ctx := t.Context()
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := parts[len(parts)-1].Upper.Add(-time.Hour) // the last partition's start
	evs := []*events.Event{event(t, "t1", "10001", "alice", h.Add(-time.Hour+time.Minute)), event(t, "t1", "10001", "alice", h.Add(time.Minute))}
	if err := s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	svc := events.NewService(events.Config{Store: s, Clock: clocktest.New(h.Add(30 * time.Minute)), Retention: time.Minute, Audit: nopSink{}})
	defer svc.Close()
	if _, err := svc.DeleteExpired(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := s.ListEventsAfter(ctx, "t1", 0, nil, time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The cutoff h+29m drops the partition of seq 1, not the one of seq 2,
	// though seq 2 is older than the retention too.
	if d := cmp.Diff([]int64{2}, seqs(left)); d != "" {
		t.Errorf("events after DeleteExpired (-want +got):\n%s", d)
	}
}

// TestQueriesPruneToRecentPartitions appends a tenant's events into
// partitions days apart and checks, by EXPLAIN ANALYZE, that a query
// whose page and count the newest partition fills never runs the older
// partitions' scans, and that a notification cursor's seq walk skips the
// partitions older than notBefore; the query also still answers from the
// whole log when the recent partitions do not fill the page.
func TestQueriesPruneToRecentPartitions(t *testing.T) {
	schema := freshSchema(t)
	s := openWith(t, schema, postgres.Options{PartitionInterval: 24 * time.Hour})
	ctx := t.Context()
	c := connect(t, schema)
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	day := parts[len(parts)-1].Upper.Add(-24 * time.Hour) // the last partition's start
	var evs []*events.Event
	for i := range 30 { // 30 of type 10002 three days before day
		evs = append(evs, event(t, "t1", "10002", "bob", day.Add(-72*time.Hour+time.Duration(i)*time.Second)))
	}
	for i := range 30 { // 30 of type 10001 in day's partition
		evs = append(evs, event(t, "t1", "10001", "alice", day.Add(time.Hour+time.Duration(i)*time.Second)))
	}
	if err := s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	// A few rows in each table: without this the planner would read them
	// whole, where a log of millions is walked through its indexes.
	if _, err := c.Exec(ctx, `ANALYZE events; ANALYZE event_users; SET enable_seqscan = off; SET enable_bitmapscan = off`); err != nil {
		t.Fatal(err)
	}
	// The partitions a day or more before day's (the events of type 10002
	// are in the legacy one): the recent window of day's events (a day
	// back from the last) and notBefore = day leave them out.
	var old []string
	for _, p := range parts {
		if !p.Upper.After(day.Add(-24 * time.Hour)) {
			old = append(old, p.Name)
		}
	}
	if !slices.Contains(old, "events_legacy") || !slices.Contains(old, "event_users_legacy") || len(old) < 4 {
		t.Fatalf("partitions before the window: %v", old)
	}
	explain := func(query string, args ...any) string {
		t.Helper()
		return explainAnalyze(t, c, query, args...)
	}

	f, err := filter.Parse(`event_type_id eq "10001"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []events.Query{{Filter: f, Limit: 20}, {Limit: 20}, {UserID: "alice", Limit: 20}} {
		query, args, err := s.EventQuery(ctx, "t1", q)
		if err != nil {
			t.Fatal(err)
		}
		if plan := explain(query, args...); scanned(plan, old) {
			t.Errorf("query %+v scans partition %s:\n%s", q, old, plan)
		}
	}
	query, args := postgres.Dialect.NotifySeqs("t1", []string{"10001", "10002"}, 0, 60, day, 100)
	if plan := explain(query, args...); scanned(plan, old) {
		t.Errorf("notification seqs scan partition %s:\n%s", old, plan)
	}

	// Pages the recent partitions cannot fill come from the whole log.
	bob, err := filter.Parse(`event_type_id eq "10002"`)
	if err != nil {
		t.Fatal(err)
	}
	got, n, err := s.QueryEvents(ctx, "t1", events.Query{Filter: bob, Limit: 5, Offset: 2, CountLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int64{28, 27, 26, 25, 24}, seqs(got)); d != "" || n != 30 {
		t.Errorf("old type: count %d, seqs (-want +got):\n%s", n, d)
	}
	got, n, err = s.QueryEvents(ctx, "t1", events.Query{Limit: 3, Offset: 29, CountLimit: 40})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int64{31, 30, 29}, seqs(got)); d != "" || n != 40 {
		t.Errorf("page across partitions: count %d, seqs (-want +got):\n%s", n, d)
	}
	// And a notification retrieval over both types from the start.
	sub := &notify.Subscription{TenantID: "t1", ID: "s1", ClientID: "c1", EventTypeIDs: []string{"10001", "10002"}, SubscribedBy: "u", Created: day, PageSize: 100}
	if err := s.CreateNotifySubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `UPDATE notify_subscriptions SET cursor = 0`); err != nil {
		t.Fatal(err)
	}
	_, _, page, err := s.ConsumeNotifications(ctx, "t1", "s1", "c1", day, day, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Collect(func(yield func(int64) bool) {
		for i := int64(31); i <= 60; i++ {
			yield(i)
		}
	}); !cmp.Equal(want, seqs(page)) {
		t.Errorf("notifications since day: %v, want %v", seqs(page), want)
	}
}

// explainAnalyze runs query with args under EXPLAIN ANALYZE on c and
// returns the plan, one node a line.
func explainAnalyze(t *testing.T, c *pgx.Conn, query string, args ...any) string {
	t.Helper()
	rows, err := c.Query(t.Context(), `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// scanned reports whether the plan ran a scan of one of the partitions
// names.
func scanned(plan string, names []string) bool {
	for _, l := range strings.Split(plan, "\n") {
		for _, name := range names {
			if strings.Contains(l, " on "+name+" ") && !strings.Contains(l, "never executed") {
				return true
			}
		}
	}
	return false
}

// TestAuditScanPrunesOlderPartitions appends a tenant's audit records into
// partitions days apart: an export from day reads only day's records, an
// export of all time reads the whole chain across partitions, and the
// export's window query (bounded by the last record's time and the end of
// its partition) runs the scan of that one partition only, neither the
// older ones nor those after it.
func TestAuditScanPrunesOlderPartitions(t *testing.T) {
	schema := freshSchema(t)
	s := openWith(t, schema, postgres.Options{PartitionInterval: 24 * time.Hour})
	ctx := t.Context()
	c := connect(t, schema)
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// day is the second audit partition after legacy: the first begins at
	// the migration's now, so it may end within the hour; the second is a
	// whole day, and partitions are made ahead after it.
	var day, dayEnd time.Time
	var later []string
	seen := 0
	for _, p := range parts {
		if p.Table != "audit_batches" || p.Lower.IsZero() {
			continue
		}
		seen++
		switch {
		case seen == 2:
			day, dayEnd = p.Lower, p.Upper
		case seen > 2:
			later = append(later, p.Name)
		}
	}
	if len(later) == 0 {
		t.Fatalf("no audit partition after day's: %+v", parts)
	}
	tenant := identity.NewGUID()
	appendAt := func(at time.Time, n int) {
		t.Helper()
		recs := make([]*audit.Record, n)
		for i := range recs {
			recs[i] = storetest.NewRecord(tenant, i)
			recs[i].Time = at.Add(time.Duration(i) * time.Second)
		}
		if err := s.AppendAuditRecords(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	appendAt(day.Add(-72*time.Hour), 30) // the legacy partition
	appendAt(day.Add(time.Hour), 20)
	appendAt(day.Add(2*time.Hour), 10)

	scan := func(from time.Time) []audit.Record {
		t.Helper()
		var out []audit.Record
		for r, err := range s.ScanAuditRecords(ctx, tenant, audit.ExportRequest{From: from, To: day.Add(24 * time.Hour)}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	all := scan(day.Add(-96 * time.Hour))
	if len(all) != 60 {
		t.Fatalf("export of all time: %d records, want 60", len(all))
	}
	storetest.CheckChain(t, all)
	if recent := scan(day); len(recent) != 30 || recent[0].Seq != 31 {
		t.Errorf("export from day: %d records from seq %d, want 30 from 31", len(recent), recent[0].Seq)
	}

	if _, err := c.Exec(ctx, `ANALYZE audit_batches; SET enable_seqscan = off; SET enable_bitmapscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := c.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) `+sqlstore.AuditWindowQuery, tenant, 50, 60, all[49].Time, dayEnd)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	for _, name := range append(later, "audit_batches_legacy") {
		if strings.Contains(plan, " on "+name+" ") {
			t.Errorf("a window within day's partition plans a scan of %s:\n%s", name, plan)
		}
	}
}

// TestWritesRecreateMissingPartitions drops every partition made ahead,
// as if no process had run the maintenance for days: an event append and
// an audit append (the write behind every audited action) then create
// the partitions that cover now and succeed, instead of failing until the
// maintenance runs.
func TestWritesRecreateMissingPartitions(t *testing.T) {
	schema := freshSchema(t)
	s := openWith(t, schema, postgres.Options{PartitionInterval: time.Hour, PartitionsAhead: 1})
	ctx := t.Context()
	c := connect(t, schema)
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if strings.HasSuffix(p.Name, "_legacy") {
			continue
		}
		if _, err := c.Exec(ctx, `DROP TABLE `+pgx.Identifier{p.Name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Exec(ctx, `DELETE FROM log_partitions WHERE name NOT LIKE '%\_legacy'`); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Minute) // past the legacy partitions' end
	ev := event(t, "t1", "10001", "alice", now)
	if err := s.AppendEvents(ctx, []*events.Event{ev}); err != nil {
		t.Fatalf("event append with no partition for it: %v", err)
	}
	rec := storetest.NewRecord("t1", 1)
	rec.Time = now
	if err := s.AppendAuditRecords(ctx, []*audit.Record{rec}); err != nil {
		t.Fatalf("audit append with no partition for it: %v", err)
	}
	if parts, err = s.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, parts, now)
}

// BenchmarkEventStreamBatchRead is the read of a delivery batch of an
// event-stream subscription (the 100 events of its type after its cursor,
// which is in the newest partition) on a log of hourly partitions of 200
// events each: the partitions Open makes (the empty legacy one and four
// hours), then 400 hours more. notBefore=cursor
// reads as the engine does, bounded by the cursor's received_at;
// notBefore=none as it did before, probing every partition's index.
//
//	PLATFORM_POSTGRES_DSN=... go test ./store/postgres -run '^$' -bench EventStreamBatchRead -benchtime 1000x -count 3
func BenchmarkEventStreamBatchRead(b *testing.B) {
	schema := freshSchema(b)
	ctx := b.Context()
	s, err := postgres.Open(ctx, dsn(b), postgres.Options{Schema: schema, MaxConns: 4, PartitionInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const tenant, perPartition, batch = "t1", 200, 100
	var filledTo time.Time // the end of the last partition filled
	// fill appends perPartition events to each events partition after
	// filledTo (the legacy one stays empty) and returns how many
	// partitions events has.
	fill := func() int {
		parts, err := s.Partitions(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, p := range parts {
			if p.Table != "events" {
				continue
			}
			n++
			if p.Lower.IsZero() || p.Lower.Before(filledTo) {
				continue
			}
			evs := make([]*events.Event, perPartition)
			for i := range evs {
				evs[i] = storetest.NewEvent(b, tenant, `{"event_type_id":"10001","end_user":{"id":"alice"}}`, p.Lower.Add(time.Duration(i)*time.Second))
			}
			if err := s.AppendEvents(ctx, evs); err != nil {
				b.Fatal(err)
			}
			filledTo = p.Upper
		}
		return n
	}
	run := func(partitions int) {
		tail, _, err := s.QueryEvents(ctx, tenant, events.Query{Limit: batch + 1})
		if err != nil || len(tail) != batch+1 {
			b.Fatalf("tail: %d events, %v", len(tail), err)
		}
		cursor := tail[batch] // batch events after it, in the newest partition
		for _, bc := range []struct {
			name      string
			notBefore time.Time
		}{{"none", time.Time{}}, {"cursor", cursor.ReceivedAt}} {
			b.Run(fmt.Sprintf("partitions=%d/notBefore=%s", partitions, bc.name), func(b *testing.B) {
				for b.Loop() {
					evs, err := s.ListEventsAfter(ctx, tenant, cursor.Seq, []string{"10001"}, bc.notBefore, batch)
					if err != nil || len(evs) != batch {
						b.Fatalf("read %d events, %v", len(evs), err)
					}
				}
			})
		}
	}
	run(fill())
	// 400 hours more, one partition at a time as hourly maintenance makes
	// them (a later now at once would make one partition up to it).
	from := filledTo
	for h := range 400 {
		if _, err := s.MaintainPartitions(ctx, from.Add(time.Duration(h)*time.Hour), time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	run(fill())
}
