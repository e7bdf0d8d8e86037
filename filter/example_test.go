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
