package audit_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

// fuzzSigner uses a fixed key so that the seed archives in testdata/fuzz
// pass the signature check and the fuzzer reaches the record checks.
func fuzzSigner(tb testing.TB) (*audit.ES256Signer, map[string]crypto.PublicKey) {
	tb.Helper()
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), bytes.Repeat([]byte{0x42}, 32))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := audit.NewES256Signer("fuzz", key)
	if err != nil {
		tb.Fatal(err)
	}
	return s, map[string]crypto.PublicKey{"fuzz": &key.PublicKey}
}

// FuzzParseExportRequest checks that any body either fails with
// fault.Invalid and a zero request, or yields a request that keeps every
// documented invariant.
func FuzzParseExportRequest(f *testing.F) {
	for _, s := range exportRequestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		q, err := audit.ParseExportRequest(body, now)
		if err != nil {
			if !fault.Is(fault.Invalid, err) {
				t.Fatalf("error of kind %v: %v", fault.KindOf(err), err)
			}
			if diff := cmp.Diff(audit.ExportRequest{}, q); diff != "" {
				t.Fatalf("half-filled request on error:\n%s", diff)
			}
			return
		}
		if q.From.After(q.To) || q.To.After(now) || q.From.Location() != time.UTC || q.To.Location() != time.UTC ||
			q.From.Nanosecond()%1000 != 0 || q.To.Nanosecond()%1000 != 0 {
			t.Fatalf("bad range %v .. %v", q.From, q.To)
		}
		if q.Status != "" && q.Status != audit.StatusSuccess && q.Status != audit.StatusFailed {
			t.Fatalf("status %q accepted", q.Status)
		}
		// Accepted requests survive a round trip through the digest's form.
		d := audit.Digest{From: q.From.Format(audit.DigestTimeFormat), To: q.To.Format(audit.DigestTimeFormat)}
		back, err := d.Request()
		if err != nil || !back.From.Equal(q.From) || !back.To.Equal(q.To) {
			t.Fatalf("range does not round-trip: %v %v", back, err)
		}
	})
}

var exportRequestSeeds = []string{
	`{"from":"2024-05-01T00:00:00Z","to":"2024-05-02T00:00:00Z"}`,
	`{"from":"2024-05-01 00:00:00.000000","to":"2024-05-02 00:00:00.999999","source":"latchkey-platform","status":"failed"}`,
	`{"from":"2024-05-01T00:00:00.123456789+14:00","to":"2024-05-01T00:00:00-12:00","resourceId":"r","actorId":"a","action":"x"}`,
	`{"from":"2024-05-02T00:00:00Z","to":"2024-05-01T00:00:00Z"}`,
	`{"from":null,"to":1}`,
	`{"from":"0000-01-01T00:00:00Z","to":"9999-12-31T23:59:59Z"}`,
	`{"status":"ok","source":"nope"}`,
	`[`, ``, `{} {}`,
}

// FuzzVerifyArchive feeds arbitrary bytes as the two downloads to the
// verifier: it must never panic, and must never accept an export with no
// valid signature.
func FuzzVerifyArchive(f *testing.F) {
	s, keys := fuzzSigner(f)
	for _, seed := range verifySeeds(f, s) {
		f.Add(seed.archive, seed.integrity)
	}
	f.Fuzz(func(t *testing.T, archive, integrity []byte) {
		rep, err := export{archive, integrity}.verify(keys)
		if err != nil {
			if rep != (audit.VerifyReport{}) {
				t.Fatalf("report on error: %+v", rep)
			}
			return
		}
		if rep.Digest.KeyID != "fuzz" || rep.Count != rep.Digest.Count {
			t.Fatalf("accepted inconsistent archive: %+v", rep)
		}
	})
}

func verifySeeds(tb testing.TB, s audit.DigestSigner) []export {
	filtered := allTime()
	filtered.Action = "user.create"
	var recs []audit.Record
	for _, r := range makeChain(6) {
		if r.Action == filtered.Action {
			recs = append(recs, r)
		}
	}
	return []export{
		mustExport(tb, testMeta(allTime()), makeChain(4), s),
		mustExport(tb, testMeta(filtered), recs, s),
		mustExport(tb, testMeta(allTime()), nil, s),
	}
}

// TestWriteFuzzSeeds writes the seed corpora under testdata/fuzz when run
// with -update, so the seeds stay in step with the archive format.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite testdata/fuzz")
	}
	s, _ := fuzzSigner(t)
	write := func(target string, seeds [][][]byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, args := range seeds {
			content := "go test fuzz v1\n"
			for _, b := range args {
				content += "[]byte(" + strconv.Quote(string(b)) + ")\n"
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var reqs, exports [][][]byte
	for _, r := range exportRequestSeeds {
		reqs = append(reqs, [][]byte{[]byte(r)})
	}
	for _, x := range verifySeeds(t, s) {
		exports = append(exports, [][]byte{x.archive, x.integrity})
	}
	write("FuzzParseExportRequest", reqs)
	write("FuzzVerifyArchive", exports)
}
