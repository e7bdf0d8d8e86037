package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
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
func canonicalRecordJSON(r Record) ([]byte, error) {
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
