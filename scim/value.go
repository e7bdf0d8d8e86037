package scim

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/filter"
)

// Resources are handled as decoded JSON (map[string]any) whose attribute
// names are spelled as the schema spells them: Normalize makes one from a
// client's body, whatever the case of its names, and the PATCH engine keeps
// it so.

// coerce checks v against a (single) value of attribute a and returns it in
// its canonical form. nil stays nil: the attribute is unassigned. Entra
// sends booleans as "True" and "False": a boolean attribute takes those
// (any case), and only a boolean attribute. Unknown sub-attributes of a
// complex value are dropped and their names added to ignored.
func coerce(a Attribute, v any, name string, ignored *[]string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch a.Type {
	case TypeBoolean:
		switch b := v.(type) {
		case bool:
			return b, nil
		case string:
			switch {
			case strings.EqualFold(b, "true"):
				return true, nil
			case strings.EqualFold(b, "false"):
				return false, nil
			}
		}
		return nil, errorf(TypeInvalidValue, "%s must be a boolean", name)
	case TypeString, TypeReference:
		s, ok := v.(string)
		if !ok {
			return nil, errorf(TypeInvalidValue, "%s must be a string", name)
		}
		if len(s) > a.maxLen() {
			return nil, errorf(TypeInvalidValue, "%s is longer than %d bytes", name, a.maxLen())
		}
		return s, nil
	case TypeDateTime:
		s, ok := v.(string)
		if !ok {
			return nil, errorf(TypeInvalidValue, "%s must be a date-time string", name)
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, errorf(TypeInvalidValue, "%s must be an RFC 3339 date-time", name)
		}
		return s, nil
	case TypeInteger, TypeDecimal:
		f, ok := v.(float64)
		if !ok || a.Type == TypeInteger && f != math.Trunc(f) {
			return nil, errorf(TypeInvalidValue, "%s must be a%s number", name, map[bool]string{true: "n integer", false: ""}[a.Type == TypeInteger])
		}
		return f, nil
	case TypeComplex:
		if s, ok := v.(string); ok && !a.MultiValued {
			if _, has := a.sub("value"); has {
				v = map[string]any{"value": s} // Entra sends manager as its id alone
			}
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, errorf(TypeInvalidValue, "%s must be an object", name)
		}
		out := make(map[string]any, len(m))
		for k, sv := range m {
			sub, ok := a.sub(k)
			if !ok {
				*ignored = append(*ignored, name+"."+k)
				continue
			}
			if sub.Mutability == ReadOnly && a.Mutability != ReadOnly {
				continue // manager.displayName, members.display: the server's to fill
			}
			c, err := coerce(sub, sv, name+"."+sub.Name, ignored)
			if err != nil {
				return nil, err
			}
			if c != nil {
				out[sub.Name] = c
			}
		}
		if len(out) == 0 {
			return nil, nil
		}
		return out, nil
	}
	return nil, errorf(TypeInvalidValue, "%s has an unsupported type", name)
}

// coerceMulti checks the value of a whole multi-valued attribute: an array
// of values, or one value, which it wraps. At most one element may be
// primary.
func coerceMulti(a Attribute, v any, name string, ignored *[]string) ([]any, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	single := a
	single.MultiValued = false
	out := make([]any, 0, len(list))
	primaries := 0
	for _, el := range list {
		c, err := coerce(single, el, name, ignored)
		if err != nil {
			return nil, err
		}
		if c == nil {
			continue
		}
		if m, ok := c.(map[string]any); ok && m["primary"] == true {
			primaries++
		}
		out = append(out, c)
	}
	if primaries > 1 {
		return nil, errorf(TypeInvalidValue, "%s: at most one value may be primary", name)
	}
	return out, nil
}

