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

// FuzzParseSCIM checks that ParseSCIM never panics and round-trips, that
// resolving against a User schema never panics, and that a resolved filter
// compiles for both engines with one argument per placeholder.
func FuzzParseSCIM(f *testing.F) {
	for _, s := range []string{
		`userName eq "bjensen"`, `emails[type eq "work" and value co "@x.org"]`, `emails co "x"`,
		enterprise + `:employeeNumber eq "7"`, `urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"`,
		`not (active eq false) or emails.primary eq true`, `members[$ref pr]`, `id eq "AQ"`, `emails[type[x pr]]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := filter.ParseSCIM(s)
		if err != nil {
			if e != nil {
				t.Fatalf("tree with error: %v", e)
			}
			return
		}
		if printed := e.String(); len(printed) <= filter.MaxLength {
			again, err := filter.ParseSCIM(printed)
			if err != nil {
				t.Fatalf("reparse of %q (from %q): %v", printed, s, err)
			}
			if diff := cmp.Diff(e, again); diff != "" {
				t.Fatalf("reparse of %q (-first +second):\n%s", printed, diff)
			}
		}
		r, err := userSchema.Resolve(e)
		if err != nil {
			if r != nil {
				t.Fatalf("resolved tree with error: %v", r)
			}
			return
		}
		filter.Match(r, map[string]any{"userName": "A", "emails": []any{map[string]any{"value": "x"}, "y"}})
		for _, d := range []filter.Dialect{{Engine: filter.SQLite}, {Engine: filter.PostgreSQL, FirstArg: 3}} {
			where, args, err := filter.SQLColumns(r, d, scimCols)
			if err != nil {
				t.Fatalf("SQL: %v", err)
			}
			if n := len(placeholder.FindAllString(where, -1)); n != len(args) {
				t.Fatalf("%d placeholders, %d args: %s", n, len(args), where)
			}
		}
	})
}

// FuzzParsePatchPath checks that ParsePatchPath never panics and that a
// parsed path prints to text that parses to the same path.
func FuzzParsePatchPath(f *testing.F) {
	for _, s := range []string{`active`, `name.givenName`, `members[value eq "u1"]`, `emails[type eq "work"].value`,
		enterprise + `:manager.value`, enterprise, `emails[type eq "work"].`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := filter.ParsePatchPath(s)
		if err != nil {
			if p.Attr != nil || p.Filter != nil {
				t.Fatalf("path with error: %+v", p)
			}
			return
		}
		printed := p.String()
		if len(printed) > filter.MaxLength {
			return
		}
		again, err := filter.ParsePatchPath(printed)
		if err != nil {
			t.Fatalf("reparse of %q (from %q): %v", printed, s, err)
		}
		if diff := cmp.Diff(p, again); diff != "" {
			t.Fatalf("reparse of %q (-first +second):\n%s", printed, diff)
		}
	})
}
