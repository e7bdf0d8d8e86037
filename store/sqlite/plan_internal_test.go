package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/events/filter"
)

// TestUserQueryWalksTheUsersRows checks the plan of a query for one user's
// events with a type filter: it must walk the user's event_users rows, not
// the type index of the whole log, whose cost grows with the log even when
// the user has no event of that type (the R9 load harness saw such
// queries take hundreds of milliseconds on a log of a few thousand events).
func TestUserQueryWalksTheUsersRows(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, t.TempDir()+"/plan.db", Options{Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := filter.Parse(`event_type_id eq "10003" and count gt 5`)
	if err != nil {
		t.Fatal(err)
	}
	from, where, args, err := eventWhere("tenant", events.Query{UserID: "user-7", Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := st.r.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT e.seq FROM `+from+` WHERE `+where+` ORDER BY u.seq DESC LIMIT 20`, args...)
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
