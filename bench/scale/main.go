// Command scale measures the event log on PostgreSQL at 10M events (issue
// 22; the figures are in docs/scale.md and docs/performance.md): filtered
// query latency (P4) against a 10k log, notification retrieval (P5),
// ingest from one and from three processes into one tenant and into 100
// tenants (events/s and CPU per event of the processes and of their
// PostgreSQL backends), the retention of the oldest 5M events, and the
// bytes an event takes.
//
//	go run ./bench/scale -dsn postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable \
//	    [-db latchkey_scale] [-events 10000000] [-run load,sizes,p4,p5,ingest,retention] [-drop]
//
// It works in a database of its own (-db), which it creates: schema big
// holds the 10M-event tenant in daily partitions (1M events a day, the
// last one ending when the schema was made), schema small a 10k-event
// tenant. The load (COPY into each day's partition before it is attached,
// so its indexes are built once) is kept between runs: a run loads only
// the days missing, such as those the retention step dropped. -drop drops
// the database at the end.
//
// The ingest step runs this binary again as child processes
// (-child ingest), which post events through events.Service (validation,
// group commit, the audit record in the events' transaction) on their own
// pools, as server processes would.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/notify"
	"github.com/latchkey/latchkey/store/postgres"
)

const (
	bigTenant   = "5ca1e000-0000-4000-8000-000000000010"
	smallTenant = "5ca1e000-0000-4000-8000-000000000001"
	perDay      = 1_000_000
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

type config struct {
	dsn, db  string
	events   int
	steps    []string
	drop     bool
	ingestD  time.Duration
	queries  int
	pages    int
	posters  int
	postSize int
	// child mode
	child, schema, prefix string
	tenants               int
}

func run() error {
	var c config
	var steps string
	flag.StringVar(&c.dsn, "dsn", os.Getenv("PLATFORM_POSTGRES_DSN"), "DSN of any database of the server (the maintenance connection)")
	flag.StringVar(&c.db, "db", "latchkey_scale", "the benchmark's own database")
	flag.IntVar(&c.events, "events", 10_000_000, "events of the big tenant")
	flag.StringVar(&steps, "run", "load,sizes,p4,p5,ingest,retention", "steps to run")
	flag.BoolVar(&c.drop, "drop", false, "drop the database at the end")
	flag.DurationVar(&c.ingestD, "ingest-duration", 10*time.Second, "length of each ingest run")
	flag.IntVar(&c.queries, "queries", 3000, "P4 queries per log size")
	flag.IntVar(&c.pages, "pages", 500, "P5 pages of 100")
	flag.IntVar(&c.posters, "posters", 24, "concurrent posters in all (split over the processes)")
	flag.IntVar(&c.postSize, "post-size", 100, "events per post")
	flag.StringVar(&c.child, "child", "", "internal: run as a child (ingest)")
	flag.StringVar(&c.schema, "schema", "big", "internal: the child's schema")
	flag.StringVar(&c.prefix, "prefix", "", "internal: the child's tenant id prefix")
	flag.IntVar(&c.tenants, "tenants", 1, "internal: the child's tenants")
	flag.Parse()
	c.steps = strings.Split(steps, ",")
	ctx := context.Background()
	if c.child == "ingest" {
		return childIngest(ctx, c)
	}
	if c.dsn == "" {
		return errors.New("no -dsn and no PLATFORM_POSTGRES_DSN")
	}
	dbDSN, err := ensureDB(ctx, c.dsn, c.db)
	if err != nil {
		return err
	}
	c.dsn = dbDSN
	if c.drop {
		defer dropDB(context.Background(), c)
	}
	for _, step := range c.steps {
		start := time.Now()
		var err error
		switch step {
		case "load":
			if err = load(ctx, c.dsn, "big", bigTenant, c.events); err == nil {
				err = load(ctx, c.dsn, "small", smallTenant, 10_000)
			}
		case "sizes":
			err = sizes(ctx, c.dsn, c.events)
		case "p4":
			err = p4(ctx, c)
		case "p5":
			err = p5(ctx, c)
		case "ingest":
			err = ingest(ctx, c)
		case "retention":
			err = retention(ctx, c)
		default:
			err = fmt.Errorf("unknown step %q", step)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		fmt.Printf("# step %s took %.1f s\n", step, time.Since(start).Seconds())
	}
	return nil
}

// ensureDB creates the database db on the server of dsn when missing and
// returns a DSN for it.
func ensureDB(ctx context.Context, dsn, db string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, db).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{db}.Sanitize()); err != nil {
			return "", err
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	u.Path = "/" + db
	return u.String(), nil
}

func dropDB(ctx context.Context, c config) {
	u, _ := url.Parse(c.dsn)
	u.Path = "/postgres"
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale: drop:", err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{c.db}.Sanitize()+` WITH (FORCE)`); err != nil {
		fmt.Fprintln(os.Stderr, "scale: drop:", err)
	}
}

