package audit

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/internal/jsonenc"
)

// canonicalRecordJSON is the byte string ChainHash hashes:
//
//	{"seq":N,"time":"YYYY-MM-DD hh:mm:ss.ffffff",<the spec's fields in Record order>}
//
// (the time without the " UTC" that TimeFormat adds in the export).
//
// It is defined so that a record decoded from an exported audit-logs.json
// (time as text, meta decoded with json.Decoder.UseNumber) encodes to the
// same bytes as the record the store appended. Two things would otherwise
// differ after a round trip through JSON, so both are normalised first:
//
//   - invalid UTF-8 in a string: encoding/json writes one U+FFFD per bad byte,
//     so strings are rewritten that way before encoding;
//   - meta values that are not plain JSON values (structs, typed maps and
//     slices, time.Time, []byte...): struct field order and types are lost on
//     decoding, so such a meta is encoded and decoded back to map[string]any
//     with json.Number numbers. Meta made only of map[string]any, []any,
//     strings, numbers, bools and nil (the common case) is used as is.
//
// The bytes are those json.Marshal writes for
//
//	struct {
//		Seq  int64  `json:"seq"`
//		Time string `json:"time"`
//		Record // without its MarshalJSON
//	}
//
// after that normalisation (HTML characters, U+2028 and U+2029 escaped;
// map keys sorted), as the chain was first defined; they are appended by
// hand because every stored record is hashed, and encoding/json's
// reflection cost more than the rest of the hash (FuzzCanonicalRecordJSON
// holds the two to the same bytes).
func canonicalRecordJSON(r Record) ([]byte, error) {
	meta := r.Meta
	if meta != nil && !plainJSON(meta) {
		m, err := roundTripMeta(meta)
		if err != nil {
			return nil, err
		}
		meta = m
	}
	b := make([]byte, 0, 256+len(r.TenantID)+len(r.TraceID)+len(r.ResourceID)+len(r.ActorID)+len(r.Action)+64*len(meta))
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"time":`...)
	b = appendChainTime(b, r.Time)
	b = append(b, `,"tenantID":`...)
	b = appendCanonString(b, r.TenantID)
	b = append(b, `,"traceID":`...)
	b = appendCanonString(b, r.TraceID)
	b = append(b, `,"source":`...)
	b = appendCanonString(b, r.Source)
	b = append(b, `,"resourceid":`...)
	b = appendCanonString(b, r.ResourceID)
	b = append(b, `,"actorid":`...)
	b = appendCanonString(b, r.ActorID)
	b = append(b, `,"action":`...)
	b = appendCanonString(b, r.Action)
	b = append(b, `,"status":`...)
	b = appendCanonString(b, r.Status)
	b = append(b, `,"meta":`...)
	b, err := appendCanonMap(b, meta)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendChainTime appends t in UTC as a JSON string in chainTimeFormat.
func appendChainTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		// Format's own rules for years without four digits.
		return appendCanonString(b, t.Format(chainTimeFormat))
	}
	hour, min, sec := t.Clock()
	b = append(b, '"')
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, ' ')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, min, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/1000, 6) // Format truncates, so does this
	return append(b, '"')
}

// appendDigits appends the non-negative n as exactly width decimal digits.
func appendDigits(b []byte, n, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		b = append(b, 0)
	}
	for i := len(b) - 1; i >= len(b)-width; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

// appendCanonString appends s as encoding/json writes jsonString(s).
func appendCanonString(b []byte, s string) []byte {
	return jsonenc.AppendString(b, jsonString(s))
}

// jsonString returns s as encoding/json would decode it back after encoding
// it: every byte that is not part of valid UTF-8 becomes U+FFFD.
func jsonString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// appendCanonMap appends m, a plain JSON value (see plainJSON), as
// encoding/json writes it: keys sorted, nil as null.
func appendCanonMap(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCanonString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendCanonValue(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendCanonValue appends v, a plain JSON value (see plainJSON), as
// encoding/json writes it. Floats and json.Number, whose rules (exponent
// forms, validation) are encoding/json's own, are left to it.
func appendCanonValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendCanonString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case map[string]any:
		return appendCanonMap(b, v)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	default:
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return append(b, enc...), nil
	}
}

// plainJSON reports whether v survives an encode/decode round trip (with
// UseNumber) unchanged in its encoding.
func plainJSON(v any) bool {
	switch v := v.(type) {
	case nil, bool, json.Number,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return true
	case string:
		return utf8.ValidString(v)
	case []any:
		for _, e := range v {
			if !plainJSON(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range v {
			if !utf8.ValidString(k) || !plainJSON(e) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

func roundTripMeta(m map[string]any) (map[string]any, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}
