package audit_test

import (
	"bytes"
	"crypto"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/audit"
)

var update = flag.Bool("update", false, "rewrite golden files")

// elements splits a file written by WriteArchive into its array elements.
func elements(tb testing.TB, b []byte) []string {
	tb.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		tb.Fatal(err)
	}
	out := make([]string, len(raw))
	for i, r := range raw {
		out[i] = string(r)
	}
	return out
}

func join(elems []string) []byte {
	if len(elems) == 0 {
		return []byte("[]\n")
	}
	return []byte("[\n" + strings.Join(elems, ",\n") + "\n]\n")
}

// TestWriteArchiveGolden pins the exact bytes of audit-logs.json: the spec's
// field names, the time format and the layout; and that the archive holds
// that file alone, the chain and digest going to the integrity file. Run
// with -update to rewrite.
func TestWriteArchiveGolden(t *testing.T) {
	s, _ := mustSigner(t, "k1")
	tests := []struct {
		name   string
		recs   []audit.Record
		golden string
	}{
		{"small", makeChain(3), "audit-logs.small.json"},
		{"empty", nil, "audit-logs.empty.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := mustExport(t, testMeta(allTime()), tc.recs, s)
			names, files := zipFiles(t, x.archive)
			if diff := cmp.Diff([]string{audit.LogsFile}, names); diff != "" {
				t.Errorf("archive files (-want +got):\n%s", diff)
			}
			inames, _ := zipFiles(t, x.integrity)
			if diff := cmp.Diff([]string{audit.ChainFile, audit.DigestFile}, inames); diff != "" {
				t.Errorf("integrity files (-want +got):\n%s", diff)
			}
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, files[audit.LogsFile], 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(files[audit.LogsFile])); diff != "" {
				t.Errorf("%s (-golden +got):\n%s", audit.LogsFile, diff)
			}
		})
	}
}

// TestWriteArchiveSummary checks the summary and that the digest on disk
// says the same, for unfiltered, filtered and empty exports.
func TestWriteArchiveSummary(t *testing.T) {
	s, keys := mustSigner(t, "k1")
	chain := makeChain(10)
	var actions []audit.Record
	for _, r := range chain {
		if r.Action == "user.create" { // seqs 1, 4, 7, 10
			actions = append(actions, r)
		}
	}
	filtered := allTime()
	filtered.Action = "user.create"
	tests := []struct {
		name      string
		req       audit.ExportRequest
		recs      []audit.Record
		wantCount int64
		wantFirst int64
		wantLast  int64
		wantRuns  int64
	}{
		{"unfiltered", allTime(), chain, 10, 1, 10, 1},
		{"filtered", filtered, actions, 4, 1, 10, 4},
		{"empty", allTime(), nil, 0, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a, i bytes.Buffer
			sum, err := audit.WriteArchive(&a, &i, testMeta(tc.req), seqOf(tc.recs), s)
			if err != nil {
				t.Fatal(err)
			}
			got := [4]int64{sum.Count, sum.FirstSeq, sum.LastSeq, sum.Runs}
			if diff := cmp.Diff([4]int64{tc.wantCount, tc.wantFirst, tc.wantLast, tc.wantRuns}, got); diff != "" {
				t.Errorf("count, first, last, runs (-want +got):\n%s", diff)
			}
			rep, err := export{a.Bytes(), i.Bytes()}.verify(keys)
			if err != nil {
				t.Fatal(err)
			}
			d := rep.Digest
			if diff := cmp.Diff(
				[]any{sum.Count, sum.FirstSeq, sum.LastSeq, sum.FirstHash, sum.LastHash, sum.LogsSHA256, sum.ChainSHA256, "k1", "job-1", testTenant, rep.Runs},
				[]any{d.Count, d.FirstSeq, d.LastSeq, d.FirstHash, d.LastHash, d.LogsSHA256, d.ChainSHA256, d.KeyID, d.JobID, d.TenantID, sum.Runs},
			); diff != "" {
				t.Errorf("digest differs from summary (-summary +digest):\n%s", diff)
			}
			if rep.Filtered != tc.req.Filtered() {
				t.Errorf("Filtered = %v, want %v", rep.Filtered, tc.req.Filtered())
			}
		})
	}
}

