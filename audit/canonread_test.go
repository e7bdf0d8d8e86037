package audit

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeCanonicalReadsBackChainLink(t *testing.T) {
	r := Record{
		Seq: 42, Time: time.Date(2026, 11, 24, 15, 4, 5, 123456000, time.UTC), TenantID: "t", TraceID: "tr",
		Source: SourcePlatform, ResourceID: "res", ActorID: "actor <&>", Action: "token.issue", Status: StatusSuccess,
		Meta: map[string]any{"n": json.Number("3"), "s": "x\u2028y", "nested": map[string]any{"a": []any{true, nil}}},
	}
	body, hash, err := ChainLink([]byte("prev"), r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCanonical(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("decoded record differs (-want +got):\n%s", diff)
	}
	if h := ChainHash([]byte("prev"), got); string(h) != string(hash) {
		t.Error("the decoded record hashes differently")
	}
}

func FuzzDecodeCanonical(f *testing.F) {
	body, _, _ := ChainLink(nil, Record{Seq: 1, Time: time.Unix(0, 0), TenantID: "t", Meta: map[string]any{"k": "v"}})
	f.Add(body)
	f.Add([]byte(`{"seq":1,"time":"bad"}`))
	f.Add([]byte(`{"seq":7,"time":"2026-01-02 03:04:05.000006","tenantID":"t","traceID":"","source":"s","resourceid":"r","actorid":"a","action":"x","status":"success","meta":{"n":1e400}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The canonical layout's scanner agrees with encoding/json on
		// every input it takes (encoding/json rewrites invalid UTF-8).
		if fast, fastRest, ok := scanCanonical(b); ok && utf8.Valid(b) {
			slow, slowRest, err := unmarshalCanonical(b)
			if err == nil {
				if d := cmp.Diff(slow, fast); d != "" || string(slowRest.time) != string(fastRest.time) {
					t.Errorf("scanner and encoding/json differ (-json +scanner):\n%s", d)
				}
			}
		}
		r, err := DecodeCanonical(b)
		if err != nil {
			return
		}
		// What decodes re-encodes and decodes to the same record.
		again, err := DecodeCanonical(mustCanonical(t, r))
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if diff := cmp.Diff(r, again); diff != "" {
			t.Errorf("round trip differs:\n%s", diff)
		}
	})
}

func mustCanonical(t *testing.T, r Record) []byte {
	b, err := canonicalRecordJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func BenchmarkDecodeCanonical(b *testing.B) {
	r := Record{
		Seq: 42, Time: time.Date(2026, 11, 24, 15, 4, 5, 123456000, time.UTC), TenantID: "0f8fad5b-d9cb-469f-a165-70867728950e", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		Source: SourcePlatform, ResourceID: "7c9e6679-7425-40de-944b-e07fc1f90ae7", ActorID: "alice", Action: "token.issue", Status: StatusSuccess,
		Meta: map[string]any{"client_id": "c-123", "scope": "audit:export", "n": float64(3)},
	}
	body, _, err := ChainLink(nil, r)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCanonical(body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecodeCanonicalRefusesDataAfterMeta(t *testing.T) {
	body, _, err := ChainLink(nil, Record{Seq: 1, Time: time.Unix(0, 0), TenantID: "t", Meta: map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	bad := append(body[:len(body)-1:len(body)-1], []byte(`}}`)...)
	if _, err := DecodeCanonical(bad); err == nil {
		t.Errorf("DecodeCanonical(%s) succeeded", bad)
	}
	if _, err := DecodeCanonical(body); err != nil {
		t.Errorf("DecodeCanonical(%s): %v", body, err)
	}
}
