package bench_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/notify"
	"github.com/latchkey/latchkey/store/sqlite"
)

// notifySchemaVersion names the cached seed databases of the notification
// benchmark; bump it when the schema (any migration) or the rows change.
// They are kept apart from the events benchmark's, which an older schema
// may open.
const notifySchemaVersion = "notify-v1"

// seedStart is the received time of the first seeded event (insertRaw):
// event i is received i seconds later.
var seedStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seededNotify is seededEvents for the notification benchmark: n events of
// ten types (10000..10009, in turn) in one tenant, inserted 50 000 per
// transaction with synchronous=OFF, cached under os.TempDir.
func seededNotify(b *testing.B, n int) (string, string) {
	return seededLog(b, notifySchemaVersion, "6f1d2c3b-0000-4000-8000-00000000d001", n)
}

// benchTenants answers the one tenant of a seeded store, with a retention
// that keeps every seeded event.
type benchTenants struct{ t identity.Tenant }

func (b benchTenants) GetTenant(ctx context.Context, id string) (identity.Tenant, error) {
	return b.t, nil
}

// BenchmarkNotifyRetrieve is P5: notify.Service.Retrieve of pages of 100
// on SQLite (synchronous=FULL), in-process, with the platform's audit
// recorder (each retrieval's record is committed in its transaction), at
// 10k and 1M events in the tenant's log. "all-types" subscribes to the ten
// seeded types (every event matches), "one-type" to one (a tenth match).
// The subscription's cursor starts at the beginning of the log; when the
// log is consumed it is reset there, off the clock. Reports notifications
// per second and the p50/p99 of one page.
func BenchmarkNotifyRetrieve(b *testing.B) {
	all := []string{"10000", "10001", "10002", "10003", "10004", "10005", "10006", "10007", "10008", "10009"}
	for _, n := range []int{10_000, 1_000_000} {
		for _, sub := range []struct {
			name  string
			types []string
		}{{"all-types", all}, {"one-type", []string{"10003"}}} {
			b.Run(fmt.Sprintf("events=%d/%s", n, sub.name), func(b *testing.B) {
				benchRetrieve(b, n, sub.types)
			})
		}
	}
}

func benchRetrieve(b *testing.B, n int, types []string) {
	ctx := context.Background()
	path, tenant := seededNotify(b, n)
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	clk := clocktest.New(seedStart.Add(time.Duration(n) * time.Second))
	rec := audit.NewRecorder(st, clk, slog.New(slog.DiscardHandler))
	b.Cleanup(rec.Close)
	t := identity.Tenant{ID: tenant, Settings: identity.Settings{NotificationRetentionSeconds: 400 * 24 * 3600}}
	svc := notify.NewService(notify.Config{Store: st, Tenants: benchTenants{t}, Audit: rec, Clock: clk})
	by := identity.Principal{Kind: identity.KindClient, TenantID: tenant, ClientID: "bench-reader",
		Scopes: []string{identity.ScopeNotificationAdmin, identity.ScopeNotificationConsumer}}
	body := fmt.Sprintf(`{"event_type_ids":["%s"],"client_id":"bench-reader","notification_page_size":100}`, joinQuoted(types))
	v, err := svc.Create(ctx, by, []byte(body))
	if err != nil {
		b.Fatal(err)
	}
	raw := openRaw(b, path, "FULL")
	rewind := func() {
		if _, err := raw.Exec(`UPDATE notify_subscriptions SET cursor = 0 WHERE tenant_id = ? AND id = ?`, tenant, v.ID); err != nil {
			b.Fatal(err)
		}
	}
	rewind()
	measureRetrieve(b, svc, by, v.ID, rewind)
}

func joinQuoted(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += `","`
		}
		out += x
	}
	return out
}

// BenchmarkNotifyRetrievePostgres is P5 on PostgreSQL (a fresh schema of
// $PLATFORM_POSTGRES_DSN), at 10k and 100k events appended through the
// store in batches (seedEventsPostgres; 1M would take minutes to seed on
// every run); otherwise as BenchmarkNotifyRetrieve.
func BenchmarkNotifyRetrievePostgres(b *testing.B) {
	all := []string{"10000", "10001", "10002", "10003", "10004", "10005", "10006", "10007", "10008", "10009"}
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("events=%d/all-types", n), func(b *testing.B) {
			st, dsn, schema := openPostgresSchema(b)
			ctx := context.Background()
			const tenant = "6f1d2c3b-0000-4000-8000-00000000d002"
			seedEventsPostgres(b, st, tenant, n)
			clk := clocktest.New(seedStart.Add(time.Duration(n) * time.Second))
			rec := audit.NewRecorder(st, clk, slog.New(slog.DiscardHandler))
			b.Cleanup(rec.Close)
			t := identity.Tenant{ID: tenant, Settings: identity.Settings{NotificationRetentionSeconds: 400 * 24 * 3600}}
			svc := notify.NewService(notify.Config{Store: st, Tenants: benchTenants{t}, Audit: rec, Clock: clk})
			by := identity.Principal{Kind: identity.KindClient, TenantID: tenant, ClientID: "bench-reader",
				Scopes: []string{identity.ScopeNotificationAdmin, identity.ScopeNotificationConsumer}}
			v, err := svc.Create(ctx, by, []byte(fmt.Sprintf(`{"event_type_ids":["%s"],"client_id":"bench-reader","notification_page_size":100}`, joinQuoted(all))))
			if err != nil {
				b.Fatal(err)
			}
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { conn.Close(context.Background()) })
			rewind := func() {
				if _, err := conn.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "notify_subscriptions"}.Sanitize()+` SET cursor = 0 WHERE id = $1`, v.ID); err != nil {
					b.Fatal(err)
				}
			}
			rewind()
			measureRetrieve(b, svc, by, v.ID, rewind)
		})
	}
}

// measureRetrieve runs b.N retrievals of full pages of 100, rewinding the
// subscription off the clock when the log is consumed, and reports
// notifications/s and the p50/p99 of a page.
func measureRetrieve(b *testing.B, svc *notify.Service, by identity.Principal, id string, rewind func()) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	got := 0
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		p, err := svc.Retrieve(ctx, by, id, 0)
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Results) < 100 { // the log is consumed: rewind and retry, off the clock
			b.StopTimer()
			rewind()
			b.StartTimer()
			t0 = time.Now()
			if p, err = svc.Retrieve(ctx, by, id, 0); err != nil || len(p.Results) != 100 {
				b.Fatalf("after rewind: %d results, %v", len(p.Results), err)
			}
			d = time.Since(t0)
		}
		got += len(p.Results)
		lat = append(lat, d)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(got)/b.Elapsed().Seconds(), "notifications/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
