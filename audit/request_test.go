package audit_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

var now = time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)

func TestParseExportRequest(t *testing.T) {
	type failure struct {
		Kind  fault.Kind
		Field string
	}
	tests := []struct {
		name string
		body string
		want audit.ExportRequest
		fail failure
	}{
		{"rfc3339", `{"from":"2024-05-01T00:00:00Z","to":"2024-05-02T00:00:00+02:00"}`,
			audit.ExportRequest{From: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 5, 1, 22, 0, 0, 0, time.UTC)}, failure{}},
		{"spec format", `{"from":"2024-05-01 00:00:00.000001","to":"2024-05-02 10:11:12"}`,
			audit.ExportRequest{From: time.Date(2024, 5, 1, 0, 0, 0, 1000, time.UTC), To: time.Date(2024, 5, 2, 10, 11, 12, 0, time.UTC)}, failure{}},
		{"nanoseconds truncated", `{"from":"2024-05-01T00:00:00.123456789Z","to":"2024-05-01T00:00:00.123456789Z"}`,
			audit.ExportRequest{From: time.Date(2024, 5, 1, 0, 0, 0, 123456000, time.UTC), To: time.Date(2024, 5, 1, 0, 0, 0, 123456000, time.UTC)}, failure{}},
		{"filters", `{"from":"2024-05-01T00:00:00Z","to":"2024-05-01T00:00:00Z","resourceId":"r","source":"latchkey-events","actorId":"a","action":"x","status":"failed","unknown":1}`,
			audit.ExportRequest{From: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
				ResourceID: "r", Source: audit.SourceEvents, ActorID: "a", Action: "x", Status: "failed"}, failure{}},
		{"to clamped to now", `{"from":"2024-05-01T00:00:00Z","to":"2030-01-01T00:00:00Z"}`,
			audit.ExportRequest{From: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), To: now}, failure{}},
		{"long range allowed", `{"from":"2000-01-01T00:00:00Z","to":"2024-01-01T00:00:00Z"}`,
			audit.ExportRequest{From: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, failure{}},
		{"null filters", `{"from":"2024-05-01T00:00:00Z","to":"2024-05-01T00:00:00Z","status":null,"source":""}`,
			audit.ExportRequest{From: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)}, failure{}},

		{"from after to", `{"from":"2024-05-02T00:00:00Z","to":"2024-05-01T00:00:00Z"}`, audit.ExportRequest{}, failure{fault.Invalid, "from"}},
		{"from in future", `{"from":"2030-05-02T00:00:00Z","to":"2031-05-01T00:00:00Z"}`, audit.ExportRequest{}, failure{fault.Invalid, "from"}},
		{"from missing", `{"to":"2024-05-01T00:00:00Z"}`, audit.ExportRequest{}, failure{fault.Invalid, "from"}},
		{"to missing", `{"from":"2024-05-01T00:00:00Z"}`, audit.ExportRequest{}, failure{fault.Invalid, "to"}},
		{"from null", `{"from":null,"to":"2024-05-01T00:00:00Z"}`, audit.ExportRequest{}, failure{fault.Invalid, "from"}},
		{"from number", `{"from":1714521600,"to":"2024-05-01T00:00:00Z"}`, audit.ExportRequest{}, failure{fault.Invalid, "from"}},
		{"to garbage", `{"from":"2024-05-01T00:00:00Z","to":"yesterday"}`, audit.ExportRequest{}, failure{fault.Invalid, "to"}},
		{"bad status", `{"from":"2024-05-01T00:00:00Z","to":"2024-05-01T00:00:00Z","status":"ok"}`, audit.ExportRequest{}, failure{fault.Invalid, "status"}},
		{"unknown source", `{"from":"2024-05-01T00:00:00Z","to":"2024-05-01T00:00:00Z","source":"other"}`, audit.ExportRequest{}, failure{fault.Invalid, "source"}},
		{"resourceId not string", `{"from":"2024-05-01T00:00:00Z","to":"2024-05-01T00:00:00Z","resourceId":3}`, audit.ExportRequest{}, failure{fault.Invalid, ""}},
		{"malformed", `{"from":`, audit.ExportRequest{}, failure{fault.Invalid, ""}},
		{"trailing data", `{} {}`, audit.ExportRequest{}, failure{fault.Invalid, ""}},
		{"not an object", `[]`, audit.ExportRequest{}, failure{fault.Invalid, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := audit.ParseExportRequest([]byte(tc.body), now)
			var gotFail failure
			if err != nil {
				gotFail = failure{fault.KindOf(err), fault.FieldOf(err)}
			}
			if diff := cmp.Diff(tc.fail, gotFail); diff != "" {
				t.Errorf("failure (-want +got):\n%s\nerror: %v", diff, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExportRequestMatches(t *testing.T) {
	rec := audit.Record{Time: time.Date(2024, 5, 1, 10, 0, 0, 500, time.UTC), Source: audit.SourceEvents,
		ResourceID: "r1", ActorID: "a1", Action: "x", Status: audit.StatusFailed}
	at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	base := audit.ExportRequest{From: at, To: at} // inclusive, microsecond precision: 500ns rounds down
	with := func(edit func(*audit.ExportRequest)) audit.ExportRequest { q := base; edit(&q); return q }
	tests := []struct {
		name string
		req  audit.ExportRequest
		want bool
	}{
		{"range inclusive, no filters", base, true},
		{"before range", with(func(q *audit.ExportRequest) { q.From = at.Add(time.Microsecond); q.To = q.From }), false},
		{"after range", with(func(q *audit.ExportRequest) { q.From = at.Add(-time.Second); q.To = at.Add(-time.Microsecond) }), false},
		{"source", with(func(q *audit.ExportRequest) { q.Source = audit.SourceEvents }), true},
		{"other source", with(func(q *audit.ExportRequest) { q.Source = audit.SourcePlatform }), false},
		{"resource", with(func(q *audit.ExportRequest) { q.ResourceID = "r1" }), true},
		{"other resource", with(func(q *audit.ExportRequest) { q.ResourceID = "r2" }), false},
		{"actor, action, status", with(func(q *audit.ExportRequest) { q.ActorID, q.Action, q.Status = "a1", "x", "failed" }), true},
		{"other status", with(func(q *audit.ExportRequest) { q.Status = "success" }), false},
		{"other actor", with(func(q *audit.ExportRequest) { q.ActorID = "a2" }), false},
		{"other action", with(func(q *audit.ExportRequest) { q.Action = "y" }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.req.Matches(rec); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}
