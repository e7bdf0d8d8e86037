package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// DecodeCanonical reads back a record from the canonical JSON ChainLink
// returned (a store's stored form of it): every field but PrevHash and
// Hash, which the store keeps beside it. Numbers in meta decode as
// json.Number, as in UnmarshalJSON: they keep the digits that were hashed,
// so ChainHash of the decoded record is the stored hash.
func DecodeCanonical(b []byte) (Record, error) {
	type plain Record
	var aux struct {
		Seq  int64  `json:"seq"`
		Time string `json:"time"`
		plain
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&aux); err != nil {
		return Record{}, fmt.Errorf("audit: stored record: %w", err)
	}
	t, err := time.ParseInLocation(chainTimeFormat, aux.Time, time.UTC)
	if err != nil {
		return Record{}, fmt.Errorf("audit: stored record time: %w", err)
	}
	r := Record(aux.plain)
	r.Seq, r.Time = aux.Seq, t
	return r, nil
}
