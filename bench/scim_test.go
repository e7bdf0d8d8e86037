package bench_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/scim"
	"github.com/latchkey/latchkey/store/sqlite"
)

// BenchmarkSCIMUsers is the SCIM list target of issue 38 on SQLite: a
// userName eq filter among 10k users (p99 under 10 ms), and a page of 200
// from 100k users (the same bound), through the store query the SCIM
// service runs (QueryUsers: the page and its count in one read). It
// reports p50 and p99 per query as metrics.
func BenchmarkSCIMUsers(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "scim.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			tn := identity.Tenant{ID: identity.NewGUID(), Code: "SCIM000001", Name: "S", Settings: identity.DefaultSettings(), CreatedAt: time.Now().UTC()}
			if err := st.CreateTenant(ctx, tn); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				u := identity.User{ID: identity.NewObjectID(), TenantID: tn.ID, Name: fmt.Sprintf("User.%07d@Example.com", i), Roles: []string{"user"},
					Email: fmt.Sprintf("user.%07d@example.com", i), PasswordScheme: "none", Version: 1, CreatedAt: time.Now().UTC(),
					Profile: []byte(fmt.Sprintf(`{"emails":[{"value":"user.%07d@example.com","type":"work","primary":true}]}`, i))}
				if err := st.CreateUser(ctx, u); err != nil {
					b.Fatal(err)
				}
			}
			for _, q := range []struct {
				name   string
				filter string
				count  int
			}{
				{"userName-eq", `userName eq "user.%07d@example.com"`, 100},
				{"first-page-200", "", 200},
				{"any-page-200", "", 200},
			} {
				b.Run(q.name, func(b *testing.B) {
					var lat []time.Duration
					i := 0
					for b.Loop() {
						text := q.filter
						if text != "" {
							text = fmt.Sprintf(text, i%n)
						}
						f, err := scim.CompileFilter(scim.Users, text)
						if err != nil {
							b.Fatal(err)
						}
						start := time.Now()
						offset := 0
						if q.name == "any-page-200" {
							offset = (i * 200) % (n - 200)
						}
						users, _, err := st.QueryUsers(ctx, identity.UserQuery{TenantID: tn.ID, Filter: f, Limit: q.count, Offset: offset})
						lat = append(lat, time.Since(start))
						if err != nil || len(users) == 0 {
							b.Fatalf("%d users, %v", len(users), err)
						}
						i++
					}
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				})
			}
		})
	}
}
