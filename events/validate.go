package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Limits on one event's JSON. They bound the work done on untrusted input
// before the schema sees it; the schema itself bounds each kept string
// (1024 bytes for text, 256 for ids, 64 for short codes) and array (32 amr
// values, 64 scopes).
const (
	// MaxEventBytes is the largest accepted JSON text of one event,
	// unknown attributes included.
	MaxEventBytes = 64 << 10
	// MaxDepth is the deepest accepted nesting of objects and arrays,
	// unknown attributes included; the event object itself is depth 1.
	MaxDepth = 16
	// MinExternalTypeID is the lowest event_type_id an application may post.
	MinExternalTypeID = 10000
	// maxTypeIDDigits keeps ids within int64 so they can be compared as
	// numbers by a store.
	maxTypeIDDigits = 18
)

// TimeLayout is the layout of every date-time in a validated event's Body:
// UTC with exactly six fractional digits, so that byte order is
// chronological order and a store can compare and index them as text.
const TimeLayout = filter.TimeLayout

// Event is a validated event, ready to be appended to a tenant's log.
//
// Body is the normalised JSON object: attributes unknown to the meta-schema
// are removed, event_type_id is a string, timestamp is always present, and
// every date-time attribute is written in TimeLayout. Body, TypeID, UserIDs
// and Time are derived from one another; the validators keep them consistent
// and callers should not change one without the others.
type Event struct {
	ID       string // assigned by the store; empty after validation
	Seq      int64  // position in the tenant's log, assigned by the store; 0 after validation
	TenantID string // set by the caller; the validators leave it empty
	TypeID   string // event_type_id: 3 digits for native types, >= 10000 for external ones
	// UserIDs holds end_user.id then authenticated_user.id, without empty
	// values or duplicates: the users an event belongs to for queries.
	UserIDs    []string
	Time       time.Time       // the event's timestamp, else ReceivedAt; UTC, microsecond precision
	ReceivedAt time.Time       // when the service accepted it; UTC, microsecond precision
	Body       json.RawMessage // normalised JSON object, see above
	// TraceParent is the W3C traceparent of the span of the request that
	// appended the event ("" when it was not traced). It is stored with
	// the event, never shown to API callers, so that a delivery made
	// later, by any process, can link its span to that request's.
	TraceParent string
}

// FieldError is one reason an event was rejected.
type FieldError struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value within
	// the posted event ("" for the event itself).
	Pointer string `json:"pointer"`
	// Message says what is wrong, in English, safe to show to the poster.
	Message string `json:"message"`
}

// String gives "pointer: message", or the message alone for the event itself.
func (e FieldError) String() string {
	if e.Pointer == "" {
		return e.Message
	}
	return e.Pointer + ": " + e.Message
}

// FieldErrors is the list of reasons an event was rejected. It is an error
// so that callers who want one can use Err.
type FieldErrors []FieldError

// Error joins the reasons in one line.
func (fe FieldErrors) Error() string {
	s := make([]string, len(fe))
	for i, e := range fe {
		s[i] = e.String()
	}
	return "invalid event: " + strings.Join(s, "; ")
}

// Err returns nil for an empty list, else a fault.Invalid error whose
// message is the first reason and whose cause is fe, so errors.As finds the
// whole list.
func (fe FieldErrors) Err() error {
	if len(fe) == 0 {
		return nil
	}
	return fault.E(fault.Invalid, fault.Field(fe[0].Pointer), fe[0].String(), error(fe))
}

// ValidateExternal validates an event posted by an application and returns it
// normalised. It applies the posting rules of the specification:
//
//  1. the event must be a JSON object carrying event_type_id, a string of
//     digits (a JSON integer is accepted and turned into a string) without
//     leading zeros;
//  2. event_type_id must be MinExternalTypeID or more: native types cannot
//     be posted;
//  3. event_type_details.category must not be a native category name
//     (compared ignoring case and surrounding space, see IsNativeCategory);
//  4. attributes of the meta-schema are validated against it, date-time
//     formats included;
//  5. attributes not in the meta-schema, at any level of a known object, are
//     dropped and never cause a rejection.
//
// When the event is rejected the returned Event is the zero value and the
// list holds every reason found (at least one). now is the time of receipt.
func ValidateExternal(raw json.RawMessage, now time.Time) (Event, []FieldError) {
	return validate(raw, now, nil)
}

