package audit

import (
	"archive/zip"
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/latchkey/latchkey/internal/b64"
)

// Errors of VerifyArchive. Test with errors.Is; a failure tied to one record
// is a *VerifyError (errors.As) naming it and wrapping one of these.
var (
	ErrMalformed      = errors.New("archive malformed")
	ErrUnknownKey     = errors.New("digest signed by an unknown key")
	ErrBadSignature   = errors.New("digest signature invalid")
	ErrChecksum       = errors.New("file does not match the digest's SHA-256")
	ErrSummary        = errors.New("records do not match the digest's count or first/last record")
	ErrRecordAltered  = errors.New("record does not match its chain hash (edited, or records removed or reordered)")
	ErrChainBroken    = errors.New("record does not link to the record before it")
	ErrRecordMissing  = errors.New("record missing")
	ErrOrder          = errors.New("records out of sequence order")
	ErrOutOfScope     = errors.New("record outside the export's tenant, time range or filters")
	errDigestTooLarge = fmt.Errorf("%w: digest larger than 1 MiB", ErrMalformed)
)

// VerifyError reports the first record that failed verification.
type VerifyError struct {
	Seq    int64  // the record's (or the missing record's) sequence number
	Index  int64  // its position in the archive, from 0
	Detail string // what exactly differs
	Err    error  // one of the Err* values
}

