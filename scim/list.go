package scim

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/filter"
)

// Pagination bounds (RFC 7644 §3.4.2.4): count defaults to DefaultCount
// and reads MaxResults above it.
const (
	DefaultCount = 100
	MaxResults   = 200
)

// ListRequest is a query of a resource type: from a GET's parameters
// (ParseListQuery) or a POST .search body (DecodeSearch).
type ListRequest struct {
	Filter             string
	StartIndex         int // 1-based; below 1 reads 1
	Count              int // 0 gives totals only; above MaxResults reads MaxResults
	SortBy             string
	Descending         bool
	Attributes         []string
	ExcludedAttributes []string
}

// ListResponse is a ListResponse message; Resources is never nil.
type ListResponse struct {
	Schemas      []string         `json:"schemas"`
	TotalResults int              `json:"totalResults"`
	StartIndex   int              `json:"startIndex"`
	ItemsPerPage int              `json:"itemsPerPage"`
	Resources    []map[string]any `json:"Resources"`
}

func splitAttrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// ParseListQuery reads ?filter&startIndex&count&sortBy&sortOrder&attributes
// &excludedAttributes. Parameter names are case-sensitive as RFC 7644
// writes them; a startIndex or count that is not an integer is
// invalidValue.
func ParseListQuery(q url.Values) (ListRequest, error) {
	r := ListRequest{Filter: q.Get("filter"), SortBy: q.Get("sortBy"), StartIndex: 1, Count: DefaultCount,
		Attributes: splitAttrs(q.Get("attributes")), ExcludedAttributes: splitAttrs(q.Get("excludedAttributes"))}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"startIndex", &r.StartIndex}, {"count", &r.Count}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return ListRequest{}, errorf(TypeInvalidValue, "%s must be an integer", p.name)
			}
			*p.dst = n
		}
	}
	desc, err := sortOrder(q.Get("sortOrder"))
	if err != nil {
		return ListRequest{}, err
	}
	r.Descending = desc
	return r.bounded(), nil
}

func sortOrder(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "", "ascending":
		return false, nil
	case "descending":
		return true, nil
	}
	return false, errorf(TypeInvalidValue, "sortOrder must be ascending or descending")
}

func (r ListRequest) bounded() ListRequest {
	r.StartIndex = max(r.StartIndex, 1)
	r.Count = min(max(r.Count, 0), MaxResults)
	return r
}

// DecodeSearch reads a POST .search body (RFC 7644 §3.4.3).
func DecodeSearch(body []byte) (ListRequest, error) {
	raw, err := Decode(body)
	if err != nil {
		return ListRequest{}, err
	}
	if err := checkSchemas(raw, URNSearchRequest); err != nil {
		return ListRequest{}, err
	}
	r := ListRequest{StartIndex: 1, Count: DefaultCount}
	str := func(name string) (string, error) {
		v, ok := raw[findKey(raw, name)]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", errorf(TypeInvalidValue, "%s must be a string", name)
		}
		return s, nil
	}
	num := func(name string, dst *int) error {
		v, ok := raw[findKey(raw, name)]
		if !ok || v == nil {
			return nil
		}
		f, ok := v.(float64)
		if !ok || f != float64(int(f)) {
			return errorf(TypeInvalidValue, "%s must be an integer", name)
		}
		*dst = int(f)
		return nil
	}
	list := func(name string) ([]string, error) {
		v, ok := raw[findKey(raw, name)]
		if !ok || v == nil {
			return nil, nil
		}
		l, ok := v.([]any)
		if !ok {
			return nil, errorf(TypeInvalidValue, "%s must be an array of strings", name)
		}
		var out []string
		for _, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, errorf(TypeInvalidValue, "%s must be an array of strings", name)
			}
			out = append(out, s)
		}
		return out, nil
	}
	if r.Filter, err = str("filter"); err != nil {
		return ListRequest{}, err
	}
	if r.SortBy, err = str("sortBy"); err != nil {
		return ListRequest{}, err
	}
	order, err := str("sortOrder")
	if err != nil {
		return ListRequest{}, err
	}
	if r.Descending, err = sortOrder(order); err != nil {
		return ListRequest{}, err
	}
	if err := num("startIndex", &r.StartIndex); err != nil {
		return ListRequest{}, err
	}
	if err := num("count", &r.Count); err != nil {
		return ListRequest{}, err
	}
	if r.Attributes, err = list("attributes"); err != nil {
		return ListRequest{}, err
	}
	if r.ExcludedAttributes, err = list("excludedAttributes"); err != nil {
		return ListRequest{}, err
	}
	return r.bounded(), nil
}

