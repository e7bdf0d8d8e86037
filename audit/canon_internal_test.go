package audit

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// canonicalRecordJSONReference is canonicalRecordJSON as the chain was
// first defined, with encoding/json: the hand-written encoder must write
// the same bytes, or the hashes of stored records would no longer verify.
func canonicalRecordJSONReference(r Record) ([]byte, error) {
	type plain Record // no MarshalJSON, so the outer struct is encoded field by field
	for _, s := range []*string{&r.TenantID, &r.TraceID, &r.Source, &r.ResourceID, &r.ActorID, &r.Action, &r.Status} {
		*s = jsonString(*s)
	}
	if r.Meta != nil && !plainJSON(r.Meta) {
		m, err := roundTripMeta(r.Meta)
		if err != nil {
			return nil, err
		}
		r.Meta = m
	}
	return json.Marshal(struct {
		Seq  int64  `json:"seq"`
		Time string `json:"time"`
		plain
	}{r.Seq, r.Time.UTC().Format(chainTimeFormat), plain(r)})
}

type canonStruct struct {
	B string `json:"b"`
	A []byte `json:"a"`
}

type canonString string

func TestCanonicalRecordJSONMatchesReference(t *testing.T) {
	base := Record{
		Seq: 7, Time: time.Date(2026, 11, 24, 15, 4, 5, 123456789, time.UTC), TenantID: "t", TraceID: "0af7651916cd43dd8448eb211c80319c",
		Source: SourcePlatform, ResourceID: "res", ActorID: "actor", Action: "oauth.token", Status: StatusSuccess,
		Meta: map[string]any{"client_id": "c", "scope": "audit:export"},
	}
	cases := map[string]func(*Record){
		"typical":        func(*Record) {},
		"nil meta":       func(r *Record) { r.Meta = nil },
		"empty meta":     func(r *Record) { r.Meta = map[string]any{} },
		"zero record":    func(r *Record) { *r = Record{} },
		"escapes":        func(r *Record) { r.ActorID = "a\"b\\c<d>e&f\u2028g\u2029h\x00\x1f\b\f\n\r\t\x7fé" },
		"invalid utf-8":  func(r *Record) { r.TenantID, r.Action = "a\xffb\xc3", "\xed\xa0\x80" },
		"non-UTC time":   func(r *Record) { r.Time = r.Time.In(time.FixedZone("x", -7*3600)) },
		"year 0":         func(r *Record) { r.Time = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC) },
		"year -1":        func(r *Record) { r.Time = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) },
		"year 10000":     func(r *Record) { r.Time = time.Date(10000, 12, 31, 23, 59, 59, 999999999, time.UTC) },
		"negative seq":   func(r *Record) { r.Seq = math.MinInt64 },
		"many meta keys": func(r *Record) { r.Meta = manyKeys(40) },
		"numbers": func(r *Record) {
			r.Meta = map[string]any{"i": -3, "u": uint64(math.MaxUint64), "i8": int8(-8), "f": 1e21, "g": 1e-7, "h": float32(0.1), "n": json.Number("12.50"), "e": json.Number("")}
		},
		"nested": func(r *Record) {
			r.Meta = map[string]any{"m": map[string]any{"z": []any{nil, true, "x<y", map[string]any(nil)}, "a": []any(nil)}}
		},
		"invalid utf-8 key": func(r *Record) { r.Meta = map[string]any{"\xff": 1, "\xfe": 2, "ok": "\xc3"} },
		"typed values": func(r *Record) {
			r.Meta = map[string]any{"s": []string{"a", "<"}, "st": canonStruct{B: "b", A: []byte("hi")}, "t": time.Unix(1, 2).UTC(), "cs": canonString("x")}
		},
		"NaN":                 func(r *Record) { r.Meta = map[string]any{"nan": math.NaN()} },
		"invalid json.Number": func(r *Record) { r.Meta = map[string]any{"n": json.Number("1x")} },
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			r := base
			r.Meta = map[string]any{"client_id": "c", "scope": "audit:export"}
			mod(&r)
			checkCanonical(t, r)
		})
	}
}

