package filter_test

import (
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	_ "modernc.org/sqlite"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// storeCols is the column mapping an events store would use.
var storeCols = map[string]string{"event_type_id": "type_id", "timestamp": "occurred_at"}

// sqlFilters are compiled into testdata/sql.golden for review, and also run
// by the differential test.
var sqlFilters = []string{
	`username eq "alice"`,
	`username ne "alice"`,
	`username co "a%_\\b"`,
	`username sw "al"`,
	`username ew "ce"`,
	`username co ""`,
	`count gt 2`,
	`count ge 2.5`,
	`count lt 3`,
	`count le 3`,
	`count eq 3`,
	`flag eq true`,
	`flag eq false`,
	`nothing eq null`,
	`nothing ne null`,
	`username pr`,
	`event_type_id eq "10001"`,
	`event_type_id eq 10001`,
	`event_type_id pr`,
	`event_type_id sw "100"`,
	`timestamp gt "2024-05-01T02:00:00+02:00"`,
	`timestamp eq "2024-05-01T00:00:00Z"`,
	`timestamp le "2024-05-01T00:00:00.000000Z"`,
	`block.date_added lt "2024-05-02T00:00:00Z"`,
	`end_user.segment eq "gold" and not (end_user.id eq "u-1")`,
	`username eq "alice" or username eq "bob" and count gt 1`,
	`(username eq "alice" or username eq "bob") and count gt 1`,
}

func TestSQLGolden(t *testing.T) {
	var out strings.Builder
	for _, f := range sqlFilters {
		e, err := filter.Parse(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fmt.Fprintf(&out, "filter: %s\n", f)
		for _, d := range []struct {
			name string
			d    filter.Dialect
		}{
			{"sqlite", filter.Dialect{Engine: filter.SQLite}},
			{"postgres", filter.Dialect{Engine: filter.PostgreSQL, FirstArg: 3, Body: "e.body"}},
		} {
			where, args, err := filter.SQL(e, d.d, storeCols)
			if err != nil {
				t.Fatalf("%s %s: %v", f, d.name, err)
			}
			a, _ := json.Marshal(args)
			fmt.Fprintf(&out, "%s: %s\n%s args: %s\n", d.name, where, d.name, a)
		}
		out.WriteString("\n")
	}
	golden := filepath.Join("testdata", "sql.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), out.String()); diff != "" {
		t.Errorf("compiled SQL (-want +got):\n%s", diff)
	}
}

func TestSQLPlaceholders(t *testing.T) {
	e, err := filter.Parse(`a eq "x" and b eq 1 or c sw "y"`)
	if err != nil {
		t.Fatal(err)
	}
	where, args, err := filter.SQL(e, filter.Dialect{Engine: filter.PostgreSQL, FirstArg: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"$4", "$5", "$6"} {
		if !strings.Contains(where, p) {
			t.Errorf("%s missing in %s", p, where)
		}
	}
	if strings.Contains(where, "$7") || strings.Contains(where, "$3") {
		t.Errorf("unexpected placeholder in %s", where)
	}
	if diff := cmp.Diff([]any{"x", 1.0, "y%"}, args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	// Values never reach the SQL text.
	e, _ = filter.Parse(`a eq "'; DROP TABLE events; --"`)
	for _, d := range []filter.Dialect{{Engine: filter.SQLite}, {Engine: filter.PostgreSQL}} {
		where, _, err := filter.SQL(e, d, nil)
		if err != nil || strings.Contains(where, "DROP") {
			t.Errorf("engine %d: %q, %v", d.Engine, where, err)
		}
	}
}

func TestSQLRejectsUnsafeNames(t *testing.T) {
	ok := filter.Compare{Path: filter.Path{"a"}, Op: filter.Pr}
	tests := []struct {
		name string
		e    filter.Expr
		d    filter.Dialect
		cols map[string]string
		kind fault.Kind
	}{
		{"hand-built path", filter.Compare{Path: filter.Path{"a')--"}, Op: filter.Pr}, filter.Dialect{Engine: filter.SQLite}, nil, fault.Invalid},
		{"empty path", filter.Compare{Op: filter.Pr}, filter.Dialect{Engine: filter.SQLite}, nil, fault.Invalid},
		{"bad column", ok, filter.Dialect{Engine: filter.SQLite}, map[string]string{"a": "x; DROP"}, fault.Internal},
		{"bad body column", ok, filter.Dialect{Engine: filter.PostgreSQL, Body: "body)"}, nil, fault.Internal},
		{"no engine", ok, filter.Dialect{}, nil, fault.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			where, args, err := filter.SQL(tt.e, tt.d, tt.cols)
			if err == nil || where != "" || args != nil {
				t.Fatalf("SQL = %q, %v, %v; want an error", where, args, err)
			}
			if fault.KindOf(err) != tt.kind {
				t.Errorf("kind %v, want %v (%v)", fault.KindOf(err), tt.kind, err)
			}
		})
	}
}

// TestSQLiteDifferential runs compiled filters on SQLite and checks that they
// select exactly the rows Match selects, with and without indexed columns.
func TestSQLiteDifferential(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	if _, err := db.Exec(`CREATE TABLE events (tenant_id TEXT NOT NULL, seq INTEGER NOT NULL, type_id TEXT, occurred_at TEXT, body TEXT NOT NULL, PRIMARY KEY (tenant_id, seq))`); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	docs := make([]map[string]any, 300)
	for i := range docs {
		docs[i] = randomDoc(rng)
		body, err := json.Marshal(docs[i])
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = nil
		if err := json.Unmarshal(body, &docs[i]); err != nil { // as a store would read it back
			t.Fatal(err)
		}
		typeID, _ := docs[i]["event_type_id"].(string)
		ts, _ := docs[i]["timestamp"].(string)
		if _, err := db.Exec(`INSERT INTO events VALUES ('t1', ?, ?, ?, ?)`, i, nullIfEmpty(typeID), nullIfEmpty(ts), string(body)); err != nil {
			t.Fatal(err)
		}
	}
	// Another tenant's rows must never be selected.
	if _, err := db.Exec(`INSERT INTO events VALUES ('t2', 0, '10001', NULL, '{"username":"alice"}')`); err != nil {
		t.Fatal(err)
	}

	filters := slices.Clone(sqlFilters)
	for range 400 {
		filters = append(filters, randomExpr(rng, 3).String())
	}
	matched := 0
	for _, f := range filters {
		e, err := filter.Parse(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var want []int
		for i, doc := range docs {
			if filter.Match(e, doc) {
				want = append(want, i)
			}
		}
		if len(want) > 0 && len(want) < len(docs) {
			matched++
		}
		for _, cols := range []map[string]string{nil, storeCols} {
			where, args, err := filter.SQL(e, filter.Dialect{Engine: filter.SQLite}, cols)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			got := selectSeqs(t, db, where, args)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("filter %s, columns %v\nSQL %s %v\nrows (-Match +SQLite):\n%s", f, cols, where, args, diff)
			}
		}
	}
	// The data and filters are varied enough to tell selections apart.
	if matched < len(filters)/3 {
		t.Errorf("only %d of %d filters select some but not all rows", matched, len(filters))
	}
}

func selectSeqs(t *testing.T, db *sql.DB, where string, args []any) []int {
	t.Helper()
	rows, err := db.Query(`SELECT seq FROM events WHERE tenant_id = 't1' AND (`+where+`) ORDER BY seq`, args...)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var s int
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

var (
	diffPaths   = []string{"event_type_id", "timestamp", "username", "count", "flag", "nothing", "end_user", "end_user.id", "end_user.segment", "list", "block.date_added", "missing", "obj"}
	diffStrings = []string{"alice", "Alice", "al", "ce", "li", "%", "_", "a_b", "", "é", "10001", "100", "gold", "u-1", "2024-05-01T00:00:00Z", "2024-05-01T02:00:00+02:00", "2024-05-02"}
	diffNumbers = []float64{-1, 0, 1, 2.5, 3, 10001}
	usernames   = []any{"alice", "Alice", "bob", "al%ice", "a_b", "", "é-ce", "ALICE", "li", nil, 3, true, []any{"alice"}}
	counts      = []any{0, 1, 2, 2.5, 3, 4, -1, "3", nil, true, false, map[string]any{}}
	times       = []string{"2024-04-30T23:00:00.000000Z", "2024-05-01T00:00:00.000000Z", "2024-05-01T00:00:00.500000Z", "2024-05-01T01:00:00.000000Z", "2024-05-02T00:00:00.000000Z"}
)

func pick[T any](rng *rand.Rand, s []T) T { return s[rng.IntN(len(s))] }

// randomDoc makes an event body; each attribute may be missing. Columns hold
// strings only, as SQL's contract requires, so event_type_id and timestamp
// are strings or absent.
func randomDoc(rng *rand.Rand) map[string]any {
	d := map[string]any{}
	maybe := func(k string, v any) {
		if rng.IntN(5) > 0 {
			d[k] = v
		}
	}
	maybe("event_type_id", pick(rng, []string{"10001", "10002", "20000"}))
	maybe("timestamp", pick(rng, times))
	maybe("username", pick(rng, usernames))
	maybe("count", pick(rng, counts))
	maybe("flag", pick(rng, []any{true, false, nil, "true", 1}))
	maybe("nothing", pick(rng, []any{nil, "", "x", 0}))
	maybe("list", pick(rng, []any{[]any{}, []any{"a"}, "a"}))
	maybe("obj", pick(rng, []any{map[string]any{}, map[string]any{"a": 1}, "{}"}))
	maybe("end_user", pick(rng, []any{
		map[string]any{"id": "u-1", "segment": "gold"},
		map[string]any{"id": "u-2", "segment": "silver"},
		map[string]any{"id": "u-1"},
		map[string]any{},
		"u-1",
	}))
	maybe("block", map[string]any{"date_added": pick(rng, times)})
	return d
}

func randomExpr(rng *rand.Rand, depth int) filter.Expr {
	if depth > 0 {
		switch rng.IntN(5) {
		case 0:
			return filter.And{randomExpr(rng, depth-1), randomExpr(rng, depth-1)}
		case 1:
			return filter.Or{randomExpr(rng, depth-1), randomExpr(rng, depth-1)}
		case 2:
			return filter.Not{randomExpr(rng, depth-1)}
		}
	}
	p := filter.Path(strings.Split(pick(rng, diffPaths), "."))
	op := pick(rng, []filter.Op{filter.Eq, filter.Ne, filter.Co, filter.Sw, filter.Ew, filter.Gt, filter.Ge, filter.Lt, filter.Le, filter.Pr})
	var v filter.Value
	switch op {
	case filter.Pr:
	case filter.Co, filter.Sw, filter.Ew:
		v = str(pick(rng, diffStrings))
	case filter.Gt, filter.Ge, filter.Lt, filter.Le:
		if rng.IntN(2) == 0 {
			v = str(pick(rng, diffStrings))
		} else {
			v = num(pick(rng, diffNumbers))
		}
	default:
		switch rng.IntN(4) {
		case 0:
			v = str(pick(rng, diffStrings))
		case 1:
			v = num(pick(rng, diffNumbers))
		case 2:
			v = boolean(rng.IntN(2) == 0)
		default:
			v = null
		}
	}
	return filter.Compare{Path: p, Op: op, Value: v}
}
