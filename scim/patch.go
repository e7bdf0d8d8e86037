package scim

import (
	"reflect"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
)

// MaxOperations bounds the operations of one PATCH request (413 above).
const MaxOperations = 1000

// Operation is one PATCH operation (RFC 7644 §3.5.2) as decoded JSON.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path,omitempty"`
	Value any    `json:"value,omitempty"`
}

// PatchRequest is the body of a PATCH request.
type PatchRequest struct {
	Schemas    []string    `json:"schemas"`
	Operations []Operation `json:"Operations"`
}

// DecodePatch reads a PATCH body: a PatchOp message with its operations.
func DecodePatch(body []byte) ([]Operation, error) {
	raw, err := Decode(body)
	if err != nil {
		return nil, err
	}
	if err := checkSchemas(raw, URNPatchOp); err != nil {
		return nil, err
	}
	list, ok := raw[findKey(raw, "Operations")].([]any)
	if !ok || len(list) == 0 {
		return nil, errorf(TypeInvalidSyntax, "Operations must be a non-empty array")
	}
	if len(list) > MaxOperations {
		return nil, &Error{Detail: "a PATCH request takes at most 1000 operations", kind: fault.TooLarge}
	}
	ops := make([]Operation, 0, len(list))
	for _, el := range list {
		m, ok := el.(map[string]any)
		if !ok {
			return nil, errorf(TypeInvalidSyntax, "each operation must be an object")
		}
		var op Operation
		if op.Op, ok = m[findKey(m, "op")].(string); !ok {
			return nil, errorf(TypeInvalidSyntax, "each operation needs an op")
		}
		if k := findKey(m, "path"); k != "" {
			if op.Path, ok = m[k].(string); !ok {
				return nil, errorf(TypeInvalidPath, "path must be a string")
			}
		}
		op.Value = m[findKey(m, "value")]
		ops = append(ops, op)
	}
	return ops, nil
}

// Result is what Patch did.
type Result struct {
	// Changed lists the attributes whose values changed, by name
	// (an extension's prefixed with its URN), sorted.
	Changed []string
	// Ignored lists the unknown attributes the operations named.
	Ignored []string
}

// Patch applies ops to doc, a resource of type rt as Normalize or a
// mapper writes it (readOnly attributes included, so that a value sent
// unchanged can be told apart from a change). It is atomic: it works on a
// copy and returns it only when every operation applied. It accepts the
// RFC's forms and what Okta and Entra ID send (in Entra's default mode and
// with aadOptscim062020): op in any case; "True"/"False" for booleans; add
// on a single-valued attribute as replace; a path-less value whose keys are
// attribute paths; a remove of members with a value listing the members to
// remove; add or replace of emails[type eq "work"].value creating the
// element; readOnly attributes sent unchanged (Okta's rename sends the id)
// ignored. Adding a value already present, or removing an absent one,
// succeeds and changes nothing.
func Patch(rt *ResourceType, doc map[string]any, ops []Operation) (map[string]any, Result, error) {
	if len(ops) > MaxOperations {
		return nil, Result{}, &Error{Detail: "a PATCH request takes at most 1000 operations", kind: fault.TooLarge}
	}
	p := &patcher{rt: rt, doc: clone(doc).(map[string]any)}
	for _, op := range ops {
		if err := p.apply(op); err != nil {
			return nil, Result{}, err
		}
	}
	var res Result
	for _, name := range p.touched {
		if !slices.Contains(res.Changed, name) && !reflect.DeepEqual(lookupName(rt, doc, name), lookupName(rt, p.doc, name)) {
			res.Changed = append(res.Changed, name)
		}
	}
	slices.Sort(res.Changed)
	res.Ignored = p.ignored
	slices.Sort(res.Ignored)
	res.Ignored = slices.Compact(res.Ignored)
	return p.doc, res, nil
}

// lookupName reads a top-level attribute (URN-prefixed for an extension).
func lookupName(rt *ResourceType, doc map[string]any, name string) any {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		ext, _ := doc[name[:i]].(map[string]any)
		return ext[name[i+1:]]
	}
	return doc[name]
}

type patcher struct {
	rt      *ResourceType
	doc     map[string]any
	touched []string
	ignored []string
}