func manyKeys(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[strings.Repeat("k", i%7)+string(rune('a'+i%26))] = i
	}
	return m
}

// checkCanonical fails t unless canonicalRecordJSON and the reference
// agree on r: the same bytes, or both an error.
func checkCanonical(t *testing.T, r Record) {
	t.Helper()
	want, wantErr := canonicalRecordJSONReference(r)
	got, err := canonicalRecordJSON(r)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("error %v, reference error %v", err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("canonical JSON differs from encoding/json's\n got: %q\nwant: %q", got, want)
	}
}

// FuzzCanonicalRecordJSON holds the hand-written canonical encoder to the
// encoding/json one the chain was defined with, on arbitrary strings
// (invalid UTF-8, HTML characters, U+2028, control characters), times
// and meta (decoded JSON, nested, with typed values beside it).
func FuzzCanonicalRecordJSON(f *testing.F) {
	f.Add(int64(1), int64(1764000000), int64(123456789), "tenant", "trace", "actor <&>", "x\u2028y\xff", `{"a":[1,"b",{"c":null}],"d":1.5e300}`, true)
	f.Add(int64(-1), int64(-62200000000), int64(0), "", "\x00\x1f\"\\", "\xed\xa0\x80", "é\u2029", `{}`, false)
	f.Add(int64(0), int64(253402300800), int64(999999999), "t", "\x7f", "a", "b", `null`, true)
	f.Fuzz(func(t *testing.T, seq, sec, nsec int64, tenant, trace, actor, s, metaJSON string, useNumber bool) {
		r := Record{
			Seq: seq, Time: time.Unix(sec, nsec), TenantID: tenant, TraceID: trace, Source: s,
			ResourceID: actor + s, ActorID: actor, Action: s, Status: trace,
		}
		dec := json.NewDecoder(strings.NewReader(metaJSON))
		if useNumber {
			dec.UseNumber()
		}
		var meta map[string]any
		if dec.Decode(&meta) == nil && meta != nil {
			// Beside the decoded values: raw strings (maybe invalid
			// UTF-8) as keys and values, and values that are not plain.
			meta[s] = actor
			meta[actor] = []any{tenant, seq, nil, map[string]any{trace: s}}
			if useNumber {
				meta["typed"] = []string{s, trace}
				meta["float"] = float64(nsec) / 7
			}
		}
		r.Meta = meta
		checkCanonical(t, r)
	})
}

func BenchmarkCanonicalRecordJSON(b *testing.B) {
	r := Record{
		Seq: 123456, Time: time.Date(2026, 11, 24, 15, 4, 5, 123456000, time.UTC), TenantID: "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
		TraceID: "0af7651916cd43dd8448eb211c80319c", Source: SourcePlatform, ResourceID: "3f2504e0-4f89-11d3-9a0c-0305e82c3302",
		ActorID: "3f2504e0-4f89-11d3-9a0c-0305e82c3303", Action: "oauth.token", Status: StatusSuccess,
		Meta: map[string]any{"client_id": "3f2504e0-4f89-11d3-9a0c-0305e82c3303", "scope": "audit:export"},
	}
	for _, bc := range []struct {
		name string
		f    func(Record) ([]byte, error)
	}{{"encoder=hand", canonicalRecordJSON}, {"encoder=encoding-json", canonicalRecordJSONReference}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.f(r)
			}
		})
	}
}

// TestCanonicalRecordJSONKnowsEveryField fails when Record gains or loses
// a JSON field: canonicalRecordJSON writes each by hand (and a new field
// in the canonical form would change every record's hash).
func TestCanonicalRecordJSONKnowsEveryField(t *testing.T) {
	var got []string
	for f := range reflect.TypeFor[Record]().Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "-" {
			got = append(got, name)
		}
	}
	want := []string{"tenantID", "traceID", "source", "resourceid", "actorid", "action", "status", "meta"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the JSON fields of Record changed; update canonicalRecordJSON (-written +declared):\n%s", diff)
	}
}
