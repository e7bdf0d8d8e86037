package audit

import (
	"encoding/json"
	"fmt"
	"time"
)

// DecodeCanonical reads back a record from the canonical JSON ChainLink
// returned (a store's stored form of it): every field but PrevHash and
// Hash, which the store keeps beside it. Numbers in meta decode as
// float64, as they do from any JSON the store keeps.
func DecodeCanonical(b []byte) (Record, error) {
	type plain Record
	var aux struct {
		Seq  int64  `json:"seq"`
		Time string `json:"time"`
		plain
	}
	if err := json.Unmarshal(b, &aux); err != nil {
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