// target is where a path points.
type target struct {
	ext     *Schema    // the extension holding attr, nil for the core schema
	attr    Attribute  // the top-level attribute
	sub     *Attribute // a sub-attribute of attr, or nil
	filter  filter.Expr
	extOnly bool // the path is an extension's URN: its whole object
}

func (t target) name() string {
	if t.ext != nil {
		return t.ext.ID + ":" + t.attr.Name
	}
	return t.attr.Name
}

// container returns the map holding t.attr, creating an extension's.
func (p *patcher) container(t target, create bool) map[string]any {
	if t.ext == nil {
		return p.doc
	}
	m, ok := p.doc[t.ext.ID].(map[string]any)
	if !ok && create {
		m = map[string]any{}
		p.doc[t.ext.ID] = m
	}
	return m
}

// resolve finds what a parsed path names; ok false for an unknown
// attribute (ignored, as unknown attributes are).
func (p *patcher) resolve(pp filter.PatchPath, text string) (target, bool, error) {
	names := pp.Attr
	var t target
	schema := p.rt.Core
	if strings.Contains(names[0], ":") {
		if x, ok := p.rt.extension(names[0] + ":" + names[1]); ok && len(names) == 2 {
			if pp.Filter != nil || pp.Sub != "" {
				return t, false, errorf(TypeInvalidPath, "%q: an extension's URN takes no filter", text)
			}
			return target{ext: x, extOnly: true}, true, nil
		}
		if strings.EqualFold(names[0], p.rt.Core.ID) {
			names = names[1:]
		} else if x, ok := p.rt.extension(names[0]); ok {
			t.ext, schema, names = x, x, names[1:]
		} else {
			p.ignored = append(p.ignored, text)
			return t, false, nil
		}
	}
	a, ok := schema.attr(names[0])
	if !ok && t.ext == nil && strings.EqualFold(names[0], "meta") {
		a, ok = metaAttr, true
	}
	if !ok {
		p.ignored = append(p.ignored, text)
		return t, false, nil
	}
	t.attr = a
	subName := pp.Sub
	if len(names) == 2 {
		subName = names[1]
	}
	if subName != "" {
		s, ok := a.sub(subName)
		if !ok {
			p.ignored = append(p.ignored, text)
			return t, false, nil
		}
		t.sub = &s
	}
	if pp.Filter != nil {
		if !a.MultiValued {
			return t, false, errorf(TypeInvalidPath, "%q: a value filter needs a multi-valued attribute", text)
		}
		r, err := p.rt.Filter.Resolve(filter.Has{Path: filter.Path{t.name()}, Filter: pp.Filter})
		if err != nil {
			return t, false, errorf(TypeInvalidPath, "%q: %s", text, fault.MessageOf(err))
		}
		t.filter = r.(filter.Has).Filter
	}
	if t.sub != nil && a.MultiValued && t.filter == nil && len(names) == 2 {
		// emails.value: RFC 7644 allows it only with a filter.
		return t, false, errorf(TypeInvalidPath, "%q: a sub-attribute of a multi-valued attribute needs a value filter", text)
	}
	return t, true, nil
}

func (p *patcher) apply(op Operation) error {
	kind := strings.ToLower(op.Op)
	switch kind {
	case "add", "replace", "remove":
	default:
		return errorf(TypeInvalidSyntax, "op %q is not add, replace or remove", op.Op)
	}
	if op.Path == "" {
		if kind == "remove" {
			return errorf(TypeNoTarget, "remove needs a path")
		}
		m, ok := op.Value.(map[string]any)
		if !ok {
			return errorf(TypeInvalidValue, "an operation without a path takes an object value")
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys) // deterministic order of errors
		for _, k := range keys {
			if strings.EqualFold(k, "schemas") {
				continue
			}
			if err := p.applyPath(kind, k, m[k], true); err != nil {
				return err
			}
		}
		return nil
	}
	return p.applyPath(kind, op.Path, op.Value, false)
}

