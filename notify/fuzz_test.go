package notify_test

import (
	"slices"
	"testing"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/notify"
)

// FuzzParseCreate checks that any create body is either refused with a
// client error or accepted with every rule of the request holding.
func FuzzParseCreate(f *testing.F) {
	for _, s := range []string{
		`{"event_type_ids":["10001","401"],"client_id":"app.1"}`,
		`{"event_type_ids":["10001","10001"],"client_id":"c"}`,
		`{"event_type_ids":[],"client_id":"c"}`,
		`{"event_type_ids":["401"],"client_id":"Zoë","notification_page_size":5}`,
		`{"event_type_ids":null}`, `[]`, `null`, `{"client_id":"a b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := notify.ParseCreate(body)
		if err != nil {
			if k := fault.KindOf(err); k != fault.Invalid && k != fault.TooLarge {
				t.Fatalf("refusal of kind %v: %v", k, err)
			}
			return
		}
		if len(req.EventTypeIDs) == 0 || len(req.EventTypeIDs) > notify.MaxEventTypes {
			t.Fatalf("accepted %d event types", len(req.EventTypeIDs))
		}
		sorted := slices.Clone(req.EventTypeIDs)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(req.EventTypeIDs) {
			t.Fatalf("accepted repeated event types %v", req.EventTypeIDs)
		}
		if !notify.IDPattern.MatchString(req.ClientID) || len(req.ClientID) > notify.MaxIDLength {
			t.Fatalf("accepted client_id %q", req.ClientID)
		}
		if req.PageSize != nil && (*req.PageSize < 1 || *req.PageSize > notify.MaxPageSize) {
			t.Fatalf("accepted page size %d", *req.PageSize)
		}
	})
}

// FuzzParseAck checks that any confirmation body is refused with a client
// error or accepted with a page of 1 or more.
func FuzzParseAck(f *testing.F) {
	for _, s := range []string{`{"page":1}`, `{"page":0}`, `{"page":"1"}`, `{"page":1e3}`, `{"page":null}`, `null`, `[]`, `{"page":9223372036854775807}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		page, err := notify.ParseAck(body)
		if err != nil {
			if k := fault.KindOf(err); k != fault.Invalid && k != fault.TooLarge {
				t.Fatalf("refusal of kind %v: %v", k, err)
			}
			return
		}
		if page < 1 {
			t.Fatalf("accepted page %d", page)
		}
	})
}
