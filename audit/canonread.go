package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// DecodeCanonical reads back a record from the canonical JSON ChainLink
// returned (a store's stored form of it): every field but PrevHash and
// Hash, which the store keeps beside it. Numbers in meta decode as
// json.Number, as in UnmarshalJSON: they keep the digits that were hashed,
// so ChainHash of the decoded record is the stored hash.
//
// Exports decode every record they write, so the fields before meta are
// read by a scanner of the canonical layout (keys in ChainLink's order,
// strings without escapes); any other valid JSON of a record, such as the
// rows migrated from older schemas, takes encoding/json's way.
func DecodeCanonical(b []byte) (Record, error) { return decodeCanonical(b, true) }

// DecodeLegacyCanonical is DecodeCanonical for a record whose hash was
// computed over meta as encoding/json decodes it (numbers as float64),
// as every store did before keeping the canonical JSON itself: a record
// migrated from such a store keeps meta's stored digits, which may not be
// the float64's (an integer above 2^53, "1.50"), so its numbers must be
// decoded into float64s again for its hash to match.
func DecodeLegacyCanonical(b []byte) (Record, error) { return decodeCanonical(b, false) }

func decodeCanonical(b []byte, useNumber bool) (Record, error) {
	r, meta, ok := scanCanonical(b)
	if !ok {
		var err error
		if r, meta, err = unmarshalCanonical(b); err != nil {
			return Record{}, fmt.Errorf("audit: stored record: %w", err)
		}
	}
	t, err := time.ParseInLocation(chainTimeFormat, string(meta.time), time.UTC)
	if err != nil {
		return Record{}, fmt.Errorf("audit: stored record time: %w", err)
	}
	r.Time = t
	if err := decodeMeta(meta.raw, &r.Meta, useNumber); err != nil {
		return Record{}, fmt.Errorf("audit: stored record meta: %w", err)
	}
	return r, nil
}

// canonicalRest is what DecodeCanonical's two readers leave undecoded.
type canonicalRest struct {
	time []byte
	raw  json.RawMessage // meta
}

// unmarshalCanonical reads any JSON object with a record's canonical keys.
// Meta is shadowed by a raw field (encoding/json prefers the shallower
// one), so that decodeMeta decodes it with json.Number numbers.
func unmarshalCanonical(b []byte) (Record, canonicalRest, error) {
	type plain Record
	var aux struct {
		Seq  int64           `json:"seq"`
		Time string          `json:"time"`
		Meta json.RawMessage `json:"meta"`
		plain
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return Record{}, canonicalRest{}, err
	}
	r := Record(aux.plain)
	r.Seq = aux.Seq
	return r, canonicalRest{[]byte(aux.Time), aux.Meta}, nil
}

// scanCanonical reads b as ChainLink lays it out, with no escape in the
// strings before meta; ok is false for anything else. Meta is left raw
// (the rest of the object) for decodeMeta, which checks it is one value.
func scanCanonical(b []byte) (r Record, rest canonicalRest, ok bool) {
	s := canonScanner{b: b}
	if !s.lit(`{"seq":`) {
		return r, rest, false
	}
	end := bytes.IndexByte(s.b, ',')
	if end < 0 {
		return r, rest, false
	}
	seq, err := strconv.ParseInt(string(s.b[:end]), 10, 64)
	if err != nil {
		return r, rest, false
	}
	r.Seq, s.b = seq, s.b[end:]
	rest.time = s.str(`,"time":`)
	for _, f := range []struct {
		key string
		v   *string
	}{
		{`,"tenantID":`, &r.TenantID}, {`,"traceID":`, &r.TraceID}, {`,"source":`, &r.Source},
		{`,"resourceid":`, &r.ResourceID}, {`,"actorid":`, &r.ActorID}, {`,"action":`, &r.Action}, {`,"status":`, &r.Status},
	} {
		*f.v = string(s.str(f.key))
	}
	if !s.lit(`,"meta":`) || len(s.b) < 2 || s.b[len(s.b)-1] != '}' {
		return r, rest, false
	}
	rest.raw = s.b[:len(s.b)-1]
	return r, rest, !s.failed
}

// canonScanner consumes a canonical record from the front; after a
// mismatch every call fails.
type canonScanner struct {
	b      []byte
	failed bool
}

// lit consumes the literal l.
func (s *canonScanner) lit(l string) bool {
	if s.failed || !bytes.HasPrefix(s.b, []byte(l)) {
		s.failed = true
		return false
	}
	s.b = s.b[len(l):]
	return true
}

// str consumes key and a JSON string with no escape and no control
// character, and returns its contents.
func (s *canonScanner) str(key string) []byte {
	if !s.lit(key) || len(s.b) == 0 || s.b[0] != '"' {
		s.failed = true
		return nil
	}
	for i := 1; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			v := s.b[1:i]
			s.b = s.b[i+1:]
			return v
		case c == '\\' || c < 0x20:
			s.failed = true
			return nil
		}
	}
	s.failed = true
	return nil
}

// decodeMeta decodes meta, with numbers as json.Number when useNumber.
// Only meta goes through a json.Decoder (which UseNumber needs): one over
// the whole record cost half as much again as this.
func decodeMeta(raw json.RawMessage, meta *map[string]any, useNumber bool) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if !useNumber {
		return json.Unmarshal(raw, meta)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(meta); err != nil {
		return err
	}
	if dec.InputOffset() != int64(len(bytes.TrimRight(raw, " \t\r\n"))) {
		return fmt.Errorf("data after meta")
	}
	return nil
}
