package audit

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/fault"
)

// MaxFilterLen bounds the length of each string filter of an export request.
// Ids of the platform are far shorter; the bound keeps job rows and digests small.
const MaxFilterLen = 256

// ExportRequest is a validated request for an audit-log export (the body of
// POST {audit_url}/v1/audit-log-exports). Build it with ParseExportRequest.
//
// The time range is inclusive at both ends and has microsecond precision, the
// precision of exported record times. Empty string filters match everything;
// filters that are set must all match (AND). Without ResourceID and Source,
// records of every service of the tenant are exported.
type ExportRequest struct {
	From, To   time.Time // UTC, truncated to the microsecond; From <= To
	ResourceID string    // one service instance, or "" for all
	Source     string    // one service kind (one of Sources), or "" for all
	ActorID    string    // records of one actor, or "" for all
	Action     string    // records of one action, or "" for all
	Status     string    // StatusSuccess, StatusFailed, or "" for both
}

// Filtered reports whether any filter other than the time range is set. An
// unfiltered export holds every record of the tenant in the range, which lets
// a verifier treat a gap in the sequence as a removed record (see EXPORT.md).
func (q ExportRequest) Filtered() bool {
	return q.ResourceID != "" || q.Source != "" || q.ActorID != "" || q.Action != "" || q.Status != ""
}

// Matches reports whether rec falls in the request's time range and matches
// every filter. It does not look at the tenant: stores scan one tenant's log,
// and in-memory stores use Matches to select within it. Times are compared at
// microsecond precision, as exported.
func (q ExportRequest) Matches(rec Record) bool {
	t := rec.Time.UTC().Truncate(time.Microsecond)
	if t.Before(q.From) || t.After(q.To) {
		return false
	}
	return match(q.ResourceID, rec.ResourceID) && match(q.Source, rec.Source) &&
		match(q.ActorID, rec.ActorID) && match(q.Action, rec.Action) && match(q.Status, rec.Status)
}

func match(filter, v string) bool { return filter == "" || filter == v }

// exportRequestJSON is the wire form. Times are raw so that a non-string or
// missing value gets a field-named error rather than a decoder message.
type exportRequestJSON struct {
	From       json.RawMessage `json:"from"`
	To         json.RawMessage `json:"to"`
	ResourceID *string         `json:"resourceId"`
	Source     *string         `json:"source"`
	ActorID    *string         `json:"actorId"`
	Action     *string         `json:"action"`
	Status     *string         `json:"status"`
}

// ParseExportRequest decodes and validates the JSON body of an export
// request. now is the time the request is received.
//
// Rules, each failing with fault.Invalid and the offending fault.Field:
//   - the body is one JSON object (malformed JSON has no field); unknown
//     members are ignored;
//   - from and to are required strings in RFC 3339 ("2024-05-01T10:00:00Z",
//     any offset, optional fraction) or the spec's record format
//     ("2024-05-01 10:00:00.000000 UTC"; fraction and " UTC" optional, the
//     time is UTC either way);
//   - from must not be after to, nor after now; to is clamped to now, so an
//     archive never claims a range whose end has not happened yet and two
//     exports of the same request return the same records;
//   - status, when given, is "success" or "failed"; source, when given, is
//     one of Sources; every filter is at most MaxFilterLen bytes of UTF-8.
//
// The range may be of any length (also over 366 days): the export is
// streamed, so its cost grows with the records found, not the range.
// Filters given as "" or null are the same as absent.
func ParseExportRequest(body []byte, now time.Time) (ExportRequest, error) {
	const op = fault.Op("audit.ParseExportRequest")
	var in exportRequestJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&in); err != nil {
		return ExportRequest{}, fault.E(op, fault.Invalid, "malformed JSON body", err)
	}
	if dec.More() {
		return ExportRequest{}, fault.E(op, fault.Invalid, "malformed JSON body: data after the object")
	}
	var q ExportRequest
	var msg string
	if q.From, msg = parseRequestTime(in.From); msg != "" {
		return ExportRequest{}, fault.E(op, fault.Invalid, fault.Field("from"), "from "+msg)
	}
	if q.To, msg = parseRequestTime(in.To); msg != "" {
		return ExportRequest{}, fault.E(op, fault.Invalid, fault.Field("to"), "to "+msg)
	}
	now = now.UTC().Truncate(time.Microsecond)
	if q.From.After(q.To) {
		return ExportRequest{}, fault.E(op, fault.Invalid, fault.Field("from"), "from must not be after to")
	}
	if q.From.After(now) {
		return ExportRequest{}, fault.E(op, fault.Invalid, fault.Field("from"), "from must not be in the future")
	}
	if q.To.After(now) {
		q.To = now
	}
	for _, f := range []struct {
		name string
		in   *string
		out  *string
	}{
		{"resourceId", in.ResourceID, &q.ResourceID},
		{"source", in.Source, &q.Source},
		{"actorId", in.ActorID, &q.ActorID},
		{"action", in.Action, &q.Action},
		{"status", in.Status, &q.Status},
	} {
		if f.in == nil {
			continue
		}
		if len(*f.in) > MaxFilterLen || !utf8.ValidString(*f.in) {
			return ExportRequest{}, fault.E(op, fault.Invalid, fault.Field(f.name), f.name+" must be at most 256 bytes of UTF-8")
		}
		*f.out = *f.in
	}
	if q.Status != "" && q.Status != StatusSuccess && q.Status != StatusFailed {
		return ExportRequest{}, fault.E(op, fault.Invalid, fault.Field("status"), `status must be "success" or "failed"`)
	}
	if q.Source != "" && !slices.Contains(Sources, q.Source) {
		return ExportRequest{}, fault.E(op, fault.Invalid, fault.Field("source"), "source is not a known service kind")
	}
	return q, nil
}

// parseRequestTime returns the time, or the end of a sentence naming what
// is wrong with it. Go accepts a fractional second after the seconds field
// even when the layout has none, so the second and third layouts take the
// spec's "YYYY-MM-DD hh:mm:ss.micro", with or without the fraction and with
// or without the " UTC" that exported records carry.
func parseRequestTime(raw json.RawMessage) (time.Time, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, "is required"
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, "must be a timestamp string"
	}
	for _, layout := range [...]string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02 15:04:05 UTC"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			t = t.UTC().Truncate(time.Microsecond)
			// An offset can move year 0000 or 9999 out of the four-digit
			// years that RFC 3339, and the digest's form, can write.
			if t.Year() < 1 || t.Year() > 9999 {
				return time.Time{}, "must be between the years 0001 and 9999 in UTC"
			}
			return t, ""
		}
	}
	return time.Time{}, `must be RFC 3339 or "YYYY-MM-DD hh:mm:ss.micro" (UTC)`
}
