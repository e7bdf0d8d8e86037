package events_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/events"
)

// FuzzValidateExternal checks that validation never panics, that a rejected
// event comes back empty with reasons, and that an accepted event is a JSON
// object with a postable event_type_id that validates again to itself.
func FuzzValidateExternal(f *testing.F) {
	full, err := os.ReadFile(filepath.Join("testdata", "full_event.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	for _, s := range []string{`{"event_type_id":"10001"}`, `{"event_type_id":507}`, `[]`, `{"event_type_id":"10001","x":[[[]]]}`,
		`{"event_type_id":"10001","event_type_details":{"category":"PROFILE"}}`, `{"event_type_id":"10001","timestamp":"2024-02-30T00:00:00Z"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, errs := events.ValidateExternal(raw, now)
		if len(errs) > 0 {
			if diff := cmp.Diff(events.Event{}, ev); diff != "" {
				t.Fatalf("rejected event not zero:\n%s", diff)
			}
			return
		}
		var body map[string]any
		if err := json.Unmarshal(ev.Body, &body); err != nil || body == nil {
			t.Fatalf("body %s is not a JSON object: %v", ev.Body, err)
		}
		id, _ := body["event_type_id"].(string)
		if n, err := strconv.ParseInt(id, 10, 64); err != nil || n < events.MinExternalTypeID || id != ev.TypeID {
			t.Fatalf("event_type_id %q (TypeID %q) accepted", id, ev.TypeID)
		}
		again, errs := events.ValidateExternal(ev.Body, now)
		if len(errs) > 0 {
			t.Fatalf("validated body %s rejected: %v", ev.Body, errs)
		}
		if diff := cmp.Diff(ev, again); diff != "" {
			t.Fatalf("validation is not idempotent (-first +second):\n%s", diff)
		}
	})
}
