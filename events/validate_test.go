package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

var now = time.Date(2025, 2, 3, 4, 5, 6, 789123456, time.UTC)

const nowText = "2025-02-03T04:05:06.789123Z"

// mustBody decodes a validated body for comparison.
func mustBody(tb testing.TB, b []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("body %s is not a JSON object: %v", b, err)
	}
	return m
}

func mustJSON(tb testing.TB, s string) map[string]any {
	tb.Helper()
	return mustBody(tb, []byte(s))
}

// TestValidateExternalRejects checks each posting rule: every case must be
// rejected with the given pointers, and would be accepted without the rule.
func TestValidateExternalRejects(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // pointers of the errors
		contains string   // a word the first message must contain
	}{
		{"not JSON", `{"event_type_id":`, []string{""}, "JSON"},
		{"array", `[{"event_type_id":"10001"}]`, []string{""}, "object"},
		{"string", `"10001"`, []string{""}, "object"},
		{"null", `null`, []string{""}, "object"},
		{"missing id", `{"username":"a"}`, []string{"/event_type_id"}, "required"},
		{"null id", `{"event_type_id":null}`, []string{"/event_type_id"}, "required"},
		{"boolean id", `{"event_type_id":true}`, []string{"/event_type_id"}, "digits"},
		{"letters in id", `{"event_type_id":"10a01"}`, []string{"/event_type_id"}, "digits"},
		{"negative id", `{"event_type_id":-10001}`, []string{"/event_type_id"}, "integer"},
		{"fractional id", `{"event_type_id":10001.5}`, []string{"/event_type_id"}, "integer"},
		{"exponent id", `{"event_type_id":1e5}`, []string{"/event_type_id"}, "integer"},
		{"empty id", `{"event_type_id":""}`, []string{"/event_type_id"}, "digits"},
		{"leading zeros", `{"event_type_id":"010001"}`, []string{"/event_type_id"}, "leading zeros"},
		{"too many digits", `{"event_type_id":"1234567890123456789"}`, []string{"/event_type_id"}, "digits"},
		{"native id string", `{"event_type_id":"507"}`, []string{"/event_type_id"}, "10000"},
		{"native id number", `{"event_type_id":101}`, []string{"/event_type_id"}, "10000"},
		{"just below external", `{"event_type_id":"9999"}`, []string{"/event_type_id"}, "10000"},
		{"meta-schema id", `{"event_type_id":"000"}`, []string{"/event_type_id"}, "10000"},
		{"native category", `{"event_type_id":"10001","event_type_details":{"category":"AUTHENTICATION"}}`,
			[]string{"/event_type_details/category"}, "reserved"},
		{"native category any case and space", `{"event_type_id":"10001","event_type_details":{"category":" consent_management "}}`,
			[]string{"/event_type_details/category"}, "reserved"},
		{"every native category is reserved", `{"event_type_id":"10001","event_type_details":{"category":"Access"}}`,
			[]string{"/event_type_details/category"}, "reserved"},
		{"category not a string", `{"event_type_id":"10001","event_type_details":{"category":5}}`,
			[]string{"/event_type_details/category"}, "string"},
		{"known object wrong type", `{"event_type_id":"10001","end_user":"u1"}`, []string{"/end_user"}, "object"},
		{"known string wrong type", `{"event_type_id":"10001","end_user":{"id":7}}`, []string{"/end_user/id"}, "string"},
		{"count not integer", `{"event_type_id":"10001","count":1.5}`, []string{"/count"}, "integer"},
		{"count negative", `{"event_type_id":"10001","count":-1}`, []string{"/count"}, ""},
		{"bad timestamp", `{"event_type_id":"10001","timestamp":"2024-13-01T00:00:00Z"}`, []string{"/timestamp"}, "date-time"},
		{"timestamp without zone", `{"event_type_id":"10001","timestamp":"2024-01-01T00:00:00"}`, []string{"/timestamp"}, "date-time"},
		{"bad nested date-time", `{"event_type_id":"10001","block":{"date_removed":"tomorrow"}}`, []string{"/block/date_removed"}, "date-time"},
		{"bad session expiry", `{"event_type_id":"10001","application_session":{"session_expiry":"2024-01-01"}}`,
			[]string{"/application_session/session_expiry"}, "date-time"},
		{"amr_list item type", `{"event_type_id":"10001","authentication":{"amr_list":["pwd",1]}}`,
			[]string{"/authentication/amr_list/1"}, "string"},
		{"scopes not array", `{"event_type_id":"10001","application_session":{"scopes":"openid"}}`,
			[]string{"/application_session/scopes"}, "array"},
		{"string too long", `{"event_type_id":"10001","username":"` + strings.Repeat("x", 1025) + `"}`, []string{"/username"}, "1024"},
		{"deep description wrong type", `{"event_type_id":"10001","processing_purpose":{"description":{"locale":1}}}`,
			[]string{"/processing_purpose/description/locale"}, "string"},
		{"several errors reported together", `{"event_type_id":"10001","count":"x","username":1}`,
			[]string{"/count", "/username"}, ""},
		{"too deep", `{"event_type_id":"10001","x":` + strings.Repeat("[", events.MaxDepth) + strings.Repeat("]", events.MaxDepth) + `}`,
			[]string{""}, "deep"},
		{"too large", `{"event_type_id":"10001","x":"` + strings.Repeat("a", events.MaxEventBytes) + `"}`, []string{""}, "bytes"},
		{"invalid UTF-8", "{\"event_type_id\":\"10001\",\"username\":\"\xff\"}", []string{""}, "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, errs := events.ValidateExternal(json.RawMessage(tt.in), now)
			var got []string
			for _, e := range errs {
				got = append(got, e.Pointer)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("error pointers (-want +got):\n%s\nerrors: %v", diff, errs)
			}
			if !strings.Contains(errs[0].Message, tt.contains) {
				t.Errorf("message %q does not contain %q", errs[0].Message, tt.contains)
			}
			if diff := cmp.Diff(events.Event{}, ev); diff != "" {
				t.Errorf("rejected event is not zero (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateExternalAccepts(t *testing.T) {
	tests := []struct {
		name, in, want string
		users          []string
		time           string
	}{
		{"minimal", `{"event_type_id":"10000"}`,
			`{"event_type_id":"10000","timestamp":"` + nowText + `"}`, nil, nowText},
		{"number id is normalised", `{"event_type_id":10001}`,
			`{"event_type_id":"10001","timestamp":"` + nowText + `"}`, nil, nowText},
		{"large id", `{"event_type_id":"123456789012345678"}`,
			`{"event_type_id":"123456789012345678","timestamp":"` + nowText + `"}`, nil, nowText},
		{"unknown top-level attributes dropped", `{"event_type_id":"10001","foo":1,"bar":{"x":[1,2]},"Username":"case matters"}`,
			`{"event_type_id":"10001","timestamp":"` + nowText + `"}`, nil, nowText},
		{"unknown nested attributes dropped", `{"event_type_id":"10001","end_user":{"id":"u1","role":"x"},"processing_purpose":{"description":{"locale":"en","extra":{}}}}`,
			`{"event_type_id":"10001","end_user":{"id":"u1"},"processing_purpose":{"description":{"locale":"en"}},"timestamp":"` + nowText + `"}`, []string{"u1"}, nowText},
		{"unknown attribute of wrong type never rejects", `{"event_type_id":"10001","phone":123,"device":{"os":"x","ram":{"gb":[true]}}}`,
			`{"event_type_id":"10001","device":{"os":"x"},"timestamp":"` + nowText + `"}`, nil, nowText},
		{"custom category", `{"event_type_id":"10001","event_type_details":{"category":"AUTHENTICATION_PARTNER","name":"n"}}`,
			`{"event_type_id":"10001","event_type_details":{"category":"AUTHENTICATION_PARTNER","name":"n"},"timestamp":"` + nowText + `"}`, nil, nowText},
		{"timestamp normalised to UTC microseconds", `{"event_type_id":"10001","timestamp":"2024-01-01t01:00:00.1234567+01:00"}`,
			`{"event_type_id":"10001","timestamp":"2024-01-01T00:00:00.123456Z"}`, nil, "2024-01-01T00:00:00.123456Z"},
		{"lower-case z", `{"event_type_id":"10001","block":{"date_added":"2024-01-01T00:00:00z"}}`,
			`{"event_type_id":"10001","block":{"date_added":"2024-01-01T00:00:00.000000Z"},"timestamp":"` + nowText + `"}`, nil, nowText},
		{"user ids deduplicated", `{"event_type_id":"10001","end_user":{"id":"u1"},"authenticated_user":{"id":"u1"}}`,
			`{"event_type_id":"10001","end_user":{"id":"u1"},"authenticated_user":{"id":"u1"},"timestamp":"` + nowText + `"}`, []string{"u1"}, nowText},
		{"both user ids, end user first", `{"event_type_id":"10001","authenticated_user":{"id":"a"},"end_user":{"id":"e"}}`,
			`{"event_type_id":"10001","end_user":{"id":"e"},"authenticated_user":{"id":"a"},"timestamp":"` + nowText + `"}`, []string{"e", "a"}, nowText},
		{"empty user id ignored", `{"event_type_id":"10001","end_user":{"id":""}}`,
			`{"event_type_id":"10001","end_user":{"id":""},"timestamp":"` + nowText + `"}`, nil, nowText},
		{"deepest allowed nesting", `{"event_type_id":"10001","x":` + strings.Repeat("[", events.MaxDepth-1) + strings.Repeat("]", events.MaxDepth-1) + `}`,
			`{"event_type_id":"10001","timestamp":"` + nowText + `"}`, nil, nowText},
		{"brackets inside strings do not count", `{"event_type_id":"10001","username":"` + strings.Repeat("[{", 40) + `\"\\"}`,
			`{"event_type_id":"10001","username":"` + strings.Repeat("[{", 40) + `\"\\","timestamp":"` + nowText + `"}`, nil, nowText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, errs := events.ValidateExternal(json.RawMessage(tt.in), now)
			if len(errs) > 0 {
				t.Fatalf("rejected: %v", errs)
			}
			if diff := cmp.Diff(mustJSON(t, tt.want), mustBody(t, ev.Body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			wantTime, _ := time.Parse(time.RFC3339Nano, tt.time)
			want := events.Event{
				TypeID: mustBody(t, ev.Body)["event_type_id"].(string), UserIDs: tt.users,
				Time: wantTime, ReceivedAt: now.Truncate(time.Microsecond), Body: ev.Body,
			}
			if diff := cmp.Diff(want, ev); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateExternalGolden runs an event holding every meta-schema field,
// plus unknown ones, through validation and compares the normalised body.
func TestValidateExternalGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "full_event.json"))
	if err != nil {
		t.Fatal(err)
	}
	ev, errs := events.ValidateExternal(in, now)
	if len(errs) > 0 {
		t.Fatalf("rejected: %v", errs)
	}
	var got bytes.Buffer
	if err := json.Indent(&got, ev.Body, "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteByte('\n')
	golden := filepath.Join("testdata", "full_event.golden.json")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	// Every top-level field of the meta-schema is exercised by the input.
	body := mustBody(t, ev.Body)
	for _, f := range events.SchemaFields() {
		if _, ok := body[f]; !ok {
			t.Errorf("full_event.json lacks meta-schema field %q", f)
		}
	}
	if diff := cmp.Diff([]string{"u-1", "admin-7"}, ev.UserIDs); diff != "" {
		t.Errorf("UserIDs (-want +got):\n%s", diff)
	}
}

func TestValidateNative(t *testing.T) {
	tests := []struct {
		name, in string
		want     string   // body; empty when rejected
		errs     []string // pointers when rejected
	}{
		{"subset kept, details from catalogue",
			`{"event_type_id":"507","end_user":{"id":"u"},"sms_template":{"body":"b","x":1},"phone_number":"+1","username":"not used by 507","event_type_details":{"category":"X","name":"Y"},"timestamp":"2024-01-01T00:00:00Z"}`,
			`{"event_type_id":"507","end_user":{"id":"u"},"sms_template":{"body":"b"},"phone_number":"+1","event_type_details":{"category":"COMMUNICATION","name":"OTP SMS sent"},"timestamp":"2024-01-01T00:00:00.000000Z"}`, nil},
		{"number id padded", `{"event_type_id":101}`,
			`{"event_type_id":"101","event_type_details":{"category":"AUTHENTICATION","name":"Login succeeded"},"timestamp":"` + nowText + `"}`, nil},
		{"field outside the subset is not validated", `{"event_type_id":"401","count":"x"}`,
			`{"event_type_id":"401","event_type_details":{"category":"LIFECYCLE","name":"User created"},"timestamp":"` + nowText + `"}`, nil},
		{"field of the subset is validated", `{"event_type_id":"102","count":"x"}`, "", []string{"/count"}},
		{"unknown native type", `{"event_type_id":"199"}`, "", []string{"/event_type_id"}},
		{"meta-schema type", `{"event_type_id":"000"}`, "", []string{"/event_type_id"}},
		{"external id", `{"event_type_id":"10001"}`, "", []string{"/event_type_id"}},
		{"two digits", `{"event_type_id":"10"}`, "", []string{"/event_type_id"}},
		{"missing id", `{}`, "", []string{"/event_type_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, errs := events.ValidateNative(json.RawMessage(tt.in), now)
			var got []string
			for _, e := range errs {
				got = append(got, e.Pointer)
			}
			if diff := cmp.Diff(tt.errs, got); diff != "" {
				t.Fatalf("errors (-want +got):\n%s\n%v", diff, errs)
			}
			if tt.want == "" {
				return
			}
			if diff := cmp.Diff(mustJSON(t, tt.want), mustBody(t, ev.Body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFieldErrorsErr(t *testing.T) {
	if err := events.FieldErrors(nil).Err(); err != nil {
		t.Fatalf("Err of no errors = %v, want nil", err)
	}
	_, errs := events.ValidateExternal(json.RawMessage(`{"event_type_id":"1"}`), now)
	err := events.FieldErrors(errs).Err()
	if !fault.Is(fault.Invalid, err) {
		t.Errorf("kind = %v, want invalid", fault.KindOf(err))
	}
	if got := fault.FieldOf(err); got != "/event_type_id" {
		t.Errorf("field = %q", got)
	}
	var fe events.FieldErrors
	if !errors.As(err, &fe) || len(fe) != 1 {
		t.Errorf("errors.As did not find the list: %v", err)
	}
}
