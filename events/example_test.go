package events_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/filter"
)

// An application posts an event; unknown attributes are dropped, the id
// becomes a string and the timestamp is normalised. The stored body can then
// be queried with a SCIM filter.
func ExampleValidateExternal() {
	posted := `{
		"event_type_id": 10001,
		"timestamp": "2024-05-06T09:08:09+02:00",
		"end_user": {"id": "u-1", "segment": "gold", "shoe_size": 44},
		"favourite_colour": "blue"
	}`
	ev, errs := events.ValidateExternal(json.RawMessage(posted), time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	if errs != nil {
		fmt.Println(errs)
		return
	}
	fmt.Println(string(ev.Body))
	fmt.Println(ev.TypeID, ev.UserIDs, ev.Time)

	_, errs = events.ValidateExternal(json.RawMessage(`{"event_type_id":"507"}`), time.Now())
	fmt.Println(errs[0])

	f, _ := filter.Parse(`end_user.segment eq "gold" and timestamp ge "2024-05-06T00:00:00Z"`)
	var doc map[string]any
	_ = json.Unmarshal(ev.Body, &doc)
	fmt.Println(filter.Match(f, doc))
	// Output:
	// {"end_user":{"id":"u-1","segment":"gold"},"event_type_id":"10001","timestamp":"2024-05-06T07:08:09.000000Z"}
	// 10001 [u-1] 2024-05-06 07:08:09 +0000 UTC
	// /event_type_id: event_type_id must be 10000 or more: native event types cannot be posted
	// true
}
