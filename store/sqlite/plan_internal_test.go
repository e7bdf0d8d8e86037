package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/filter"
)

// TestUserQueryWalksTheUsersRows checks the plan of a query for one user's
// events with a type filter: it must walk the user's event_users rows, not
// the type index of the whole log, whose cost grows with the log even when
// the user has no event of that type (the R9 load harness saw such
// queries take hundreds of milliseconds on a log of a few thousand events).
func TestUserQueryWalksTheUsersRows(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/plan.db"
	st, err := Open(ctx, path, Options{Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := filter.Parse(`event_type_id eq "10003" and count gt 5`)
	if err != nil {
		t.Fatal(err)
	}
	query, args, err := st.EventQuery(t.Context(), "tenant", events.Query{UserID: "user-7", Filter: f, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `EXPLAIN QUERY PLAN `+query, bind(args)...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	text := strings.Join(plan, "\n")
	if strings.Contains(text, "events_by_type") || !strings.Contains(text, "SCAN u") && !strings.Contains(text, "SEARCH u") {
		t.Errorf("plan of a user's query with a type filter:\n%s", text)
	}
}
