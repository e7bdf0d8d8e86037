package filter_test

import (
	"fmt"

	"github.com/latchkey/latchkey/filter"
)

func ExampleSQL() {
	e, err := filter.Parse(`event_type_id eq "10001" and (end_user.segment sw "gold" or count gt 2)`)
	if err != nil {
		fmt.Println(err)
		return
	}
	cols := map[string]string{"event_type_id": "type_id", "timestamp": "occurred_at"}
	where, args, _ := filter.SQL(e, filter.Dialect{Engine: filter.PostgreSQL, FirstArg: 2}, cols)
	fmt.Println(where)
	fmt.Println(args)

	_, err = filter.Parse(`end_user.segment foo "gold"`)
	fmt.Println(err)
	// Output:
	// (COALESCE((type_id IS NOT NULL AND type_id = $2), FALSE) AND (COALESCE((jsonb_typeof((body #> '{end_user,segment}')) = 'string' AND (body #>> '{end_user,segment}') LIKE $3 ESCAPE '\'), FALSE) OR COALESCE((CASE WHEN jsonb_typeof((body #> '{count}')) = 'number' THEN (body #>> '{count}')::numeric END) > $4, FALSE)))
	// [10001 gold% 2]
	// filter: position 18: expected operator, found "foo"
}

func ExampleSchema_Resolve() {
	users := filter.NewSchema("urn:ietf:params:scim:schemas:core:2.0:User",
		filter.Attribute{Name: "userName", Store: filter.Path{"userName"}},
		filter.Attribute{Name: "emails", Store: filter.Path{"emails"}, MultiValued: true},
		filter.Attribute{Name: "emails.type", Store: filter.Path{"type"}},
		filter.Attribute{Name: "emails.value", Store: filter.Path{"value"}},
	)
	e, _ := filter.ParseSCIM(`UserName eq "BJensen" or emails[type eq "work" and value ew "@example.com"]`)
	r, _ := users.Resolve(e)
	where, args, _ := filter.SQLColumns(r, filter.Dialect{Engine: filter.SQLite, Body: "profile"},
		map[string]filter.Column{"userName": {Name: "name_key", Folded: true}})
	fmt.Println(where)
	fmt.Println(args)
	fmt.Println(filter.Match(r, map[string]any{"userName": "bjensen"}))
	// Output:
	// ((name_key IS NOT NULL AND name_key = $1) OR EXISTS (SELECT 1 FROM json_each(profile, '$.emails') AS je1 WHERE json_type(profile, '$.emails') = 'array' AND je1.type = 'object' AND ((COALESCE((json_type(je1.value, '$.type') = 'text' AND lower(json_extract(je1.value, '$.type')) = $2), FALSE) AND COALESCE((json_type(je1.value, '$.value') = 'text' AND substr(lower(json_extract(je1.value, '$.value')), $3) = $4), FALSE)))))
	// [bjensen work -12 @example.com]
	// true
}
