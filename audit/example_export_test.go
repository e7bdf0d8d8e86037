package audit_test

import (
	"archive/zip"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/latchkey/latchkey/audit"
)

// Example shows both sides of an export: the platform streams a tenant's
// records into the archive (the spec's ZIP, holding audit-logs.json alone)
// and its signed integrity file (hash chain and digest, served at the job's
// digestLocation); a downloader verifies the two with the keys from
// /.well-known/jwks.json, then spots a record removed before the export.
func Example() {
	// The platform side. The key is the platform's ES256 JWT signing key.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := audit.NewES256Signer("jwt-2024-05", key)

	tenant := "9b2f6c1e-2a51-4d6e-9f3e-0c1d2e3f4a5b"
	from := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	req := audit.ExportRequest{From: from, To: from.Add(time.Hour)}
	records := func(yield func(audit.Record, error) bool) { // a store's ScanAuditRecords
		var prev []byte
		for seq := int64(1); seq <= 3; seq++ {
			r := audit.Record{Seq: seq, Time: from.Add(time.Duration(seq) * time.Minute), TenantID: tenant,
				Source: audit.SourcePlatform, ActorID: "admin", Action: "user.create", Status: audit.StatusSuccess}
			r.PrevHash, r.Hash = prev, audit.ChainHash(prev, r)
			prev = r.Hash
			if !yield(r, nil) {
				return
			}
		}
	}
	var archive, integrity bytes.Buffer
	sum, err := audit.WriteArchive(&archive, &integrity, audit.ArchiveMeta{JobID: "job-1", TenantID: tenant, Request: req,
		CreatedAt: from.Add(2 * time.Hour)}, iter.Seq2[audit.Record, error](records), signer)
	if err != nil {
		panic(err)
	}
	fmt.Println("wrote", sum.Count, "records, seq", sum.FirstSeq, "to", sum.LastSeq)
	zr, _ := zip.NewReader(bytes.NewReader(archive.Bytes()), int64(archive.Len()))
	fmt.Println("archive entries:", len(zr.File), zr.File[0].Name)

	// The downloader side: keys from the JWKS document, then verify.
	point, _ := key.PublicKey.Bytes() // 0x04 || x || y
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "kid": "jwt-2024-05", "alg": "ES256", "use": "sig",
		"x": base64.RawURLEncoding.EncodeToString(point[1:33]),
		"y": base64.RawURLEncoding.EncodeToString(point[33:]),
	}}})
	keys, err := audit.KeysFromJWKS(jwks)
	if err != nil {
		panic(err)
	}
	rep, err := audit.VerifyArchive(bytes.NewReader(archive.Bytes()), int64(archive.Len()),
		bytes.NewReader(integrity.Bytes()), int64(integrity.Len()), keys)
	fmt.Println("verified:", err == nil, rep.Count, "records in", rep.Runs, "run")

	// The second record is cut out of the log of a second, otherwise identical
	// export (as if removed from the database before the export ran).
	var cut, cutIntegrity bytes.Buffer
	_, _ = audit.WriteArchive(&cut, &cutIntegrity, audit.ArchiveMeta{JobID: "job-2", TenantID: tenant, Request: req},
		func(yield func(audit.Record, error) bool) {
			for r := range records {
				if r.Seq != 2 && !yield(r, nil) {
					return
				}
			}
		}, signer)
	_, err = audit.VerifyArchive(bytes.NewReader(cut.Bytes()), int64(cut.Len()),
		bytes.NewReader(cutIntegrity.Bytes()), int64(cutIntegrity.Len()), keys)
	var ve *audit.VerifyError
	if errors.Is(err, audit.ErrRecordMissing) && errors.As(err, &ve) {
		fmt.Println("missing record: seq", ve.Seq)
	}
	// Output:
	// wrote 3 records, seq 1 to 3
	// archive entries: 1 audit-logs.json
	// verified: true 3 records in 1 run
	// missing record: seq 2
}