func open(ctx context.Context, dsn, schema string, maxConns int32) (*postgres.Store, error) {
	return postgres.Open(ctx, dsn, postgres.Options{Schema: schema, MaxConns: maxConns})
}

func connect(ctx context.Context, dsn, schema string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = schema
	return pgx.ConnectConfig(ctx, cfg)
}

// eventRow is event i of the loaded log: ten types in turn, 1000 users,
// four segments, received at an even pace within its day.
func eventRow(tenant string, i int, at time.Time) (ev []any, user []any) {
	typeID := fmt.Sprintf("1000%d", i%10)
	u := fmt.Sprintf("user-%d", i%1000)
	seg := []string{"gold", "silver", "bronze", "blue"}[(i/10)%4]
	ts := at.UTC().Format(events.TimeLayout)
	body := fmt.Sprintf(`{"count":%d,"end_user":{"id":%q,"segment":%q},"event_type_id":%q,"timestamp":%q}`, i, u, seg, typeID, ts)
	id := fmt.Sprintf("5ca1e000-%04x-4%03x-8%03x-%012x", (i>>40)&0xffff, (i>>28)&0xfff, (i>>16)&0xfff, i&0xffffffffffff)
	return []any{tenant, int64(i + 1), id, typeID, ts, at, []string{u}, body}, []any{tenant, u, int64(i + 1), at}
}

// layout is where a schema's loaded days lie: day k covers
// [end - (days-k)*24h, end - (days-k-1)*24h).
type layout struct {
	end  time.Time
	days int
}

func (l layout) dayStart(k int) time.Time {
	return l.end.Add(-time.Duration(l.days-k) * 24 * time.Hour)
}

// at is the received_at of event i of n.
func (l layout) at(i, n int) time.Time {
	per := min(n, perDay)
	k := i / per
	return l.dayStart(k).Add(time.Duration(i%per) * (24 * time.Hour / time.Duration(per)))
}

// load makes schema hold n events of tenant in daily partitions, loading
// the days that are missing.
func load(ctx context.Context, dsn, schema, tenant string, n int) error {
	st, err := open(ctx, dsn, schema, 4)
	if err != nil {
		return err
	}
	st.Close()
	conn, err := connect(ctx, dsn, schema)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET synchronous_commit = off; SET maintenance_work_mem = '256MB';
		CREATE TABLE IF NOT EXISTS scale_layout (end_at timestamptz NOT NULL, days integer NOT NULL, events bigint NOT NULL)`); err != nil {
		return err
	}
	days := (n + perDay - 1) / perDay
	var l layout
	err = conn.QueryRow(ctx, `SELECT end_at, days FROM scale_layout`).Scan(&l.end, &l.days)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// A fresh schema: its legacy partitions (empty) give way to the
		// loaded days, which end where the partitions made ahead begin.
		if err := conn.QueryRow(ctx, `SELECT upper_bound FROM log_partitions WHERE parent = 'events' AND lower_bound IS NULL`).Scan(&l.end); err != nil {
			return err
		}
		l.days = days
		if _, err := conn.Exec(ctx, `DROP TABLE event_users_legacy; DROP TABLE events_legacy; DELETE FROM log_partitions WHERE lower_bound IS NULL`); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, `INSERT INTO scale_layout VALUES ($1, $2, $3)`, l.end, l.days, n); err != nil {
			return err
		}
	case err != nil:
		return err
	case l.days != days:
		return fmt.Errorf("schema %s was loaded with %d days, not %d: drop the database (-drop)", schema, l.days, days)
	}
	for k := range days {
		name := "events_p" + l.dayStart(k).UTC().Format("20060102t150405")
		var present bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM log_partitions WHERE name = $1)`, name).Scan(&present); err != nil {
			return err
		}
		if present {
			continue
		}
		t0 := time.Now()
		first, last := k*perDay, min((k+1)*perDay, n)
		if err := loadDay(ctx, conn, l, tenant, k, first, last, n); err != nil {
			return err
		}
		fmt.Printf("loaded %s day %d: %d events in %.1f s\n", schema, k, last-first, time.Since(t0).Seconds())
	}
	_, err = conn.Exec(ctx, `INSERT INTO event_heads (tenant_id, seq, received_at) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq, received_at = excluded.received_at`, tenant, int64(n), l.at(n-1, n))
	return err
}

