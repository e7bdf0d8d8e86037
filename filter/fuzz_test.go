package filter_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/filter"
)

// FuzzParse checks that Parse never panics, that a parsed filter prints to
// text that parses to the same tree, and that it compiles to SQL whose only
// placeholders are its arguments (no input reaches the SQL text).
func FuzzParse(f *testing.F) {
	for _, s := range sqlFilters {
		f.Add(s)
	}
	long := strings.Repeat("a pr and ", 450) + "a pr"
	for _, s := range []string{long, `a eq 1`, `not (a pr) or b.c sw "x"`, `((a eq -0))`, `a eq "\u0000\ud800"`, `x eq 1e308`, `a eq 1 )`} {
		f.Add(s)
	}
	doc := map[string]any{"a": "x", "b": map[string]any{"c": 1.0}, "count": 3.0}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := filter.Parse(s)
		if err != nil {
			if e != nil {
				t.Fatalf("tree with error: %v", e)
			}
			return
		}
		printed := e.String()
		if len(printed) > filter.MaxLength {
			return // a longer spelling than the input; see Expr.String
		}
		again, err := filter.Parse(printed)
		if err != nil {
			t.Fatalf("reparse of %q (from %q): %v", e.String(), s, err)
		}
		if diff := cmp.Diff(e, again); diff != "" {
			t.Fatalf("reparse of %q (-first +second):\n%s", e.String(), diff)
		}
		filter.Match(e, doc)
		where, args, err := filter.SQL(e, filter.Dialect{Engine: filter.SQLite}, storeCols)
		if err != nil {
			t.Fatalf("SQL: %v", err)
		}
		if n := len(placeholder.FindAllString(where, -1)); n != len(args) {
			t.Fatalf("%d placeholders, %d args: %s", n, len(args), where)
		}
		if _, _, err := filter.SQL(e, filter.Dialect{Engine: filter.PostgreSQL}, storeCols); err != nil {
			t.Fatalf("SQL PostgreSQL: %v", err)
		}
	})
}

// placeholder matches the $N parameters of compiled SQL (a JSON path's
// '$.' or '$[' never has a digit after the dollar).
var placeholder = regexp.MustCompile(`\$[0-9]+`)