// Error names the record, the failed check and the detail.
func (e *VerifyError) Error() string {
	s := "audit: archive record seq " + strconv.FormatInt(e.Seq, 10) +
		" (position " + strconv.FormatInt(e.Index, 10) + "): " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the Err* value.
func (e *VerifyError) Unwrap() error { return e.Err }

// VerifyReport is what a successful verification establishes.
type VerifyReport struct {
	Digest   Digest // the verified, signed digest
	Count    int64  // records checked
	Runs     int64  // runs of consecutive Seq; gaps between runs were filtered out (Filtered) or do not exist
	Filtered bool   // the export had filters besides the time range
}

// ChainEntry is one element of audit-logs.chain.json.
type ChainEntry struct {
	Seq      int64  `json:"seq"`
	PrevHash string `json:"prevHash"` // hex; "" for the tenant's first record
	Hash     string `json:"hash"`     // hex ChainHash(prevHash, record)
}

// maxDigestSize bounds the digest file read into memory.
const maxDigestSize = 1 << 20

// VerifyArchive checks an export, the archive (the download at the job's
// location) and its integrity file (the download at digestLocation),
// against the public keys that may have signed it (kid -> key;
// *ecdsa.PublicKey on P-256, see KeysFromJWKS), streaming the files so that
// memory does not grow with the record count.
//
// It checks, and fails on the first problem found, in this order:
//  1. the archive holds exactly LogsFile, the integrity file exactly
//     ChainFile and DigestFile (ErrMalformed);
//  2. the digest's signature over Digest.SigningInput with keys[keyId]
//     (ErrUnknownKey, ErrBadSignature);
//  3. record by record, with the chain entry at the same position: the
//     record belongs to the digest's tenant, range and filters
//     (ErrOutOfScope); seqs strictly increase (ErrOrder); ChainHash(prevHash,
//     record with seq) equals hash (ErrRecordAltered); when the previous
//     record has seq-1, its hash equals prevHash (ErrChainBroken); when the
//     export is unfiltered, no seq is skipped (ErrRecordMissing); both files
//     have the same number of entries (ErrRecordMissing);
//  4. the count and the first and last seq and hash equal the digest's
//     (ErrSummary), then the SHA-256 of each file (ErrChecksum).
//
// So a record removed from, edited in or moved within the archive's
// audit-logs.json is caught, by its chain entry or by the signed checksum.
// Record-level failures come as *VerifyError naming the record's seq. What
// a success proves, and what it cannot, is set out in EXPORT.md.
func VerifyArchive(archive io.ReaderAt, archiveSize int64, integrity io.ReaderAt, integritySize int64, keys map[string]crypto.PublicKey) (VerifyReport, error) {
	files := map[string]*zip.File{}
	for _, z := range []struct {
		what  string
		r     io.ReaderAt
		size  int64
		names []string
	}{
		{"archive", archive, archiveSize, []string{LogsFile}},
		{"integrity file", integrity, integritySize, []string{ChainFile, DigestFile}},
	} {
		zr, err := zip.NewReader(z.r, z.size)
		if err != nil {
			return VerifyReport{}, fmt.Errorf("audit: %w: %s: %v", ErrMalformed, z.what, err)
		}
		for _, f := range zr.File {
			if !slices.Contains(z.names, f.Name) {
				return VerifyReport{}, fmt.Errorf("audit: %w: unexpected file %q in the %s", ErrMalformed, f.Name, z.what)
			}
			if files[f.Name] != nil {
				return VerifyReport{}, fmt.Errorf("audit: %w: duplicate file %q", ErrMalformed, f.Name)
			}
			files[f.Name] = f
		}
		for _, name := range z.names {
			if files[name] == nil {
				return VerifyReport{}, fmt.Errorf("audit: %w: no %s in the %s", ErrMalformed, name, z.what)
			}
		}
	}

	d, err := readDigest(files[DigestFile])
	if err != nil {
		return VerifyReport{}, err
	}
	if err := checkSignature(d, keys); err != nil {
		return VerifyReport{}, err
	}
	req, err := d.Request()
	if err != nil {
		return VerifyReport{}, err
	}
	rep := VerifyReport{Digest: d, Filtered: d.Filtered()}

	logs, err := openJSONArray(files[LogsFile])
	if err != nil {
		return VerifyReport{}, err
	}
	defer logs.Close()
	chain, err := openJSONArray(files[ChainFile])
	if err != nil {
		return VerifyReport{}, err
	}
	defer chain.Close()

	var (
		firstSeq, prevSeq  int64
		prevHash           []byte
		firstHash, lastHex string
	)
	next, err := chain.nextEntry()
	if err != nil {
		return VerifyReport{}, err
	}
	for i := int64(0); ; i++ {
		cur := next
		hasRec := logs.dec.More()
		if cur == nil && !hasRec {
			break
		}
		if cur == nil {
			return VerifyReport{}, &VerifyError{Seq: prevSeq, Index: i, Err: ErrMalformed,
				Detail: LogsFile + " has more records than " + ChainFile}
		}
		if !hasRec {
			return VerifyReport{}, &VerifyError{Seq: cur.Seq, Index: i, Err: ErrRecordMissing,
				Detail: "in " + ChainFile + " but not in " + LogsFile}
		}
		var rec Record
		if err := logs.dec.Decode(&rec); err != nil {
			return VerifyReport{}, &VerifyError{Seq: cur.Seq, Index: i, Err: ErrMalformed, Detail: err.Error()}
		}
		if next, err = chain.nextEntry(); err != nil {
			return VerifyReport{}, err
		}
		fail := func(e error, detail string) (VerifyReport, error) {
			return VerifyReport{}, &VerifyError{Seq: cur.Seq, Index: i, Err: e, Detail: detail}
		}
		ph, err1 := hex.DecodeString(cur.PrevHash)
		h, err2 := hex.DecodeString(cur.Hash)
		if err1 != nil || err2 != nil || len(h) != sha256.Size || (len(ph) != 0 && len(ph) != sha256.Size) {
			return fail(ErrMalformed, "bad hash in "+ChainFile)
		}
		if i > 0 && cur.Seq <= prevSeq {
			return fail(ErrOrder, "follows seq "+strconv.FormatInt(prevSeq, 10))
		}
		if cur.Seq < 1 {
			return fail(ErrMalformed, "seq below 1")
		}
		rec.Seq = cur.Seq
		if got := ChainHash(ph, rec); !bytes.Equal(got, h) {
			detail := "its content or position was changed"
			if next != nil {
				if nh, err := hex.DecodeString(next.PrevHash); err == nil {
					rec.Seq = next.Seq
					if nx, _ := hex.DecodeString(next.Hash); bytes.Equal(ChainHash(nh, rec), nx) {
						detail = "the record found there is seq " + strconv.FormatInt(next.Seq, 10) +
							": seq " + strconv.FormatInt(cur.Seq, 10) + " was removed, or the two swapped"
					}
				}
			}
			return fail(ErrRecordAltered, detail)
		}
		if i > 0 && cur.Seq == prevSeq+1 && !bytes.Equal(ph, prevHash) {
			return fail(ErrChainBroken, "prevHash is not the hash of seq "+strconv.FormatInt(prevSeq, 10)+
				": a record was altered or replaced in the store")
		}
		if next != nil && next.Seq <= cur.Seq {
			return VerifyReport{}, &VerifyError{Seq: next.Seq, Index: i + 1, Err: ErrOrder,
				Detail: "follows seq " + strconv.FormatInt(cur.Seq, 10)}
		}
		if i > 0 && cur.Seq != prevSeq+1 {
			if !rep.Filtered {
				return VerifyReport{}, &VerifyError{Seq: prevSeq + 1, Index: i, Err: ErrRecordMissing,
					Detail: "seqs " + strconv.FormatInt(prevSeq+1, 10) + " to " + strconv.FormatInt(cur.Seq-1, 10) +
						" are absent from an unfiltered export"}
			}
		}
		if i == 0 || cur.Seq != prevSeq+1 {
			rep.Runs++
		}
		if rec.TenantID != d.TenantID || !req.Matches(rec) {
			return fail(ErrOutOfScope, "")
		}
		if i == 0 {
			firstSeq, firstHash = cur.Seq, cur.Hash
		}
		prevSeq, prevHash, lastHex = cur.Seq, h, cur.Hash
		rep.Count++
	}
	if err := logs.finish(); err != nil {
		return VerifyReport{}, err
	}
	if err := chain.finish(); err != nil {
		return VerifyReport{}, err
	}

	if rep.Count != d.Count || firstSeq != d.FirstSeq || prevSeq != d.LastSeq ||
		firstHash != d.FirstHash || lastHex != d.LastHash {
		return VerifyReport{}, fmt.Errorf("audit: %w: archive has %d records, seq %d (%.8s) to %d (%.8s); digest says %d, seq %d (%.8s) to %d (%.8s)",
			ErrSummary, rep.Count, firstSeq, firstHash, prevSeq, lastHex, d.Count, d.FirstSeq, d.FirstHash, d.LastSeq, d.LastHash)
	}
	if got := logs.sum(); got != d.LogsSHA256 {
		return VerifyReport{}, fmt.Errorf("audit: %w: %s", ErrChecksum, LogsFile)
	}
	if got := chain.sum(); got != d.ChainSHA256 {
		return VerifyReport{}, fmt.Errorf("audit: %w: %s", ErrChecksum, ChainFile)
	}
	return rep, nil
}

// VerifyArchiveFile is VerifyArchive for the two downloaded files: the
// archive (location) and the integrity file (digestLocation).
func VerifyArchiveFile(archivePath, integrityPath string, keys map[string]crypto.PublicKey) (VerifyReport, error) {
	var (
		r    [2]io.ReaderAt
		size [2]int64
	)
	for i, path := range []string{archivePath, integrityPath} {
		f, err := os.Open(path)
		if err != nil {
			return VerifyReport{}, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return VerifyReport{}, err
		}
		r[i], size[i] = f, st.Size()
	}
	return VerifyArchive(r[0], size[0], r[1], size[1], keys)
}

func readDigest(f *zip.File) (Digest, error) {
	rc, err := f.Open()
	if err != nil {
		return Digest{}, fmt.Errorf("audit: %w: %v", ErrMalformed, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxDigestSize+1))
	if err != nil {
		return Digest{}, fmt.Errorf("audit: %w: %s: %v", ErrMalformed, DigestFile, err)
	}
	if len(b) > maxDigestSize {
		return Digest{}, errDigestTooLarge
	}
	var d Digest
	if err := json.Unmarshal(b, &d); err != nil {
		return Digest{}, fmt.Errorf("audit: %w: %s: %v", ErrMalformed, DigestFile, err)
	}
	if d.Version != DigestVersion {
		return Digest{}, fmt.Errorf("audit: %w: digest version %d not supported", ErrMalformed, d.Version)
	}
	return d, nil
}

func checkSignature(d Digest, keys map[string]crypto.PublicKey) error {
	if d.Alg != AlgES256 {
		return fmt.Errorf("audit: %w: algorithm %q not supported", ErrBadSignature, d.Alg)
	}
	key, ok := keys[d.KeyID]
	if !ok || key == nil {
		return fmt.Errorf("audit: %w: %q", ErrUnknownKey, d.KeyID)
	}
	sig, err := b64.URL(d.Signature)
	if err != nil {
		return fmt.Errorf("audit: %w: not base64url", ErrBadSignature)
	}
	input, err := d.SigningInput()
	if err != nil {
		return fmt.Errorf("audit: %w: %v", ErrMalformed, err)
	}
	if err := verifyES256(key, input, sig); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// jsonArray streams the elements of a file holding one JSON array while
// hashing every byte of the file.
type jsonArray struct {
	name string
	rc   io.ReadCloser
	h    hash.Hash
	tee  io.Reader
	dec  *json.Decoder
}

func openJSONArray(f *zip.File) (*jsonArray, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("audit: %w: %s: %v", ErrMalformed, f.Name, err)
	}
	a := &jsonArray{name: f.Name, rc: rc, h: sha256.New()}
	a.tee = io.TeeReader(rc, a.h)
	a.dec = json.NewDecoder(a.tee)
	if tok, err := a.dec.Token(); err != nil || tok != json.Delim('[') {
		rc.Close()
		return nil, fmt.Errorf("audit: %w: %s is not a JSON array", ErrMalformed, f.Name)
	}
	return a, nil
}

// nextEntry returns the next chain entry, or nil at the end of the array.
func (a *jsonArray) nextEntry() (*ChainEntry, error) {
	if !a.dec.More() {
		return nil, nil
	}
	var e ChainEntry
	if err := a.dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("audit: %w: %s: %v", ErrMalformed, a.name, err)
	}
	return &e, nil
}

