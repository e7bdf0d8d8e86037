package filter

import (
	"encoding/json"
	"strings"
	"time"
)

// TimeLayout is the canonical text of a date-time: UTC, exactly six
// fractional digits. Byte order of such strings is chronological order, which
// is what lets SQL compare them as text. The events package writes every
// date-time of a stored event in this layout.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Match reports whether doc, a decoded JSON object, matches e. It is the
// reference semantics that SQL reproduces:
//
//   - A path selects nested object members; anything else on the way (a
//     missing key, an array, a scalar) makes the attribute absent.
//   - Strings compare case-sensitively, byte by byte (SCIM caseExact): ids
//     and codes are case-sensitive, and a store can then use plain indexes.
//   - When both the attribute and the literal of eq, ne, gt, ge, lt or le
//     are RFC 3339 date-times, they compare as instants, at microsecond
//     precision.
//   - Numbers compare as float64. A literal only matches an attribute of the
//     same JSON type; arrays and objects match nothing but pr.
//   - "eq null" matches an absent or null attribute; ne is exactly
//     not (eq), so "x ne 1" matches documents without x.
//   - pr matches a present value other than null, "", [] and {}.
//   - A Compare with Fold compares strings with ASCII letters folded; a
//     Has matches when an object element of the array at its path
//     matches its filter (elements that are not objects never do).
//
// doc may hold numbers as float64 or json.Number (Decoder.UseNumber), or
// any Go integer type.
func Match(e Expr, doc map[string]any) bool {
	switch e := e.(type) {
	case And:
		return Match(e.Left, doc) && Match(e.Right, doc)
	case Or:
		return Match(e.Left, doc) || Match(e.Right, doc)
	case Not:
		return !Match(e.X, doc)
	case Compare:
		v, ok := lookup(doc, e.Path)
		if e.Fold {
			v, e.Value = foldValue(v), foldLiteral(e.Value)
		}
		return compare(e.Op, e.Value, v, ok)
	case Has:
		v, _ := lookup(doc, e.Path)
		list, _ := v.([]any)
		for _, el := range list {
			if m, ok := el.(map[string]any); ok && Match(e.Filter, m) {
				return true
			}
		}
		return false
	}
	return false
}

func foldValue(v any) any {
	if s, ok := v.(string); ok {
		return Fold(s)
	}
	return v
}

func foldLiteral(v Value) Value {
	if v.Kind == String {
		v.Str = Fold(v.Str)
	}
	return v
}

func lookup(doc map[string]any, p Path) (any, bool) {
	var cur any = doc
	for _, name := range p {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[name]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func compare(op Op, lit Value, v any, present bool) bool {
	switch op {
	case Pr:
		return isPresent(v, present)
	case Ne:
		return !compare(Eq, lit, v, present)
	case Eq:
		switch lit.Kind {
		case Null:
			return v == nil
		case Bool:
			b, ok := v.(bool)
			return ok && b == lit.Bool
		}
	case Co, Sw, Ew:
		s, ok := v.(string)
		if !ok || lit.Kind != String {
			return false
		}
		switch op {
		case Co:
			return strings.Contains(s, lit.Str)
		case Sw:
			return strings.HasPrefix(s, lit.Str)
		}
		return strings.HasSuffix(s, lit.Str)
	}
	c, ok := order(lit, v)
	if !ok {
		return false
	}
	switch op {
	case Eq:
		return c == 0
	case Gt:
		return c > 0
	case Ge:
		return c >= 0
	case Lt:
		return c < 0
	case Le:
		return c <= 0
	}
	return false
}

// order compares the attribute value v with a string or number literal:
// -1, 0 or +1 as v is less than, equal to or greater than lit.
func order(lit Value, v any) (int, bool) {
	switch lit.Kind {
	case String:
		s, ok := v.(string)
		if !ok {
			return 0, false
		}
		if a, err := ParseTime(s); err == nil {
			if b, err := ParseTime(lit.Str); err == nil {
				return a.Compare(b), true
			}
		}
		return strings.Compare(s, lit.Str), true
	case Number:
		f, ok := number(v)
		if !ok {
			return 0, false
		}
		switch {
		case f < lit.Num:
			return -1, true
		case f > lit.Num:
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	}
	return 0, false
}

func isPresent(v any, present bool) bool {
	if !present {
		return false
	}
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

// ParseTime parses an RFC 3339 date-time (the lower-case t and z that
// RFC 3339 allows included) and returns it in UTC, truncated to
// microseconds, the precision of TimeLayout.
func ParseTime(s string) (time.Time, error) {
	if len(s) > 10 && s[10] == 't' {
		s = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC().Truncate(time.Microsecond), nil
}
