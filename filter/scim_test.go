package filter_test

import (
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
)

const enterprise = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"

func TestParseSCIM(t *testing.T) {
	tests := []struct {
		in   string
		want filter.Expr
	}{
		{`userName eq "bjensen"`, c("userName", filter.Eq, str("bjensen"))},
		{`UserName Eq "x"`, c("UserName", filter.Eq, str("x"))},
		{`name.familyName co "O'Malley"`, c("name.familyName", filter.Co, str("O'Malley"))},
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"`,
			filter.Compare{Path: filter.Path{"urn:ietf:params:scim:schemas:core:2.0:User", "userName"}, Op: filter.Sw, Value: str("J")}},
		{enterprise + `:manager.value eq "26118915-6090-4610-87e4-49d8ca9f808d"`,
			filter.Compare{Path: filter.Path{enterprise, "manager", "value"}, Op: filter.Eq, Value: str("26118915-6090-4610-87e4-49d8ca9f808d")}},
		{`emails[type eq "work" and value co "@example.com"]`,
			filter.Has{Path: path("emails"), Filter: filter.And{c("type", filter.Eq, str("work")), c("value", filter.Co, str("@example.com"))}}},
		{`userType eq "Employee" and emails[type eq "work"] or not (x-y pr)`,
			filter.Or{filter.And{c("userType", filter.Eq, str("Employee")), filter.Has{Path: path("emails"), Filter: c("type", filter.Eq, str("work"))}}, filter.Not{pr("x-y")}}},
		{`members[$ref pr]`, filter.Has{Path: path("members"), Filter: pr("$ref")}},
		{`emails[not (type eq "home")]`, filter.Has{Path: path("emails"), Filter: filter.Not{c("type", filter.Eq, str("home"))}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := filter.ParseSCIM(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			again, err := filter.ParseSCIM(got.String())
			if err != nil {
				t.Fatalf("reparse %q: %v", got.String(), err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("reparse of %q (-first +second):\n%s", got.String(), diff)
			}
		})
	}
}

func TestParseSCIMErrors(t *testing.T) {
	for _, in := range []string{
		`emails[type eq "work"`,
		`emails[]`,
		`emails[type eq "work"].value eq "x"`,
		`emails[type[value pr]]`,
		`emails[x.y eq 1]`,
		`emails[emails.value eq "x"]`,
		`a.b.c eq 1`,
		`foo:bar eq 1`,
		`urn::x eq 1`,
		`1abc eq 1`,
		`emails]`,
		`name.$ref$ eq 1`,
	} {
		t.Run(in, func(t *testing.T) {
			e, err := filter.ParseSCIM(in)
			var se *filter.SyntaxError
			if !errors.As(err, &se) || e != nil {
				t.Fatalf("ParseSCIM = %v, %v; want a syntax error", e, err)
			}
			if !fault.Is(fault.Invalid, err) {
				t.Errorf("kind %v", fault.KindOf(err))
			}
		})
	}
	// The events' grammar is unchanged: no brackets, no URNs.
	for _, in := range []string{`emails[type eq "work"]`, `a-b eq 1`, `urn:x:y eq 1`} {
		if _, err := filter.Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

func TestParsePatchPath(t *testing.T) {
	tests := []struct {
		in   string
		want filter.PatchPath
	}{
		{`active`, filter.PatchPath{Attr: path("active")}},
		{`name.givenName`, filter.PatchPath{Attr: path("name.givenName")}},
		{`members[value eq "u1"]`, filter.PatchPath{Attr: path("members"), Filter: c("value", filter.Eq, str("u1"))}},
		{`emails[type eq "work"].value`, filter.PatchPath{Attr: path("emails"), Filter: c("type", filter.Eq, str("work")), Sub: "value"}},
		{`addresses[type eq "work"].streetAddress`, filter.PatchPath{Attr: path("addresses"), Filter: c("type", filter.Eq, str("work")), Sub: "streetAddress"}},
		{enterprise + `:employeeNumber`, filter.PatchPath{Attr: filter.Path{enterprise, "employeeNumber"}}},
		{enterprise + `:manager.value`, filter.PatchPath{Attr: filter.Path{enterprise, "manager", "value"}}},
		{enterprise, filter.PatchPath{Attr: filter.Path{"urn:ietf:params:scim:schemas:extension:enterprise:2.0", "User"}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := filter.ParsePatchPath(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
	for _, in := range []string{``, `  `, `emails[`, `emails[type eq "work"].`, `emails[type eq "work"].value.x`, `name.givenName[x eq 1]`,
		`a b`, `"x"`, `emails[type eq "work"] and x`, `(active)`, `a.b.c`} {
		if p, err := filter.ParsePatchPath(in); err == nil {
			t.Errorf("ParsePatchPath(%q) = %+v; want an error", in, p)
		}
	}
}

// userSchema is a SCIM User as a store might keep it: some attributes in
// columns, the rest in a JSON body.
var userSchema = filter.NewSchema("urn:ietf:params:scim:schemas:core:2.0:User",
	filter.Attribute{Name: "id", Store: path("id"), CaseExact: true, EqOnly: true},
	filter.Attribute{Name: "userName", Store: path("userName")},
	filter.Attribute{Name: "externalId", Store: path("externalId"), CaseExact: true},
	filter.Attribute{Name: "active", Store: path("active")},
	filter.Attribute{Name: "displayName", Store: path("displayName")},
	filter.Attribute{Name: "name.familyName", Store: path("name.familyName")},
	filter.Attribute{Name: "emails", Store: path("emails"), MultiValued: true},
	filter.Attribute{Name: "emails.value", Store: path("value")},
	filter.Attribute{Name: "emails.type", Store: path("type")},
	filter.Attribute{Name: "emails.primary", Store: path("primary")},
	filter.Attribute{Name: "password", Store: path("password"), Unfilterable: true},
	filter.Attribute{Name: enterprise + ":employeeNumber", Store: path("enterprise.employeeNumber"), CaseExact: true},
	filter.Attribute{Name: enterprise + ":manager.value", Store: path("enterprise.manager.value"), CaseExact: true},
)

func TestResolve(t *testing.T) {
	fold := func(p string, op filter.Op, v filter.Value) filter.Compare {
		return filter.Compare{Path: path(p), Op: op, Value: v, Fold: true}
	}
	exact := func(p string, op filter.Op, v filter.Value) filter.Compare {
		return filter.Compare{Path: path(p), Op: op, Value: v}
	}
	tests := []struct {
		in   string
		want filter.Expr
	}{
		{`USERNAME eq "BJensen"`, fold("userName", filter.Eq, str("BJensen"))},
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "x"`, fold("userName", filter.Eq, str("x"))},
		{`externalid eq "Ab"`, exact("externalId", filter.Eq, str("Ab"))},
		{`name.FAMILYNAME sw "J"`, fold("name.familyName", filter.Sw, str("J"))},
		{`emails co "@x.org"`, filter.Has{Path: path("emails"), Filter: fold("value", filter.Co, str("@x.org"))}},
		{`emails.type eq "work"`, filter.Has{Path: path("emails"), Filter: fold("type", filter.Eq, str("work"))}},
		{`emails pr`, exact("emails", filter.Pr, filter.Value{})},
		{`Emails[Type eq "work" and primary eq true]`, filter.Has{Path: path("emails"), Filter: filter.And{fold("type", filter.Eq, str("work")), fold("primary", filter.Eq, boolean(true))}}},
		{strings.ToLower(enterprise) + `:EMPLOYEENUMBER eq "7"`, exact("enterprise.employeeNumber", filter.Eq, str("7"))},
		{enterprise + `:manager.value eq "m"`, exact("enterprise.manager.value", filter.Eq, str("m"))},
		{`id eq "AQ" and not (active eq false)`, filter.And{exact("id", filter.Eq, str("AQ")), filter.Not{fold("active", filter.Eq, boolean(false))}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			e, err := filter.ParseSCIM(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := userSchema.Resolve(e)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, in := range []string{
		`nickName eq "x"`,                  // unknown
		`password eq "x"`,                  // unfilterable
		`id sw "A"`,                        // eq only
		`userName[value eq "x"]`,           // not multi-valued
		`emails[value eq "x" and foo pr]`,  // unknown sub-attribute
		`urn:x:y:userName eq "x"`,          // another schema
		`emails.nothing eq "x"`,            // unknown sub-attribute
		enterprise + `:manager eq "x"`,     // unknown (only manager.value)
		`emails[type eq "work"] or a eq 1`, // unknown after a value path
	} {
		t.Run("refused "+in, func(t *testing.T) {
			e, err := filter.ParseSCIM(in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := userSchema.Resolve(e)
			if err == nil || got != nil {
				t.Fatalf("Resolve = %v, %v; want an error", got, err)
			}
			if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "filter" {
				t.Errorf("error %v: kind %v field %q", err, fault.KindOf(err), fault.FieldOf(err))
			}
		})
	}
}

// scimCols keep userName folded, externalId as is, active as a boolean and
// the id as bytes, as the SCIM store does.
var scimCols = map[string]filter.Column{
	"userName":   {Name: "name_key", Folded: true},
	"externalId": {Name: "external_id"},
	"active":     {Name: "active", Kind: filter.Bool},
	"id":         {Name: "id", Convert: decodeID},
}

func decodeID(s string) (any, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || base64.RawURLEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// TestSCIMDifferential runs resolved SCIM filters on SQLite (columns and a
// JSON body with arrays) and checks they select exactly what Match selects.
func TestSCIMDifferential(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE users (seq INTEGER PRIMARY KEY, id BLOB, name_key TEXT, external_id TEXT, active INTEGER, body TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	docs := make([]map[string]any, 300)
	for i := range docs {
		d := randomUser(rng, i)
		body, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &docs[i]); err != nil {
			t.Fatal(err)
		}
		id, _ := decodeID(d["id"].(string))
		var nameKey, ext, active any
		if s, ok := d["userName"].(string); ok {
			nameKey = filter.Fold(s)
		}
		if s, ok := d["externalId"].(string); ok {
			ext = s
		}
		if b, ok := d["active"].(bool); ok {
			active = b
		}
		if _, err := db.Exec(`INSERT INTO users VALUES (?, ?, ?, ?, ?, ?)`, i, id, nameKey, ext, active, string(body)); err != nil {
			t.Fatal(err)
		}
	}
	filters := []string{
		`userName eq "ALICE"`, `userName sw "al"`, `userName gt "b"`, `externalId eq "E1"`, `externalId eq "e1"`,
		`active eq true`, `active eq false`, `active ne true`, `active pr`, `active eq "true"`,
		`emails[type eq "WORK" and value ew "@x.org"]`, `emails co "BOB"`, `emails.primary eq true`, `emails pr`,
		`emails[not (type eq "home")]`, `displayName eq "ÉMILE"`, `displayName eq "émile"`,
		enterprise + `:employeeNumber eq "7"`, enterprise + `:manager.value pr`,
		`id eq "AAAAAAAAAAAAAAAAAAAAAA"`, `id eq "not an id"`, `id pr`,
	}
	for range 300 {
		filters = append(filters, randomSCIM(rng, 2).String())
	}
	matched := 0
	for _, f := range filters {
		e, err := filter.ParseSCIM(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		r, err := userSchema.Resolve(e)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var want []int
		for i, doc := range docs {
			if filter.Match(r, doc) {
				want = append(want, i)
			}
		}
		if len(want) > 0 && len(want) < len(docs) {
			matched++
		}
		where, args, err := filter.SQLColumns(r, filter.Dialect{Engine: filter.SQLite}, scimCols)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rows, err := db.Query(`SELECT seq FROM users WHERE `+where+` ORDER BY seq`, args...)
		if err != nil {
			t.Fatalf("%s: %s: %v", f, where, err)
		}
		var got []int
		for rows.Next() {
			var s int
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		rows.Close()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("filter %s\nSQL %s %v\nrows (-Match +SQLite):\n%s", f, where, args, diff)
		}
		if _, _, err := filter.SQLColumns(r, filter.Dialect{Engine: filter.PostgreSQL, FirstArg: 2}, scimCols); err != nil {
			t.Errorf("%s: PostgreSQL: %v", f, err)
		}
	}
	if matched < len(filters)/4 {
		t.Errorf("only %d of %d filters select some but not all rows", matched, len(filters))
	}
}

var (
	userNames = []any{"alice", "Alice", "ALICE", "bob", "Bob@X.org", "émile", "ÉMILE", "", nil}
	emailTyps = []any{"work", "Work", "home", nil, 3}
	emailVals = []any{"alice@x.org", "BOB@X.ORG", "bob@y.org", "", nil}
)

func randomUser(rng *rand.Rand, i int) map[string]any {
	id := make([]byte, 16)
	id[15] = byte(i)
	if i == 0 {
		id[15] = 0
	}
	d := map[string]any{"id": base64.RawURLEncoding.EncodeToString(id)}
	maybe := func(k string, v any) {
		if v != nil && rng.IntN(5) > 0 {
			d[k] = v
		}
	}
	maybe("userName", pick(rng, userNames))
	maybe("externalId", pick(rng, []any{"E1", "e1", "E2", nil}))
	maybe("active", pick(rng, []any{true, false, nil}))
	maybe("displayName", pick(rng, []any{"émile", "ÉMILE", "Émile", "Bob"}))
	var emails []any
	for range rng.IntN(4) {
		el := map[string]any{}
		if v := pick(rng, emailTyps); v != nil {
			el["type"] = v
		}
		if v := pick(rng, emailVals); v != nil {
			el["value"] = v
		}
		if rng.IntN(3) == 0 {
			el["primary"] = true
		}
		emails = append(emails, el)
	}
	if rng.IntN(8) == 0 {
		emails = append(emails, "not an object")
	}
	if emails != nil {
		d["emails"] = emails
	}
	if rng.IntN(2) == 0 {
		ent := map[string]any{"employeeNumber": pick(rng, []any{"7", "8", 7.0})}
		if rng.IntN(2) == 0 {
			ent["manager"] = map[string]any{"value": "m"}
		}
		d["enterprise"] = ent
	}
	return d
}

func randomSCIM(rng *rand.Rand, depth int) filter.Expr {
	if depth > 0 {
		switch rng.IntN(5) {
		case 0:
			return filter.And{randomSCIM(rng, depth-1), randomSCIM(rng, depth-1)}
		case 1:
			return filter.Or{randomSCIM(rng, depth-1), randomSCIM(rng, depth-1)}
		case 2:
			return filter.Not{randomSCIM(rng, depth-1)}
		}
	}
	if rng.IntN(5) == 0 {
		sub := filter.Compare{Path: path(pick(rng, []string{"type", "value", "primary"})), Op: pick(rng, []filter.Op{filter.Eq, filter.Co, filter.Sw, filter.Ne, filter.Pr}), Value: str(pick(rng, []string{"work", "WORK", "x.org", "bob"}))}
		if sub.Op == filter.Pr {
			sub.Value = filter.Value{}
		}
		return filter.Has{Path: path("emails"), Filter: sub}
	}
	p := pick(rng, []string{"userName", "USERNAME", "externalId", "displayName", "emails", "emails.value", "emails.type", "active", enterprise + ":employeeNumber"})
	var sp filter.Path
	if strings.HasPrefix(p, "urn:") {
		sp = filter.Path{enterprise, "employeeNumber"}
	} else {
		sp = path(p)
	}
	op := pick(rng, []filter.Op{filter.Eq, filter.Ne, filter.Co, filter.Sw, filter.Ew, filter.Gt, filter.Le, filter.Pr})
	var v filter.Value
	switch {
	case op == filter.Pr:
	case op == filter.Eq && rng.IntN(4) == 0:
		v = boolean(rng.IntN(2) == 0)
	case op == filter.Eq && rng.IntN(6) == 0:
		v = null
	default:
		v = str(pick(rng, []string{"alice", "ALICE", "al", "ICE", "E1", "e1", "7", "work", "x.org", "émile", "É", ""}))
	}
	return filter.Compare{Path: sp, Op: op, Value: v}
}