// finish consumes the closing bracket and hashes the rest of the file, which
// also checks the ZIP entry's CRC-32.
func (a *jsonArray) finish() error {
	if tok, err := a.dec.Token(); err != nil || tok != json.Delim(']') {
		return fmt.Errorf("audit: %w: %s: array not closed", ErrMalformed, a.name)
	}
	if _, err := io.Copy(io.Discard, a.tee); err != nil {
		return fmt.Errorf("audit: %w: %s: %v", ErrMalformed, a.name, err)
	}
	return nil
}

func (a *jsonArray) sum() string  { return hex.EncodeToString(a.h.Sum(nil)) }
func (a *jsonArray) Close() error { return a.rc.Close() }

// KeysFromJWKS returns the ES256 verification keys of a JSON Web Key Set, as
// served at /.well-known/jwks.json, keyed by kid, for VerifyArchive. Keys of
// other types or curves, and keys without a kid, are skipped; a P-256 key
// whose point is invalid is an error.
func KeysFromJWKS(jwks []byte) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty, Crv, Kid, X, Y string
		} `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		return nil, fmt.Errorf("audit: JWKS: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "EC" || k.Crv != "P-256" || k.Kid == "" {
			continue
		}
		x, err1 := base64.RawURLEncoding.DecodeString(k.X)
		y, err2 := base64.RawURLEncoding.DecodeString(k.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return nil, fmt.Errorf("audit: JWKS: key %q: bad coordinates", k.Kid)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("audit: JWKS: key %q: %w", k.Kid, err)
		}
		keys[k.Kid] = pub
	}
	return keys, nil
}