func (p *patcher) applyPath(kind, path string, value any, fromKey bool) error {
	pp, err := filter.ParsePatchPath(path)
	if err != nil {
		return errorf(TypeInvalidPath, "%q: %s", path, fault.MessageOf(err))
	}
	t, ok, err := p.resolve(pp, path)
	if err != nil || !ok {
		return err
	}
	if t.extOnly {
		if kind == "remove" {
			if _, had := p.doc[t.ext.ID]; had {
				delete(p.doc, t.ext.ID)
				for _, a := range t.ext.Attributes {
					p.touched = append(p.touched, t.ext.ID+":"+a.Name)
				}
			}
			return nil
		}
		m, ok := value.(map[string]any)
		if !ok {
			return errorf(TypeInvalidValue, "%s takes an object", t.ext.ID)
		}
		for k, v := range m {
			if err := p.applyPath(kind, t.ext.ID+":"+k, v, true); err != nil {
				return err
			}
		}
		return nil
	}
	if t.attr.Mutability == ReadOnly || t.sub != nil && t.sub.Mutability == ReadOnly && !t.attr.MultiValued {
		return p.readOnly(kind, t, value, fromKey)
	}
	p.touched = append(p.touched, t.name())
	c := p.container(t, kind != "remove")
	switch {
	case t.attr.MultiValued:
		return p.multi(kind, t, c, value)
	case t.sub != nil:
		return p.subAttr(kind, t, c, value)
	}
	if kind == "remove" {
		if t.attr.Required {
			return errorf(TypeInvalidValue, "%s is required", t.name())
		}
		delete(c, t.attr.Name)
		return nil
	}
	if t.attr.Type == TypeComplex {
		// add and replace both merge the sub-attributes given (§3.5.2.1, .3).
		v, err := coerce(t.attr, value, t.name(), &p.ignored)
		if err != nil {
			return err
		}
		cur, _ := c[t.attr.Name].(map[string]any)
		if cur == nil {
			cur = map[string]any{}
		}
		if m, ok := v.(map[string]any); ok {
			for k, sv := range m {
				cur[k] = sv
			}
		}
		if len(cur) > 0 {
			c[t.attr.Name] = cur
		}
		return nil
	}
	if value == nil && t.attr.Required {
		return errorf(TypeInvalidValue, "%s is required", t.name())
	}
	return setWhole(c, t.attr, value, t.name(), &p.ignored)
}

// readOnly accepts an operation on a readOnly attribute only when it
// changes nothing (Okta's rename sends the group's unchanged id).
func (p *patcher) readOnly(kind string, t target, value any, fromKey bool) error {
	c := p.container(t, false)
	var cur any
	if c != nil {
		cur = c[t.attr.Name]
		if t.sub != nil {
			m, _ := cur.(map[string]any)
			cur = m[t.sub.Name]
		}
	}
	if kind != "remove" && fromKey && value != nil && reflect.DeepEqual(normalizeScalar(cur), normalizeScalar(value)) {
		return nil
	}
	return errorf(TypeMutability, "%s is read-only", t.name())
}

func normalizeScalar(v any) any {
	if s, ok := v.(string); ok {
		return s
	}
	return v
}

// subAttr handles name.givenName and manager.value.
func (p *patcher) subAttr(kind string, t target, c map[string]any, value any) error {
	cur, _ := c[t.attr.Name].(map[string]any)
	if kind == "remove" {
		if cur != nil {
			delete(cur, t.sub.Name)
			if len(cur) == 0 {
				delete(c, t.attr.Name)
			}
		}
		return nil
	}
	v, err := coerce(*t.sub, value, t.name()+"."+t.sub.Name, &p.ignored)
	if err != nil {
		return err
	}
	if cur == nil {
		cur = map[string]any{}
	}
	if v == nil {
		delete(cur, t.sub.Name)
	} else {
		cur[t.sub.Name] = v
	}
	if len(cur) == 0 {
		delete(c, t.attr.Name)
	} else {
		c[t.attr.Name] = cur
	}
	return nil
}