// ValidateNative validates a native event emitted by the host service. The
// id must be a type of the catalogue (see LookupType); only the attributes
// that type uses (Type.Fields, plus event_type_id, event_type_details and
// timestamp) are kept, and event_type_details is set from the catalogue,
// overriding whatever the caller sent. Otherwise it behaves like
// ValidateExternal.
func ValidateNative(raw json.RawMessage, now time.Time) (Event, []FieldError) {
	return validate(raw, now, &nativeRules{})
}

// nativeRules marks a native validation; the type is filled in once known.
type nativeRules struct{ typ Type }

func validate(raw json.RawMessage, now time.Time, native *nativeRules) (Event, []FieldError) {
	if len(raw) > MaxEventBytes {
		return Event{}, []FieldError{{"", fmt.Sprintf("event is larger than %d bytes", MaxEventBytes)}}
	}
	if err := checkDepth(raw, MaxDepth); err != nil {
		return Event{}, []FieldError{{"", err.Error()}}
	}
	if !utf8.Valid(raw) {
		return Event{}, []FieldError{{"", "event is not valid UTF-8"}}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return Event{}, []FieldError{{"", "event is not valid JSON"}}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return Event{}, []FieldError{{"", "event must be a JSON object"}}
	}

	typeID, fe := normaliseTypeID(obj["event_type_id"], native != nil)
	if fe != nil {
		return Event{}, []FieldError{*fe}
	}
	obj["event_type_id"] = typeID

	c := metaSchema()
	keep := c.shape
	if native != nil {
		t, ok := LookupType(typeID)
		if !ok {
			return Event{}, []FieldError{{"/event_type_id", fmt.Sprintf("%q is not a native event type", typeID)}}
		}
		native.typ = t
		keep = &shape{props: map[string]*shape{}}
		for _, f := range append(t.Fields, "event_type_id", "event_type_details", "timestamp") {
			keep.props[f] = c.shape.props[f]
		}
		obj["event_type_details"] = map[string]any{"category": string(t.Category), "name": t.Name}
	}
	prune(obj, keep)

	var errs []FieldError
	if native == nil {
		if d, ok := obj["event_type_details"].(map[string]any); ok {
			if cat, ok := d["category"].(string); ok && IsNativeCategory(cat) {
				errs = append(errs, FieldError{"/event_type_details/category",
					fmt.Sprintf("category %q is reserved for native events", cat)})
			}
		}
	}
	if err := c.schema.Validate(obj); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			errs = append(errs, FieldError{"", "event could not be validated"})
		} else {
			errs = append(errs, schemaErrors(ve)...)
		}
	}
	if len(errs) > 0 {
		sortFieldErrors(errs)
		return Event{}, errs
	}

	received := now.UTC().Truncate(time.Microsecond)
	if errs := normaliseTimes(obj, keep, ""); len(errs) > 0 {
		return Event{}, errs
	}
	ev := Event{TypeID: typeID, ReceivedAt: received, Time: received}
	if ts, ok := obj["timestamp"].(string); ok {
		ev.Time, _ = time.Parse(TimeLayout, ts) // normaliseTimes wrote it
	} else {
		obj["timestamp"] = received.Format(TimeLayout)
	}
	ev.UserIDs = userIDs(obj)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep the poster's text as sent: it is data, not HTML
	if err := enc.Encode(obj); err != nil {
		return Event{}, []FieldError{{"", "event could not be encoded"}}
	}
	ev.Body = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return ev, nil
}

