package filter_test

import (
	"encoding/json"
	"testing"

	"github.com/latchkey/latchkey/filter"
)

const matchDoc = `{
	"event_type_id": "10001",
	"timestamp": "2024-05-06T07:08:09.123456Z",
	"username": "Alice",
	"count": 3,
	"ratio": 0.5,
	"flag": true,
	"off": false,
	"nothing": null,
	"empty": "",
	"list": ["a"],
	"none": [],
	"obj": {},
	"end_user": {"id": "u-1", "segment": "gold"},
	"block": {"date_added": "2024-05-01T00:00:00.000000Z"},
	"pct": "100%_done"
}`

func TestMatch(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(matchDoc), &doc); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		filter string
		want   bool
	}{
		{`username eq "Alice"`, true},
		{`username eq "alice"`, false}, // case-exact
		{`username ne "alice"`, true},
		{`missing ne "x"`, true}, // ne is not (eq)
		{`missing eq "x"`, false},
		{`username co "lic"`, true},
		{`username co "LIC"`, false},
		{`username sw "Al"`, true},
		{`username sw "al"`, false},
		{`username ew "ce"`, true},
		{`username ew ""`, true},
		{`count ew "3"`, false},
		{`pct co "%_"`, true},
		{`pct co "x%"`, false},
		{`count eq 3`, true},
		{`count eq "3"`, false},
		{`count gt 2`, true},
		{`count gt 3`, false},
		{`count ge 3`, true},
		{`count lt 3.5`, true},
		{`count le 2`, false},
		{`ratio lt 1`, true},
		{`username gt "Alex"`, true},  // byte order: 'i' > 'e'
		{`username lt "alice"`, true}, // 'A' < 'a'
		{`username gt 1`, false},
		{`count gt "1"`, false},
		{`flag eq true`, true},
		{`flag eq false`, false},
		{`off eq false`, true},
		{`off eq 0`, false},
		{`nothing eq null`, true},
		{`missing eq null`, true},
		{`username eq null`, false},
		{`username ne null`, true},
		{`nothing pr`, false},
		{`missing pr`, false},
		{`empty pr`, false},
		{`none pr`, false},
		{`obj pr`, false},
		{`list pr`, true},
		{`off pr`, true},
		{`count pr`, true},
		{`end_user pr`, true},
		{`end_user.segment eq "gold"`, true},
		{`end_user.segment.x pr`, false},
		{`list eq "a"`, false}, // arrays match nothing but pr
		{`end_user eq "x"`, false},
		// Date-times compare as instants.
		{`timestamp gt "2024-05-06T09:00:00+02:00"`, true},
		{`timestamp lt "2024-05-06T09:00:00+01:00"`, true},
		{`timestamp eq "2024-05-06T09:08:09.123456+02:00"`, true},
		{`timestamp eq "2024-05-06T07:08:09.1234561Z"`, true}, // microsecond precision
		{`timestamp ge "2024-05-06t07:08:09.123456z"`, true},
		{`block.date_added lt "2024-05-01T00:00:00.000001Z"`, true},
		{`block.date_added le "2024-04-30T23:59:59Z"`, false},
		{`timestamp gt "2024"`, true}, // not a date-time: byte order
		// Logic.
		{`username eq "Alice" and count eq 3`, true},
		{`username eq "Alice" and count eq 4`, false},
		{`username eq "Bob" or count eq 3`, true},
		{`not (username eq "Alice")`, false},
		{`username eq "Bob" and count eq 3 or flag eq true`, true},
		{`username eq "Bob" and (count eq 3 or flag eq true)`, false},
		{`not (username eq "Bob") and not (missing pr)`, true},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			e, err := filter.Parse(tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := filter.Match(e, doc); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatchNumberTypes(t *testing.T) {
	e, err := filter.Parse(`n eq 3`)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{3, int64(3), int32(3), uint64(3), float32(3), 3.0, json.Number("3")} {
		if !filter.Match(e, map[string]any{"n": v}) {
			t.Errorf("%T 3 does not match", v)
		}
	}
}
