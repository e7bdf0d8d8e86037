package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// UnmarshalJSON reads a record written by MarshalJSON (the spec's field
// names, time as TimeFormat in UTC). Numbers inside meta are decoded as
// json.Number, not float64, so that the record re-encodes byte for byte and
// ChainHash can be recomputed from an exported record. Seq, PrevHash and
// Hash are not part of the spec's record and are left zero.
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record
	var aux struct {
		Time *string `json:"time"`
		plain
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&aux); err != nil {
		return err
	}
	if aux.Time == nil {
		return fmt.Errorf("audit: record has no time")
	}
	t, err := time.ParseInLocation(TimeFormat, *aux.Time, time.UTC)
	if err != nil {
		return fmt.Errorf("audit: record time: %w", err)
	}
	*r = Record(aux.plain)
	r.Time = t
	return nil
}
