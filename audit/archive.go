package audit

import (
	"archive/zip"
	"bufio"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Names of the files of an export. The archive (the spec's download, at
// the job's location) holds LogsFile alone; the integrity file (a second
// ZIP, at the job's digestLocation) holds ChainFile and DigestFile.
const (
	LogsFile   = "audit-logs.json"        // the spec's file: a JSON array of records
	ChainFile  = "audit-logs.chain.json"  // [{seq, prevHash, hash}], one per record, same order
	DigestFile = "audit-logs.digest.json" // the signed Digest
)

// DigestVersion is the Digest.Version this package writes and verifies.
const DigestVersion = 1

// DigestTimeFormat is how times are written in a digest: RFC 3339 in UTC
// with exactly six fractional digits, the precision of record times.
const DigestTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// ArchiveMeta describes the export an archive holds; it goes into the digest.
type ArchiveMeta struct {
	JobID     string
	TenantID  string        // every record must belong to this tenant
	Request   ExportRequest // the range and filters the records were selected with
	CreatedAt time.Time     // the digest's createdAt and the files' modification time
}

// Summary describes a written archive; it is also what the digest signs.
type Summary struct {
	Count       int64  `json:"count"`       // records in the archive
	FirstSeq    int64  `json:"firstSeq"`    // Seq of the first record; 0 when empty
	LastSeq     int64  `json:"lastSeq"`     // Seq of the last record; 0 when empty
	FirstHash   string `json:"firstHash"`   // hex chain hash of the first record; "" when empty
	LastHash    string `json:"lastHash"`    // hex chain hash of the last record; "" when empty
	Runs        int64  `json:"runs"`        // runs of consecutive Seq; 1 for an unfiltered export
	LogsSHA256  string `json:"logsSha256"`  // hex SHA-256 of the audit-logs.json bytes
	ChainSHA256 string `json:"chainSha256"` // hex SHA-256 of the audit-logs.chain.json bytes
	KeyID       string `json:"keyId"`       // key that signed the digest
}

// DigestFilters are the filters of the export, "" when not set. All members
// are always present so that the signing input has a fixed shape.
type DigestFilters struct {
	ResourceID string `json:"resourceId"`
	Source     string `json:"source"`
	ActorID    string `json:"actorId"`
	Action     string `json:"action"`
	Status     string `json:"status"`
}

// Digest is the content of audit-logs.digest.json. Hashes are lower-case
// hex, times DigestTimeFormat. Signature is the base64url (no padding)
// encoding of the signature of SigningInput() by the key KeyID with Alg.
type Digest struct {
	Version     int           `json:"version"`
	TenantID    string        `json:"tenantID"`
	JobID       string        `json:"jobId"`
	From        string        `json:"from"`
	To          string        `json:"to"`
	Filters     DigestFilters `json:"filters"`
	Count       int64         `json:"count"`
	FirstSeq    int64         `json:"firstSeq"`
	LastSeq     int64         `json:"lastSeq"`
	FirstHash   string        `json:"firstHash"`
	LastHash    string        `json:"lastHash"`
	LogsSHA256  string        `json:"logsSha256"`
	ChainSHA256 string        `json:"chainSha256"`
	CreatedAt   string        `json:"createdAt"`
	KeyID       string        `json:"keyId"`
	Alg         string        `json:"alg"`
	Signature   string        `json:"signature"`
}

// Filtered reports whether the digest names any filter besides the time range.
func (d Digest) Filtered() bool { return d.Filters != DigestFilters{} }

// Request rebuilds the export request the digest describes.
func (d Digest) Request() (ExportRequest, error) {
	from, err1 := time.Parse(DigestTimeFormat, d.From)
	to, err2 := time.Parse(DigestTimeFormat, d.To)
	if err := errors.Join(err1, err2); err != nil {
		return ExportRequest{}, fmt.Errorf("%w: digest time range: %v", ErrMalformed, err)
	}
	f := d.Filters
	return ExportRequest{From: from.UTC(), To: to.UTC(), ResourceID: f.ResourceID, Source: f.Source,
		ActorID: f.ActorID, Action: f.Action, Status: f.Status}, nil
}

// SigningInput returns the bytes the signature covers: the digest as a JSON
// object without its "signature" member, in the JSON Canonicalization Scheme
// of RFC 8785. For this shape (string and integer members, one nested object
// of strings) that is: members sorted by name (all names are ASCII), no
// whitespace, integers in decimal, strings in UTF-8 with only '"', '\\' and
// the control characters U+0000 to U+001F escaped (\b \t \n \f \r, others as
// \u00xx with lower-case hex). Any JCS library reproduces it. It fails only
// on a string that is not valid UTF-8.
func (d Digest) SigningInput() ([]byte, error) {
	f := d.Filters
	obj := map[string]any{
		"version": int64(d.Version), "tenantID": d.TenantID, "jobId": d.JobID,
		"from": d.From, "to": d.To,
		"filters": map[string]any{"resourceId": f.ResourceID, "source": f.Source,
			"actorId": f.ActorID, "action": f.Action, "status": f.Status},
		"count": d.Count, "firstSeq": d.FirstSeq, "lastSeq": d.LastSeq,
		"firstHash": d.FirstHash, "lastHash": d.LastHash,
		"logsSha256": d.LogsSHA256, "chainSha256": d.ChainSHA256,
		"createdAt": d.CreatedAt, "keyId": d.KeyID, "alg": d.Alg,
	}
	return appendJCS(nil, obj)
}

func appendJCS(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case string:
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("audit: digest string is not valid UTF-8")
		}
		b = append(b, '"')
		for i := 0; i < len(v); i++ {
			c := v[i]
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b':
				b = append(b, `\b`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\f':
				b = append(b, `\f`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c < 0x20:
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			default:
				b = append(b, c)
			}
		}
		return append(b, '"'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // byte order equals RFC 8785's UTF-16 order for ASCII names
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJCS(b, k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendJCS(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	default:
		panic(fmt.Sprintf("audit: appendJCS: unexpected %T", v))
	}
}

// WriteArchive writes an export as two ZIP files, streaming records in the
// order given, and returns its summary:
//   - archive, the spec's download: exactly one Deflate-compressed entry,
//     LogsFile, a JSON array of the records as Record.MarshalJSON writes
//     them, one per line, so a client that extracts the only file gets the
//     records and nothing else;
//   - integrity, the tamper evidence: ChainFile, a JSON array, position for
//     position with LogsFile, of {"seq":N,"prevHash":"hex","hash":"hex"},
//     the record's place in its tenant's hash chain (prevHash "" for the
//     tenant's first record), then DigestFile, the Digest signed by signer,
//     which covers the SHA-256 of LogsFile and of ChainFile.
//
// Records must be of meta.TenantID, in strictly increasing Seq, with Hash
// set (as ScanAuditRecords yields them); otherwise WriteArchive stops with an
// error. It does not recompute hashes: a record altered in the store is
// exported as stored, and the downloader's verification reveals it.
//
// Memory stays flat in the number of records: records are encoded one at a
// time through buffered writers and never collected, and the two files are
// written side by side. On error, whatever was written to archive and
// integrity is not valid and must be discarded; an error yielded by records
// is returned wrapped.
func WriteArchive(archive, integrity io.Writer, meta ArchiveMeta, records iter.Seq2[Record, error], signer DigestSigner) (Summary, error) {
	if signer == nil {
		return Summary{}, errors.New("audit: WriteArchive: nil signer")
	}
	if meta.TenantID == "" {
		return Summary{}, errors.New("audit: WriteArchive: no tenant")
	}
	modified := meta.CreatedAt.UTC()
	// Fastest Deflate: audit JSON compresses well at any level, and the
	// export's cost is dominated by compression otherwise (TARGETS.md P7).
	fastest := func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) }
	zw, iw := zip.NewWriter(archive), zip.NewWriter(integrity)
	zw.RegisterCompressor(zip.Deflate, fastest)
	iw.RegisterCompressor(zip.Deflate, fastest)

	fw, err := zw.CreateHeader(&zip.FileHeader{Name: LogsFile, Method: zip.Deflate, Modified: modified})
	if err != nil {
		return Summary{}, err
	}
	logsHash := sha256.New()
	logs := bufio.NewWriterSize(io.MultiWriter(fw, logsHash), 64<<10)
	cw, err := iw.CreateHeader(&zip.FileHeader{Name: ChainFile, Method: zip.Deflate, Modified: modified})
	if err != nil {
		return Summary{}, err
	}
	chainHash := sha256.New()
	chain := bufio.NewWriterSize(io.MultiWriter(cw, chainHash), 32<<10)

	var sum Summary
	var lastHash []byte
	logs.WriteString("[")
	chain.WriteString("[")
	line := make([]byte, 0, 256)
	for rec, err := range records {
		if err != nil {
			return Summary{}, fmt.Errorf("audit: WriteArchive: reading records: %w", err)
		}
		if rec.TenantID != meta.TenantID {
			return Summary{}, fmt.Errorf("audit: WriteArchive: record %d belongs to another tenant", rec.Seq)
		}
		if rec.Seq <= sum.LastSeq || len(rec.Hash) == 0 {
			return Summary{}, fmt.Errorf("audit: WriteArchive: record %d out of order or without a hash", rec.Seq)
		}
		b, err := rec.MarshalJSON() // not json.Marshal: that would re-scan the output
		if err != nil {
			return Summary{}, fmt.Errorf("audit: WriteArchive: record %d: %w", rec.Seq, err)
		}
		sep := ",\n"
		if sum.Count == 0 {
			sep = "\n"
			sum.FirstSeq, sum.FirstHash = rec.Seq, hex.EncodeToString(rec.Hash)
		}
		if sum.Count == 0 || rec.Seq != sum.LastSeq+1 {
			sum.Runs++
		}
		logs.WriteString(sep)
		logs.Write(b)

		line = append(line[:0], sep...)
		line = append(line, `{"seq":`...)
		line = strconv.AppendInt(line, rec.Seq, 10)
		line = append(line, `,"prevHash":"`...)
		line = hex.AppendEncode(line, rec.PrevHash)
		line = append(line, `","hash":"`...)
		line = hex.AppendEncode(line, rec.Hash)
		line = append(line, `"}`...)
		chain.Write(line)

		sum.Count++
		sum.LastSeq = rec.Seq
		lastHash = rec.Hash
	}
	end := "]\n"
	if sum.Count > 0 {
		end = "\n]\n"
	}
	logs.WriteString(end)
	chain.WriteString(end)
	if err := logs.Flush(); err != nil { // bufio keeps the first write error
		return Summary{}, err
	}
	if err := chain.Flush(); err != nil {
		return Summary{}, err
	}
	if err := zw.Close(); err != nil {
		return Summary{}, err
	}
	sum.LastHash = hex.EncodeToString(lastHash)
	sum.LogsSHA256 = hex.EncodeToString(logsHash.Sum(nil))
	sum.ChainSHA256 = hex.EncodeToString(chainHash.Sum(nil))

	sum.KeyID = signer.KeyID()
	d := newDigest(meta, sum)
	input, err := d.SigningInput()
	if err != nil {
		return Summary{}, err
	}
	sig, err := signer.Sign(input)
	if err != nil {
		return Summary{}, err
	}
	d.Signature = base64.RawURLEncoding.EncodeToString(sig)
	db, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return Summary{}, err
	}
	dw, err := iw.CreateHeader(&zip.FileHeader{Name: DigestFile, Method: zip.Deflate, Modified: modified})
	if err != nil {
		return Summary{}, err
	}
	if _, err := dw.Write(append(db, '\n')); err != nil {
		return Summary{}, err
	}
	if err := iw.Close(); err != nil {
		return Summary{}, err
	}
	return sum, nil
}

func newDigest(meta ArchiveMeta, sum Summary) Digest {
	q := meta.Request
	return Digest{
		Version: DigestVersion, TenantID: meta.TenantID, JobID: meta.JobID,
		From: q.From.UTC().Format(DigestTimeFormat), To: q.To.UTC().Format(DigestTimeFormat),
		Filters: DigestFilters{ResourceID: q.ResourceID, Source: q.Source, ActorID: q.ActorID,
			Action: q.Action, Status: q.Status},
		Count: sum.Count, FirstSeq: sum.FirstSeq, LastSeq: sum.LastSeq,
		FirstHash: sum.FirstHash, LastHash: sum.LastHash,
		LogsSHA256: sum.LogsSHA256, ChainSHA256: sum.ChainSHA256,
		CreatedAt: meta.CreatedAt.UTC().Format(DigestTimeFormat),
		KeyID:     sum.KeyID, Alg: AlgES256,
	}
}