// CompileFilter parses and resolves a filter against rt's stored
// documents; nil for an empty filter. Errors are invalidFilter.
func CompileFilter(rt *ResourceType, text string) (filter.Expr, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	e, err := filter.ParseSCIM(text)
	if err == nil {
		e, err = rt.StoreFilter.Resolve(e)
	}
	if err != nil {
		return nil, &Error{ScimType: TypeInvalidFilter, Detail: strings.TrimPrefix(errText(err), "filter: "), kind: kindInvalid}
	}
	return e, nil
}

// SortKey maps sortBy to the key a store sorts by (see
// identity.GroupQuery.SortBy); "" for none. An attribute that cannot be
// sorted by is invalidValue.
func SortKey(rt *ResourceType, sortBy string) (string, error) {
	if sortBy == "" {
		return "", nil
	}
	allowed := []string{"displayName", "externalId", "meta.created", "meta.lastModified"}
	if rt == Users {
		allowed = []string{"userName", "displayName", "externalId", "name.familyName", "emails", "meta.created", "meta.lastModified"}
	}
	key := strings.TrimPrefix(sortBy, rt.Core.ID+":")
	for _, a := range allowed {
		if strings.EqualFold(a, key) {
			return a, nil
		}
	}
	return "", errorf(TypeInvalidValue, "cannot sort by %q; sortBy takes %s", sortBy, strings.Join(allowed, ", "))
}

// Project applies attributes and excludedAttributes (RFC 7644 §3.4.2.5) to
// a resource: with attributes, only those (and the ones returned always);
// else every default attribute but the excluded ones. Names match ignoring
// case; a sub-attribute (name.givenName) selects or excludes that part.
func Project(rt *ResourceType, doc map[string]any, attributes, excluded []string) map[string]any {
	if len(attributes) == 0 && len(excluded) == 0 {
		return doc
	}
	// meta too: it carries the version that ETag repeats.
	always := map[string]bool{"id": true, "schemas": true, "meta": true}
	for _, a := range rt.Core.Attributes {
		if a.Returned == ReturnedAlways {
			always[a.Name] = true
		}
	}
	if len(attributes) > 0 {
		out := map[string]any{}
		for k, v := range doc {
			if always[k] {
				out[k] = v
			}
		}
		for _, name := range attributes {
			top, sub := splitName(rt, name)
			v, ok := doc[top]
			if !ok {
				continue
			}
			if sub == "" {
				out[top] = v
				continue
			}
			m, _ := v.(map[string]any)
			if sv, ok := m[sub]; ok {
				dst, _ := out[top].(map[string]any)
				if dst == nil {
					dst = map[string]any{}
				}
				dst[sub] = sv
				out[top] = dst
			}
		}
		return out
	}
	out := map[string]any{}
	for k, v := range doc {
		out[k] = v
	}
	for _, name := range excluded {
		top, sub := splitName(rt, name)
		if always[top] {
			continue
		}
		if sub == "" {
			delete(out, top)
			continue
		}
		if m, ok := out[top].(map[string]any); ok {
			m = clone(m).(map[string]any)
			delete(m, sub)
			out[top] = m
		}
	}
	return out
}

// splitName turns a requested attribute name into the document key and a
// sub-attribute: "name.givenName", the core URN prefix dropped, an
// extension's attributes under its URN key.
func splitName(rt *ResourceType, name string) (top, sub string) {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		urn, rest := name[:i], name[i+1:]
		if strings.EqualFold(urn, rt.Core.ID) {
			name = rest
		} else if x, ok := rt.extension(urn); ok {
			return x.ID, canonicalName(x, rest)
		} else if x, ok := rt.extension(name); ok {
			return x.ID, ""
		}
	}
	head, tail, _ := strings.Cut(name, ".")
	if a, ok := rt.Core.attr(head); ok {
		head = a.Name
		if s, ok := a.sub(tail); ok {
			tail = s.Name
		}
	} else if strings.EqualFold(head, "meta") {
		head = "meta"
	}
	return head, tail
}

func canonicalName(x *Schema, name string) string {
	if a, ok := x.attr(name); ok {
		return a.Name
	}
	return name
}

// Page builds a ListResponse.
func Page(resources []map[string]any, total, startIndex int) ListResponse {
	if resources == nil {
		resources = []map[string]any{}
	}
	return ListResponse{Schemas: []string{URNListResponse}, TotalResults: total, StartIndex: startIndex,
		ItemsPerPage: len(resources), Resources: slices.Clip(resources)}
}
