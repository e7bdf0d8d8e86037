package audit_test

import (
	"archive/zip"
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"iter"
	"maps"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
)

const testTenant = "9b2f6c1e-2a51-4d6e-9f3e-0c1d2e3f4a5b"

var t0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// mustSigner returns an ES256 signer and the verification key set for it.
func mustSigner(tb testing.TB, kid string) (*audit.ES256Signer, map[string]crypto.PublicKey) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := audit.NewES256Signer(kid, key)
	if err != nil {
		tb.Fatal(err)
	}
	return s, map[string]crypto.PublicKey{kid: &key.PublicKey}
}

// makeRecord is record number seq of a test tenant, without its chain links.
func makeRecord(seq int64) audit.Record {
	status, meta := audit.StatusSuccess, map[string]any{"userId": fmt.Sprintf("u%d", seq%7)}
	if seq%5 == 0 {
		status, meta = audit.StatusFailed, map[string]any{"errorMessage": "denied", "attempt": seq}
	}
	return audit.Record{
		Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second).Add(123456 * time.Microsecond),
		TenantID: testTenant, TraceID: fmt.Sprintf("trace-%d", seq),
		Source: audit.Sources[seq%int64(len(audit.Sources))], ResourceID: fmt.Sprintf("svc-%d", seq%3),
		ActorID: fmt.Sprintf("actor-%d", seq%4), Action: []string{"token.issue", "user.create", "key.delete"}[seq%3],
		Status: status, Meta: meta,
	}
}

// makeChain returns records 1..n linked with ChainHash, as a store holds them.
func makeChain(n int) []audit.Record {
	recs := make([]audit.Record, n)
	var prev []byte
	for i := range recs {
		r := makeRecord(int64(i + 1))
		r.PrevHash = prev
		r.Hash = audit.ChainHash(prev, r)
		prev = r.Hash
		recs[i] = r
	}
	return recs
}

func seqOf(recs []audit.Record) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func allTime() audit.ExportRequest {
	return audit.ExportRequest{From: t0, To: t0.Add(24 * time.Hour)}
}

func testMeta(req audit.ExportRequest) audit.ArchiveMeta {
	return audit.ArchiveMeta{JobID: "job-1", TenantID: testTenant, Request: req, CreatedAt: t0.Add(48 * time.Hour)}
}

// export is the two downloads of an export: the archive (location) and
// the integrity file (digestLocation).
type export struct{ archive, integrity []byte }

func mustExport(tb testing.TB, meta audit.ArchiveMeta, recs []audit.Record, s audit.DigestSigner) export {
	tb.Helper()
	var a, i bytes.Buffer
	if _, err := audit.WriteArchive(&a, &i, meta, seqOf(recs), s); err != nil {
		tb.Fatal(err)
	}
	return export{a.Bytes(), i.Bytes()}
}

func (x export) verify(keys map[string]crypto.PublicKey) (audit.VerifyReport, error) {
	return audit.VerifyArchive(bytes.NewReader(x.archive), int64(len(x.archive)), bytes.NewReader(x.integrity), int64(len(x.integrity)), keys)
}

// zipFiles returns the files of a ZIP by name, and the names in order.
func zipFiles(tb testing.TB, archive []byte) ([]string, map[string][]byte) {
	tb.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			tb.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			tb.Fatal(err)
		}
		names = append(names, f.Name)
		files[f.Name] = b
	}
	return names, files
}

// files returns the files of both downloads by name.
func (x export) files(tb testing.TB) map[string][]byte {
	tb.Helper()
	_, a := zipFiles(tb, x.archive)
	_, i := zipFiles(tb, x.integrity)
	maps.Copy(a, i)
	return a
}

// buildZip writes the named files, in order, into a new ZIP.
func buildZip(tb testing.TB, names []string, files map[string][]byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			tb.Fatal(err)
		}
		w.Write(files[n])
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// rezip rebuilds both downloads after edit changed their files (all of
// them in one map), as an attacker holding them but not the signing key
// could. edit may return extra names, which go into the archive.
func rezip(tb testing.TB, x export, edit func(files map[string][]byte) []string) export {
	tb.Helper()
	files := x.files(tb)
	extra := edit(files)
	return export{
		buildZip(tb, append([]string{audit.LogsFile}, extra...), files),
		buildZip(tb, []string{audit.ChainFile, audit.DigestFile}, files),
	}
}
