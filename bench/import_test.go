package bench_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/identity"
)

// P19 (API-cli.md): the pre-hashed import on SQLite against raw inserts
// of the same rows into the same table and indexes, in the same run, and
// the import's rate over its last tenth against its first (the target's
// "last 100k of 1M against the first 100k", at the size given):
//
//	P19_USERS=100000 go test ./bench -run '^$' -bench P19Import -benchtime 1x
//
// The import goes through identity.Service.ImportUsers in requests of
// 1,000 lines, as `latchkey user import` sends them (the HTTP framing and
// the command's reading are left out: the command's CPU is about 1% of
// the server's). Each line is a Keycloak PBKDF2-SHA256 user with an
// externalId and an email.
func BenchmarkP19Import(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("P19_USERS")); err == nil && v > 0 {
		n = v
	}
	lines := p19Lines(n)
	b.Run("baseline=raw-inserts", func(b *testing.B) {
		for b.Loop() {
			e := newEnv(b, fastParams)
			t, err := e.p.Identity.CreateTenant(context.Background(), e.admin, "Raw", "")
			if err != nil {
				b.Fatal(err)
			}
			d := rawInsertUsers(b, e.dbPath, t.ID, n)
			b.ReportMetric(float64(n)/d.Seconds(), "users/s")
		}
	})
	b.Run("latchkey-import", func(b *testing.B) {
		for b.Loop() {
			e := newEnv(b, fastParams)
			ctx := context.Background()
			t, err := e.p.Identity.CreateTenant(ctx, e.admin, "Imported", "")
			if err != nil {
				b.Fatal(err)
			}
			tenth := max(n/10, 1000)
			var first, last time.Duration
			start := time.Now()
			blockStart := start
			for i := 0; i < n; i += 1000 {
				end := min(i+1000, n)
				sum, err := e.p.Identity.ImportUsers(ctx, e.admin, t.ID, lines[i:end], identity.ImportOptions{}, func([]identity.ImportResult) error { return nil })
				if err != nil || sum.Created != end-i {
					b.Fatalf("import %d..%d: %+v, %v", i, end, sum, err)
				}
				if end == tenth {
					first = time.Since(blockStart)
				}
				if end == n-tenth {
					blockStart = time.Now()
				}
			}
			last = time.Since(blockStart)
			d := time.Since(start)
			b.ReportMetric(float64(n)/d.Seconds(), "users/s")
			b.ReportMetric(first.Seconds()/last.Seconds(), "last/first")
		}
	})
}

// fastParams are cheap argon2id costs: the import hashes nothing, and
// the platform's own bootstrap should not weigh on the run.
var fastParams = identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}

// p19Lines are n import lines: Keycloak's PBKDF2-SHA256 at 27,500
// iterations, with an externalId and an email, as the Keycloak reader
// writes them.
func p19Lines(n int) [][]byte {
	lines := make([][]byte, n)
	salt := base64.RawStdEncoding.EncodeToString([]byte("sixteen-byte-sal"))
	key := make([]byte, 32)
	for i := range lines {
		rand.Read(key)
		lines[i] = fmt.Appendf(nil, `{"name":"user%07d","externalId":"%08x-kc","email":"user%07d@example.com","emailVerified":true,"passwordHash":"$pbkdf2-sha256$i=27500,l=32$%s$%s"}`,
			i, i, i, salt, base64.RawStdEncoding.EncodeToString(key))
	}
	return lines
}

// rawInsertUsers inserts n users straight into the users table of the
// database at path (the same table and indexes the import writes), 500 a
// transaction like the import, through one prepared statement, with
// SQLite's pragmas as the store sets them.
func rawInsertUsers(b *testing.B, path, tenantID string, n int) time.Duration {
	b.Helper()
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(1)", "synchronous(FULL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	salt := base64.RawStdEncoding.EncodeToString([]byte("sixteen-byte-sal"))
	key := make([]byte, 32)
	now := time.Now().UnixMicro() // the store's time columns are unix microseconds
	start := time.Now()
	for i := 0; i < n; i += 500 {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		st, err := tx.Prepare(`INSERT INTO users (id, tenant_id, name, password_hash, roles, created_at, password_scheme, email, email_verified,
			display_name, given_name, family_name, external_id, active, profile, version, updated_at, name_key)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		for j := i; j < min(i+500, n); j++ {
			id := identity.NewObjectID()
			rand.Read(key)
			name := fmt.Sprintf("user%07d", j)
			hash := "$pbkdf2-sha256$i=27500,l=32$" + salt + "$" + base64.RawStdEncoding.EncodeToString(key)
			if _, err := st.Exec(id[:], tenantID, name, hash, `["user"]`, now, identity.SchemePBKDF2SHA256, name+"@example.com", true,
				"", "", "", fmt.Sprintf("%08x-kc", j), true, "{}", 0, 0, strings.ToLower(name)); err != nil {
				b.Fatal(err)
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}