// TestWriteArchiveRefuses checks the contract on the records' order,
// tenant and hashes, and that an iterator error is passed on.
func TestWriteArchiveRefuses(t *testing.T) {
	s, _ := mustSigner(t, "k1")
	boom := errors.New("db down")
	chain := makeChain(3)
	other := chain[1]
	other.TenantID = "other"
	noHash := chain[1]
	noHash.Hash = nil
	tests := []struct {
		name    string
		records func(yield func(audit.Record, error) bool)
	}{
		{"out of order", seqOf([]audit.Record{chain[1], chain[0]})},
		{"duplicate", seqOf([]audit.Record{chain[0], chain[0]})},
		{"other tenant", seqOf([]audit.Record{chain[0], other})},
		{"no hash", seqOf([]audit.Record{noHash})},
		{"iterator error", func(yield func(audit.Record, error) bool) {
			if yield(chain[0], nil) {
				yield(audit.Record{}, boom)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a, i bytes.Buffer
			if _, err := audit.WriteArchive(&a, &i, testMeta(allTime()), tc.records, s); err == nil {
				t.Fatal("WriteArchive succeeded")
			} else if tc.name == "iterator error" && !errors.Is(err, boom) {
				t.Errorf("error %v does not wrap the iterator's", err)
			}
		})
	}
}

// verdict is what a test expects of VerifyArchive: the sentinel the error
// wraps and, for record-level failures, the seq it names.
type verdict struct {
	Err string
	Seq int64
}

var sentinels = map[string]error{
	"malformed": audit.ErrMalformed, "unknown key": audit.ErrUnknownKey,
	"bad signature": audit.ErrBadSignature, "checksum": audit.ErrChecksum, "summary": audit.ErrSummary,
	"altered": audit.ErrRecordAltered, "chain broken": audit.ErrChainBroken,
	"missing": audit.ErrRecordMissing, "order": audit.ErrOrder, "out of scope": audit.ErrOutOfScope,
}

func verdictOf(err error) verdict {
	if err == nil {
		return verdict{}
	}
	var v verdict
	for name, s := range sentinels {
		if errors.Is(err, s) {
			v.Err = name
		}
	}
	if v.Err == "" {
		v.Err = "other: " + err.Error()
	}
	var ve *audit.VerifyError
	if errors.As(err, &ve) {
		v.Seq = ve.Seq
	}
	return v
}

// TestVerifyArchive tampers with exports in the two places an attacker can:
// the store before the export (the archive is then validly signed, and only
// the hash chain reveals it) and the downloads after it (the signature and
// checksums reveal it; the chain names the record).
func TestVerifyArchive(t *testing.T) {
	s, keys := mustSigner(t, "k1")
	_, otherKeys := mustSigner(t, "k1") // same kid, different key
	chain := makeChain(8)
	filtered := allTime()
	filtered.Action = "user.create" // seqs 1, 4, 7

	fromStore := func(edit func([]audit.Record) []audit.Record) export {
		recs := edit(append([]audit.Record(nil), chain...))
		return mustExport(t, testMeta(allTime()), recs, s)
	}
	good := mustExport(t, testMeta(allTime()), chain, s)
	editFile := func(name string, edit func([]string) []string) export {
		return rezip(t, good, func(f map[string][]byte) []string {
			f[name] = join(edit(elements(t, f[name])))
			return nil
		})
	}
	editDigest := func(edit func(*audit.Digest)) export {
		return rezip(t, good, func(f map[string][]byte) []string {
			var d audit.Digest
			if err := json.Unmarshal(f[audit.DigestFile], &d); err != nil {
				t.Fatal(err)
			}
			edit(&d)
			f[audit.DigestFile], _ = json.Marshal(d)
			return nil
		})
	}
	remove := func(i int) func([]string) []string {
		return func(e []string) []string { return append(e[:i:i], e[i+1:]...) }
	}
	swap := func(i, j int) func([]string) []string {
		return func(e []string) []string { e[i], e[j] = e[j], e[i]; return e }
	}

	tests := []struct {
		name string
		x    export
		keys map[string]crypto.PublicKey
		want verdict
	}{
		{"intact", good, keys, verdict{}},
		{"intact filtered", mustExport(t, testMeta(filtered), []audit.Record{chain[0], chain[3], chain[6]}, s), keys, verdict{}},
		{"intact empty", mustExport(t, testMeta(allTime()), nil, s), keys, verdict{}},

		// Tampering in the store.
		{"store: record removed", fromStore(func(r []audit.Record) []audit.Record {
			return append(r[:3:3], r[4:]...) // seq 4
		}), keys, verdict{"missing", 4}},
		{"store: meta edited", fromStore(func(r []audit.Record) []audit.Record {
			r[2].Meta = map[string]any{"userId": "someone else"}
			return r
		}), keys, verdict{"altered", 3}},
		{"store: action edited and rehashed", fromStore(func(r []audit.Record) []audit.Record {
			r[2].Action = "nothing.happened"
			r[2].Hash = audit.ChainHash(r[2].PrevHash, r[2])
			return r
		}), keys, verdict{"chain broken", 4}},
		{"store: contents swapped", fromStore(func(r []audit.Record) []audit.Record {
			a, b := r[2], r[3]
			r[2], r[3] = b, a
			r[2].Seq, r[2].PrevHash, r[2].Hash = a.Seq, a.PrevHash, a.Hash
			r[3].Seq, r[3].PrevHash, r[3].Hash = b.Seq, b.PrevHash, b.Hash
			return r
		}), keys, verdict{"altered", 3}},
		{"store: gap closed by renumbering", fromStore(func(r []audit.Record) []audit.Record {
			r = append(r[:3:3], r[4:]...)
			for i := 3; i < len(r); i++ {
				r[i].Seq--
			}
			return r
		}), keys, verdict{"altered", 4}},
		{"store: other tenant's record", fromStore(func(r []audit.Record) []audit.Record {
			// Written by a buggy scan: same tenant id field but outside the range.
			r[7].Time = t0.Add(-time.Hour)
			r[7].Hash = audit.ChainHash(r[7].PrevHash, r[7])
			return r
		}), keys, verdict{"out of scope", 8}},

		// Tampering with the archive.
		{"archive: record removed from logs", editFile(audit.LogsFile, remove(2)), keys, verdict{"altered", 3}},
		{"archive: record removed from logs and chain", rezip(t, good, func(f map[string][]byte) []string {
			f[audit.LogsFile] = join(remove(2)(elements(t, f[audit.LogsFile])))
			f[audit.ChainFile] = join(remove(2)(elements(t, f[audit.ChainFile])))
			return nil
		}), keys, verdict{"missing", 3}},
		{"archive: last record removed", rezip(t, good, func(f map[string][]byte) []string {
			f[audit.LogsFile] = join(remove(7)(elements(t, f[audit.LogsFile])))
			f[audit.ChainFile] = join(remove(7)(elements(t, f[audit.ChainFile])))
			return nil
		}), keys, verdict{"summary", 0}},
		{"archive: record missing from logs at the end", editFile(audit.LogsFile, remove(7)), keys, verdict{"missing", 8}},
		{"archive: action edited", editFile(audit.LogsFile, func(e []string) []string {
			e[4] = strings.Replace(e[4], `"action":"`, `"action":"x`, 1)
			return e
		}), keys, verdict{"altered", 5}},
		{"archive: meta edited", editFile(audit.LogsFile, func(e []string) []string {
			e[4] = strings.Replace(e[4], `"meta":{`, `"meta":{"extra":1,`, 1)
			return e
		}), keys, verdict{"altered", 5}},
		{"archive: records swapped", editFile(audit.LogsFile, swap(1, 2)), keys, verdict{"altered", 2}},
		{"archive: records and chain swapped", rezip(t, good, func(f map[string][]byte) []string {
			f[audit.LogsFile] = join(swap(1, 2)(elements(t, f[audit.LogsFile])))
			f[audit.ChainFile] = join(swap(1, 2)(elements(t, f[audit.ChainFile])))
			return nil
		}), keys, verdict{"order", 2}},
		{"archive: whitespace added", rezip(t, good, func(f map[string][]byte) []string {
			f[audit.LogsFile] = append(f[audit.LogsFile], ' ')
			return nil
		}), keys, verdict{"checksum", 0}},
		{"archive: signature tampered", editDigest(func(d *audit.Digest) {
			b := []byte(d.Signature)
			b[10] ^= 1
			d.Signature = string(b)
		}), keys, verdict{"bad signature", 0}},
		{"archive: count edited", editDigest(func(d *audit.Digest) { d.Count = 7 }), keys, verdict{"bad signature", 0}},
		{"archive: extra file", rezip(t, good, func(f map[string][]byte) []string {
			f["readme.txt"] = []byte("hi")
			return []string{"readme.txt"}
		}), keys, verdict{"malformed", 0}},
		{"archive: chain moved into it", export{buildZip(t, []string{audit.LogsFile, audit.ChainFile}, good.files(t)), good.integrity}, keys, verdict{"malformed", 0}},
		{"archive: not a zip", export{[]byte("PK\x03\x04 nonsense"), good.integrity}, keys, verdict{"malformed", 0}},
		{"integrity: not a zip", export{good.archive, []byte("PK\x03\x04 nonsense")}, keys, verdict{"malformed", 0}},
		{"integrity: digest missing", export{good.archive, buildZip(t, []string{audit.ChainFile}, good.files(t))}, keys, verdict{"malformed", 0}},
		{"downloads swapped", export{good.integrity, good.archive}, keys, verdict{"malformed", 0}},
		{"integrity of another export", export{good.archive, mustExport(t, testMeta(allTime()), chain[:7], s).integrity}, keys, verdict{"malformed", 7}},
		{"wrong key", good, otherKeys, verdict{"bad signature", 0}},
		{"unknown key", good, map[string]crypto.PublicKey{}, verdict{"unknown key", 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.x.verify(tc.keys)
			if diff := cmp.Diff(tc.want, verdictOf(err)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

// TestSigningInput pins the canonical encoding the signature covers, which
// other languages must reproduce (RFC 8785).
func TestSigningInput(t *testing.T) {
	d := audit.Digest{Version: 1, TenantID: "t", JobID: "j\"\n\u00e9<", From: "f", To: "to",
		Filters: audit.DigestFilters{Action: "a\x01"}, Count: 2, FirstSeq: 3, LastSeq: 4,
		FirstHash: "aa", LastHash: "bb", LogsSHA256: "cc", ChainSHA256: "dd", CreatedAt: "c",
		KeyID: "k", Alg: "ES256", Signature: "ignored"}
	got, err := d.SigningInput()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"alg":"ES256","chainSha256":"dd","count":2,"createdAt":"c",` +
		`"filters":{"action":"a\u0001","actorId":"","resourceId":"","source":"","status":""},` +
		`"firstHash":"aa","firstSeq":3,"from":"f","jobId":"j\"\n` + "\u00e9<" + `","keyId":"k","lastHash":"bb",` +
		`"lastSeq":4,"logsSha256":"cc","tenantID":"t","to":"to","version":1}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("signing input (-want +got):\n%s", diff)
	}
}