// normaliseTypeID turns event_type_id into its canonical string form and
// applies the id rules of the posting kind.
func normaliseTypeID(v any, native bool) (string, *FieldError) {
	const ptr = "/event_type_id"
	var id string
	switch v := v.(type) {
	case nil:
		return "", &FieldError{ptr, "event_type_id is required"}
	case string:
		id = v
	case json.Number:
		if !isDigits(string(v)) {
			return "", &FieldError{ptr, "event_type_id must be a non-negative integer"}
		}
		id = string(v)
		if native && len(id) < 3 {
			id = strings.Repeat("0", 3-len(id)) + id
		}
	default:
		return "", &FieldError{ptr, "event_type_id must be a string of digits"}
	}
	if !isDigits(id) {
		return "", &FieldError{ptr, "event_type_id must be a string of digits"}
	}
	if native {
		if len(id) != 3 {
			return "", &FieldError{ptr, "a native event_type_id has 3 digits"}
		}
		return id, nil
	}
	if len(id) > maxTypeIDDigits {
		return "", &FieldError{ptr, fmt.Sprintf("event_type_id has more than %d digits", maxTypeIDDigits)}
	}
	if n, _ := strconv.ParseInt(id, 10, 64); n < MinExternalTypeID {
		return "", &FieldError{ptr, fmt.Sprintf("event_type_id must be %d or more: native event types cannot be posted", MinExternalTypeID)}
	}
	if id[0] == '0' {
		return "", &FieldError{ptr, "event_type_id must not have leading zeros"}
	}
	return id, nil
}

// checkDepth rejects JSON nested deeper than max without decoding it, so a
// hostile body costs one linear scan.
func checkDepth(raw []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, b := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			if depth > max {
				return fmt.Errorf("event nests objects and arrays more than %d deep", max)
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return nil
}

// prune removes, in place, every attribute of obj that s does not know, at
// every level of known objects and in arrays of known items. Values whose
// JSON type differs from the schema's are left for the schema to reject.
func prune(obj map[string]any, s *shape) {
	for name, v := range obj {
		sub, ok := s.props[name]
		if !ok || sub == nil {
			delete(obj, name)
			continue
		}
		pruneValue(v, sub)
	}
}

func pruneValue(v any, s *shape) {
	switch v := v.(type) {
	case map[string]any:
		if s.props != nil {
			prune(v, s)
		}
	case []any:
		if s.items != nil {
			for _, it := range v {
				pruneValue(it, s.items)
			}
		}
	}
}

// normaliseTimes rewrites every date-time string known to s in TimeLayout.
// The schema has already checked the format; Go's parser is stricter about
// a few corner cases (leap seconds), which are reported here.
func normaliseTimes(obj map[string]any, s *shape, ptr string) []FieldError {
	var errs []FieldError
	for name, v := range obj {
		sub := s.props[name]
		// The pointer is built only where it can be used: this walk runs
		// for every attribute of every posted event.
		switch v := v.(type) {
		case string:
			if sub.dateTime {
				t, err := filter.ParseTime(v)
				if err != nil {
					errs = append(errs, FieldError{ptr + "/" + escapePointer(name), "must be an RFC 3339 date-time"})
					continue
				}
				obj[name] = t.Format(TimeLayout)
			}
		case map[string]any:
			errs = append(errs, normaliseTimes(v, sub, ptr+"/"+escapePointer(name))...)
		}
	}
	sortFieldErrors(errs)
	return errs
}

func userIDs(obj map[string]any) []string {
	var ids []string
	for _, k := range []string{"end_user", "authenticated_user"} {
		u, _ := obj[k].(map[string]any)
		if id, _ := u["id"].(string); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// schemaErrors flattens a validation error tree into one FieldError per
// failed leaf keyword.
func schemaErrors(ve *jsonschema.ValidationError) []FieldError {
	var out []FieldError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		ptr := ""
		for _, tok := range e.InstanceLocation {
			ptr += "/" + escapePointer(tok)
		}
		out = append(out, FieldError{ptr, describe(e.ErrorKind)})
	}
	walk(ve)
	return out
}

// describe words a schema failure for the poster; kinds without a wording of
// their own fall back to the library's English text.
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return fmt.Sprintf("must be of type %s, not %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Format:
		if k.Want == "date-time" {
			return "must be an RFC 3339 date-time"
		}
		return "must be a valid " + k.Want
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.Required:
		return "missing required attribute " + strings.Join(k.Missing, ", ")
	case *kind.Pattern:
		return "does not match the pattern " + k.Want
	}
	return k.LocalizedString(message.NewPrinter(language.English))
}

// pointerEscaper escapes RFC 6901 reference tokens; a Replacer is costly
// to build, so it is built once.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// escapePointer escapes one RFC 6901 reference token.
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

func sortFieldErrors(errs []FieldError) {
	slices.SortStableFunc(errs, func(a, b FieldError) int {
		return strings.Compare(a.Pointer, b.Pointer)
	})
}

func sortStrings(s []string) []string {
	slices.Sort(s)
	return s
}