// loadDay COPYs events [first, last) into day k's partitions, built apart
// and then attached (which builds their indexes), and analyzes them.
func loadDay(ctx context.Context, conn *pgx.Conn, l layout, tenant string, k, first, last, n int) error {
	lo, hi := l.dayStart(k), l.dayStart(k+1)
	suffix := "_p" + lo.UTC().Format("20060102t150405")
	bound := fmt.Sprintf(`FOR VALUES FROM ('%s') TO ('%s')`, lo.Format(time.RFC3339Nano), hi.Format(time.RFC3339Nano))
	for _, t := range []string{"events", "event_users"} {
		if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+t+suffix+`; CREATE TABLE `+t+suffix+` (LIKE `+t+` INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`); err != nil {
			return err
		}
	}
	i := first
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"events" + suffix},
		[]string{"tenant_id", "seq", "id", "type_id", "occurred_at", "received_at", "user_ids", "body"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= last {
				return nil, nil
			}
			ev, _ := eventRow(tenant, i, l.at(i, n))
			i++
			return ev, nil
		})); err != nil {
		return err
	}
	i = first
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"event_users" + suffix}, []string{"tenant_id", "user_id", "seq", "received_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= last {
				return nil, nil
			}
			_, u := eventRow(tenant, i, l.at(i, n))
			i++
			return u, nil
		})); err != nil {
		return err
	}
	for _, t := range []string{"events", "event_users"} {
		if _, err := conn.Exec(ctx, `ALTER TABLE `+t+` ATTACH PARTITION `+t+suffix+` `+bound); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, `INSERT INTO log_partitions VALUES ($1, $2, $3, $4)`, t, t+suffix, lo, hi); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) `+t+suffix); err != nil {
			return err
		}
	}
	return nil
}

// sizes prints the bytes the big schema's log takes: tables and each index
// summed over the partitions, and per event.
func sizes(ctx context.Context, dsn string, n int) error {
	conn, err := connect(ctx, dsn, "big")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT r.name, (SELECT coalesce(sum(pg_relation_size(p.relid)), 0) FROM pg_partition_tree(r.name::regclass) p) +
			CASE WHEN r.toast THEN (SELECT coalesce(sum(pg_total_relation_size(c.reltoastrelid)), 0) FROM pg_partition_tree(r.name::regclass) p JOIN pg_class c ON c.oid = p.relid WHERE c.reltoastrelid <> 0) ELSE 0 END
		FROM (VALUES ('events', true), ('event_users', true), ('events_by_seq', false), ('events_by_type', false), ('events_by_time', false),
			('events_by_received', false), ('event_users_by_user', false)) AS r(name, toast)`)
	if err != nil {
		return err
	}
	type size struct {
		name  string
		bytes int64
	}
	ss, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (size, error) {
		var s size
		err := r.Scan(&s.name, &s.bytes)
		return s, err
	})
	if err != nil {
		return err
	}
	var stored int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&stored); err != nil {
		return err
	}
	var total int64
	fmt.Printf("sizes at %d events (tables with TOAST, indexes summed over partitions):\n", stored)
	for _, s := range ss {
		total += s.bytes
		fmt.Printf("  %-22s %8.1f MiB  %6.1f B/event\n", s.name, float64(s.bytes)/(1<<20), float64(s.bytes)/float64(stored))
	}
	fmt.Printf("  %-22s %8.1f MiB  %6.1f B/event\n", "total", float64(total)/(1<<20), float64(total)/float64(stored))
	return nil
}

type discardSink struct{}