// sameValue reports whether two elements of a multi-valued attribute name
// the same value: their value sub-attributes are equal (ignoring case
// unless caseExact), or, without one, the elements are equal.
func sameValue(a Attribute, x, y any) bool {
	mx, okx := x.(map[string]any)
	my, oky := y.(map[string]any)
	if okx && oky {
		vx, okx := mx["value"].(string)
		vy, oky := my["value"].(string)
		if okx && oky {
			if sub, ok := a.sub("value"); ok && sub.CaseExact {
				return vx == vy
			}
			return filter.Fold(vx) == filter.Fold(vy)
		}
	}
	return reflect.DeepEqual(x, y)
}

// clone deep-copies decoded JSON.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = clone(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = clone(e)
		}
		return s
	}
	return v
}

// Decode decodes a JSON body into decoded JSON whose numbers are float64,
// refusing anything but one JSON object (invalidSyntax).
func Decode(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, errorf(TypeInvalidSyntax, "the body is not a JSON object")
	}
	if dec.More() {
		return nil, errorf(TypeInvalidSyntax, "the body holds more than one JSON value")
	}
	return m, nil
}

// checkSchemas requires want among a body's schemas (RFC 7644 §3.3:
// invalidSyntax without it).
func checkSchemas(raw map[string]any, want string) error {
	list, _ := raw[findKey(raw, "schemas")].([]any)
	for _, s := range list {
		if s, ok := s.(string); ok && strings.EqualFold(s, want) {
			return nil
		}
	}
	return errorf(TypeInvalidSyntax, "schemas must include %q", want)
}

// findKey finds a key of m ignoring case; "" when absent.
func findKey(m map[string]any, name string) string {
	if _, ok := m[name]; ok {
		return name
	}
	for k := range m {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return ""
}

// Normalize reads a resource a client sent (POST, PUT): schemas must name
// the resource type's core schema; attribute names are matched ignoring
// case and written as the schema spells them; values are checked and
// coerced; readOnly attributes are dropped (RFC 7644 §3.3, §3.5.1);
// unknown attributes and extensions are dropped and their names returned.
func Normalize(rt *ResourceType, raw map[string]any) (doc map[string]any, ignored []string, err error) {
	if err := checkSchemas(raw, rt.Core.ID); err != nil {
		return nil, nil, err
	}
	doc = map[string]any{}
	for k, v := range raw {
		if strings.EqualFold(k, "schemas") {
			continue
		}
		if x, ok := rt.extension(k); ok {
			m, ok := v.(map[string]any)
			if !ok {
				if v == nil {
					continue
				}
				return nil, nil, errorf(TypeInvalidValue, "%s must be an object", x.ID)
			}
			ext := map[string]any{}
			for ek, ev := range m {
				a, ok := x.attr(ek)
				if !ok {
					ignored = append(ignored, x.ID+":"+ek)
					continue
				}
				if err := setWhole(ext, a, ev, x.ID+":"+a.Name, &ignored); err != nil {
					return nil, nil, err
				}
			}
			if len(ext) > 0 {
				doc[x.ID] = ext
			}
			continue
		}
		a, ok := rt.Core.attr(k)
		if !ok {
			ignored = append(ignored, k)
			continue
		}
		if a.Mutability == ReadOnly {
			continue
		}
		if err := setWhole(doc, a, v, a.Name, &ignored); err != nil {
			return nil, nil, err
		}
	}
	slices.Sort(ignored)
	return doc, ignored, nil
}

// setWhole sets attribute a of container to v, coerced; nil removes it.
func setWhole(container map[string]any, a Attribute, v any, name string, ignored *[]string) error {
	var (
		c   any
		err error
	)
	if a.MultiValued {
		var list []any
		list, err = coerceMulti(a, v, name, ignored)
		if len(list) > 0 {
			c = list
		}
	} else {
		c, err = coerce(a, v, name, ignored)
	}
	if err != nil {
		return err
	}
	if c == nil {
		delete(container, a.Name)
	} else {
		container[a.Name] = c
	}
	return nil
}
