package audit_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
)

// TestChainHashCoversSeq checks that renumbering a record changes its hash:
// the sequence is part of the chain so a gap cannot be closed by renumbering.
func TestChainHashCoversSeq(t *testing.T) {
	a := audit.Record{Seq: 1, Action: "x", Time: time.Unix(0, 0)}
	b := a
	b.Seq = 2
	if bytes.Equal(audit.ChainHash(nil, a), audit.ChainHash(nil, b)) {
		t.Fatal("records differing only in Seq have the same chain hash")
	}
}

// TestChainHashRoundTrip checks the property the archive verifier relies on:
// a record encoded with MarshalJSON and decoded back (with UseNumber) hashes
// to the same value as the original, whatever its meta holds.
func TestChainHashRoundTrip(t *testing.T) {
	type detail struct {
		Zeta  string `json:"zeta"`
		Alpha int    `json:"alpha"`
	}
	base := audit.Record{
		Seq: 7, Time: time.Date(2024, 3, 1, 10, 11, 12, 123456789, time.FixedZone("x", 3600)),
		TenantID: "t", TraceID: "tr", Source: audit.SourcePlatform, ResourceID: "r",
		ActorID: "a", Action: "token.issue", Status: audit.StatusSuccess,
	}
	tests := []struct {
		name string
		edit func(*audit.Record)
	}{
		{"nil meta", func(r *audit.Record) {}},
		{"empty meta", func(r *audit.Record) { r.Meta = map[string]any{} }},
		{"plain meta", func(r *audit.Record) {
			r.Meta = map[string]any{"n": 1 << 60, "f": 0.1, "s": "<&>", "l": []any{true, nil}}
		}},
		{"struct meta", func(r *audit.Record) { r.Meta = map[string]any{"d": detail{"z", 1}, "b": []byte("hi")} }},
		{"time in meta", func(r *audit.Record) { r.Meta = map[string]any{"at": time.Unix(5, 6)} }},
		{"invalid utf8", func(r *audit.Record) {
			r.Action = "bad\xff\xfeend"
			r.Meta = map[string]any{"k\xff": "v\xc3"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := base
			tc.edit(&rec)
			want := audit.ChainHash([]byte("prev"), rec)
			b, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			var back audit.Record
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			back.Seq = rec.Seq
			if got := audit.ChainHash([]byte("prev"), back); !bytes.Equal(got, want) {
				t.Errorf("hash after round trip differs\nencoded: %s", b)
			}
		})
	}
}