func (discardSink) Record(context.Context, audit.Entry) error { return nil }

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// p4 runs the P4 queries (bench/events_test.go's three filters, pages 1-3
// of 20, in-process through events.Service) on the 10k and the big log.
func p4(ctx context.Context, c config) error {
	filters := []string{
		`event_type_id eq "10002" and end_user.segment eq "gold"`,
		`event_type_id eq "10007" and count gt 100`,
		`end_user.segment eq "silver" or event_type_id eq "10003"`,
	}
	for _, v := range []struct{ schema, tenant string }{{"small", smallTenant}, {"big", bigTenant}} {
		st, err := open(ctx, c.dsn, v.schema, 4)
		if err != nil {
			return err
		}
		svc := events.NewService(events.Config{Store: st, Audit: discardSink{}, Clock: clock.System{}})
		by := identity.Principal{Kind: identity.KindClient, TenantID: v.tenant, Scopes: []string{identity.ScopeEventConsumer}}
		lat := make([]time.Duration, 0, c.queries)
		for i := range c.queries + 100 {
			t0 := time.Now()
			p, err := svc.Query(ctx, by, events.QueryRequest{Filter: filters[i%len(filters)], Page: 1 + i%3, Size: 20})
			if err != nil || len(p.Results) != 20 {
				return fmt.Errorf("query: %d results, %v", len(p.Results), err)
			}
			if i >= 100 { // the first 100 warm the caches
				lat = append(lat, time.Since(t0))
			}
		}
		svc.Close()
		st.Close()
		fmt.Printf("P4 %-5s %d queries: p50 %v p99 %v\n", v.schema, len(lat), percentile(lat, 0.5).Round(time.Microsecond), percentile(lat, 0.99).Round(time.Microsecond))
	}
	return nil
}

type tenants map[string]identity.Tenant

func (t tenants) GetTenant(_ context.Context, id string) (identity.Tenant, error) { return t[id], nil }

// p5 retrieves pages of 100 notifications of all ten types from the big
// log, through notify.Service with the audit recorder, starting at the
// first event inside the default notification retention (6 h).
func p5(ctx context.Context, c config) error {
	st, err := open(ctx, c.dsn, "big", 8)
	if err != nil {
		return err
	}
	defer st.Close()
	conn, err := connect(ctx, c.dsn, "big")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var last time.Time
	if err := conn.QueryRow(ctx, `SELECT received_at FROM event_heads WHERE tenant_id = $1`, bigTenant).Scan(&last); err != nil {
		return err
	}
	clk := clocktest.New(last.Add(time.Minute))
	rec := audit.NewRecorder(st, clk, slog.New(slog.DiscardHandler))
	defer rec.Close()
	svc := notify.NewService(notify.Config{Store: st, Tenants: tenants{bigTenant: {ID: bigTenant}}, Audit: rec, Clock: clk})
	by := identity.Principal{Kind: identity.KindClient, TenantID: bigTenant, ClientID: "bench-reader",
		Scopes: []string{identity.ScopeNotificationAdmin, identity.ScopeNotificationConsumer}}
	v, err := svc.Create(ctx, by, []byte(`{"event_type_ids":["10000","10001","10002","10003","10004","10005","10006","10007","10008","10009"],"client_id":"bench-reader","notification_page_size":100}`))
	if err != nil {
		return err
	}
	var from int64
	if err := conn.QueryRow(ctx, `SELECT min(seq) - 1 FROM events WHERE tenant_id = $1 AND received_at >= $2`, bigTenant, clk.Now().Add(-notify.DefaultRetention)).Scan(&from); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `UPDATE notify_subscriptions SET cursor = $1 WHERE id = $2`, from, v.ID); err != nil {
		return err
	}
	lat := make([]time.Duration, 0, c.pages)
	start := time.Now()
	got := 0
	for range c.pages {
		t0 := time.Now()
		p, err := svc.Retrieve(ctx, by, v.ID, 0)
		if err != nil || len(p.Results) != 100 {
			return fmt.Errorf("retrieve: %d results, %v", len(p.Results), err)
		}
		lat = append(lat, time.Since(t0))
		got += len(p.Results)
	}
	el := time.Since(start)
	fmt.Printf("P5 big all-types from seq %d: %d notifications in %.2f s = %.0f/s; page p50 %v p99 %v\n", from, got, el.Seconds(),
		float64(got)/el.Seconds(), percentile(lat, 0.5).Round(time.Microsecond), percentile(lat, 0.99).Round(time.Microsecond))
	return svc.Delete(ctx, by, v.ID)
}