// multi handles operations on a multi-valued attribute, with or without a
// value filter.
func (p *patcher) multi(kind string, t target, c map[string]any, value any) error {
	list, _ := c[t.attr.Name].([]any)
	store := func(l []any) {
		if len(l) == 0 {
			delete(c, t.attr.Name)
		} else {
			c[t.attr.Name] = l
		}
	}
	if t.filter == nil {
		switch kind {
		case "remove":
			if value == nil {
				store(nil)
				return nil
			}
			// Entra's default mode: remove the listed values only.
			gone, err := coerceMulti(t.attr, value, t.name(), &p.ignored)
			if err != nil {
				return err
			}
			store(slices.DeleteFunc(list, func(el any) bool {
				return slices.ContainsFunc(gone, func(g any) bool { return sameValue(t.attr, el, g) })
			}))
			return nil
		case "replace":
			l, err := coerceMulti(t.attr, value, t.name(), &p.ignored)
			if err != nil {
				return err
			}
			store(l)
			return nil
		}
		add, err := coerceMulti(t.attr, value, t.name(), &p.ignored)
		if err != nil {
			return err
		}
		for _, el := range add {
			if i := slices.IndexFunc(list, func(x any) bool { return sameValue(t.attr, x, el) }); i >= 0 {
				list[i] = el // the value again, with its other sub-attributes as sent now
				continue
			}
			list = append(list, el)
		}
		if primaries(list) > 1 {
			// a new primary value takes the place of the old one (RFC 7643 §2.4)
			for i, el := range list {
				if m, ok := el.(map[string]any); ok && m["primary"] == true && !slices.ContainsFunc(add, func(a any) bool { return reflect.DeepEqual(a, el) }) {
					m = clone(m).(map[string]any)
					delete(m, "primary")
					list[i] = m
				}
			}
		}
		store(list)
		return nil
	}
	var matched []int
	for i, el := range list {
		if m, ok := el.(map[string]any); ok && filter.Match(t.filter, m) {
			matched = append(matched, i)
		}
	}
	if kind == "remove" {
		if t.sub == nil {
			store(slices.DeleteFunc(list, func(el any) bool {
				m, ok := el.(map[string]any)
				return ok && filter.Match(t.filter, m)
			}))
			return nil
		}
		for _, i := range matched {
			m := list[i].(map[string]any)
			delete(m, t.sub.Name)
		}
		store(list)
		return nil
	}
	if len(matched) == 0 {
		seed, ok := equalities(t.filter)
		if !ok {
			if kind == "add" && t.sub == nil {
				seed = map[string]any{}
			} else {
				return errorf(TypeNoTarget, "no value of %s matches the filter", t.name())
			}
		}
		list = append(list, seed)
		matched = []int{len(list) - 1}
	}
	single := t.attr
	single.MultiValued = false
	for _, i := range matched {
		m, _ := list[i].(map[string]any)
		m = clone(m).(map[string]any)
		if t.sub != nil {
			v, err := coerce(*t.sub, value, t.name()+"."+t.sub.Name, &p.ignored)
			if err != nil {
				return err
			}
			if v == nil {
				delete(m, t.sub.Name)
			} else {
				m[t.sub.Name] = v
			}
		} else {
			v, err := coerce(single, value, t.name(), &p.ignored)
			if err != nil {
				return err
			}
			nv, _ := v.(map[string]any)
			if kind == "replace" {
				m = map[string]any{}
			}
			for k, sv := range nv {
				m[k] = sv
			}
		}
		list[i] = m
	}
	if primaries(list) > 1 {
		return errorf(TypeInvalidValue, "%s: at most one value may be primary", t.name())
	}
	store(list)
	return nil
}

func primaries(list []any) int {
	n := 0
	for _, el := range list {
		if m, ok := el.(map[string]any); ok && m["primary"] == true {
			n++
		}
	}
	return n
}

// equalities reads a value filter made only of eq comparisons with strings
// or booleans joined by and (type eq "work"), as the element it describes;
// ok false for any other filter.
func equalities(e filter.Expr) (map[string]any, bool) {
	out := map[string]any{}
	var walk func(filter.Expr) bool
	walk = func(e filter.Expr) bool {
		switch e := e.(type) {
		case filter.And:
			return walk(e.Left) && walk(e.Right)
		case filter.Compare:
			if e.Op != filter.Eq || len(e.Path) != 1 {
				return false
			}
			switch e.Value.Kind {
			case filter.String:
				out[e.Path[0]] = e.Value.Str
			case filter.Bool:
				out[e.Path[0]] = e.Value.Bool
			default:
				return false
			}
			return true
		}
		return false
	}
	if !walk(e) {
		return nil, false
	}
	return out, true
}
