package filter

import (
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/fault"
)

// SCIM mode. The events query names JSON keys exactly; a SCIM resource's
// filter (RFC 7644 §3.4.2.2) and PATCH paths (§3.5.2) also take:
//
//	attrPath  = [URI ":"] ATTRNAME *1subAttr   ; urn:…:enterprise:2.0:User:employeeNumber
//	valuePath = attrPath "[" valFilter "]"     ; emails[type eq "work"]
//	ATTRNAME  = ALPHA *(ALPHA / DIGIT / "-" / "_"), or "$ref"
//
// ParseSCIM keeps the names as written; Schema.Resolve then matches them
// to a resource's attributes ignoring case, drops the core schema's URN,
// rewrites a comparison on a multi-valued attribute into Has (any element
// matches), marks the attributes whose strings compare ignoring case
// (caseExact false), and maps every attribute to where a store keeps it.

// Has matches when an element of the multi-valued attribute at Path (a
// JSON array of objects) matches Filter, whose paths are relative to the
// element. It is what a value path (emails[type eq "work"]) parses to, and
// what a comparison on a multi-valued attribute (emails.value eq "x")
// resolves to.
type Has struct {
	Path   Path
	Filter Expr
}

func (Has) expr() {}

// String implements Expr.
func (e Has) String() string { return joinSCIM(e.Path) + "[" + e.Filter.String() + "]" }

// ParseSCIM parses a filter of a SCIM resource: the grammar of Parse plus
// URN-prefixed paths, value paths and the characters of SCIM attribute
// names. Names are returned as written; see Schema.Resolve. Value paths do
// not nest.
func ParseSCIM(s string) (Expr, error) { return parse(s, true) }

// scimPath splits a SCIM attribute path: an optional URN (everything up to
// the last colon, which must start with "urn:") as the first element, then
// the attribute name and at most one sub-attribute name. Inside a value
// path's brackets only a sub-attribute name is allowed.
func (p *parser) scimPath(s string, pos int) (Path, error) {
	if p.inVal {
		if !validSCIMName(s) {
			return nil, syntaxErr(pos, "invalid sub-attribute name %q in a value filter", s)
		}
		return Path{s}, nil
	}
	return parseSCIMPath(s, pos)
}

func parseSCIMPath(s string, pos int) (Path, error) {
	var path Path
	rest := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		urn := s[:i]
		if len(urn) <= len("urn:") || !strings.EqualFold(urn[:4], "urn:") || strings.Contains(urn, "::") {
			return nil, syntaxErr(pos, "invalid attribute path %q: a schema prefix is a URN (urn:…)", s)
		}
		path, rest = Path{urn}, s[i+1:]
	}
	names := strings.Split(rest, ".")
	if len(names) > 2 {
		return nil, syntaxErr(pos, "invalid attribute path %q: at most an attribute and one sub-attribute", s)
	}
	for _, n := range names {
		if !validSCIMName(n) {
			return nil, syntaxErr(pos, "invalid attribute path %q: a name is a letter followed by letters, digits, - or _", s)
		}
	}
	return append(path, names...), nil
}

// validSCIMName checks RFC 7643's ATTRNAME, plus "$ref" (§2.3.7).
func validSCIMName(s string) bool {
	if s == "$ref" {
		return true
	}
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlpha(c) && !isDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// valueFilter parses "[" valFilter "]" with the current token on "[".
func (p *parser) valueFilter(path Path) (Expr, error) {
	open := p.tok.pos
	if p.inVal {
		return nil, syntaxErr(open, "value paths do not nest")
	}
	p.depth++
	if p.depth > MaxDepth {
		return nil, syntaxErr(open, "filter nests more than %d deep", MaxDepth)
	}
	p.inVal = true
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tRBracket {
		return nil, syntaxErr(p.tok.pos, "empty value filter")
	}
	f, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tRBracket {
		return nil, syntaxErr(p.tok.pos, `expected "]" to close "[" at position %d, found %s`, open+1, p.tok.describe())
	}
	p.inVal = false
	p.depth--
	return f, p.advance()
}

// PatchPath is the path of a SCIM PATCH operation (RFC 7644 §3.5.2):
// attrPath, or valuePath with an optional sub-attribute:
// members[value eq "u1"], emails[type eq "work"].value.
type PatchPath struct {
	Attr   Path   // [URN] attribute [sub-attribute], as written
	Filter Expr   // the value filter, nil without one
	Sub    string // the sub-attribute after the value filter, "" without one
}

// String gives the path as written in a PATCH operation.
func (p PatchPath) String() string {
	s := joinSCIM(p.Attr)
	if p.Filter != nil {
		s += "[" + p.Filter.String() + "]"
	}
	if p.Sub != "" {
		s += "." + p.Sub
	}
	return s
}

// joinSCIM prints a path: a SCIM path's URN, if any, joined by a colon
// (the names of Parse's paths never hold one).
func joinSCIM(p Path) string {
	if len(p) > 0 && strings.Contains(p[0], ":") {
		return p[0] + ":" + strings.Join(p[1:], ".")
	}
	return strings.Join(p, ".")
}

// ParsePatchPath parses a PATCH operation's path. Errors are *SyntaxError
// (SCIM's invalidPath).
func ParsePatchPath(s string) (PatchPath, error) {
	p, err := newParser(s, true)
	if err != nil {
		return PatchPath{}, err
	}
	if p.tok.kind != tWord {
		return PatchPath{}, syntaxErr(p.tok.pos, "expected attribute path, found %s", p.tok.describe())
	}
	attr, err := parseSCIMPath(p.tok.text, p.tok.pos)
	if err != nil {
		return PatchPath{}, err
	}
	if err := p.advance(); err != nil {
		return PatchPath{}, err
	}
	out := PatchPath{Attr: attr}
	if p.tok.kind == tLBracket {
		if len(attr) > 2 || len(attr) == 2 && !strings.Contains(attr[0], ":") {
			return PatchPath{}, syntaxErr(p.tok.pos, "a value filter follows an attribute, not a sub-attribute")
		}
		if out.Filter, err = p.valueFilter(attr); err != nil {
			return PatchPath{}, err
		}
		if p.tok.kind == tWord && strings.HasPrefix(p.tok.text, ".") {
			if sub := p.tok.text[1:]; validSCIMName(sub) {
				out.Sub = sub
				if err := p.advance(); err != nil {
					return PatchPath{}, err
				}
			}
		}
	}
	if p.tok.kind != tEOF {
		return PatchPath{}, syntaxErr(p.tok.pos, "unexpected %s after the path", p.tok.describe())
	}
	return out, nil
}

// Attribute describes one attribute a SCIM filter may name.
type Attribute struct {
	// Name is the canonical name: "userName", "name.givenName",
	// "emails", "emails.value"; an extension's attributes are prefixed
	// by its URN and a colon.
	Name string
	// Store is where a stored document keeps the attribute: for a
	// sub-attribute of a multi-valued attribute, its place inside one
	// element. Each element is [A-Za-z_][A-Za-z0-9_]* (the SQL compiler
	// puts it in SQL text).
	Store Path
	// MultiValued: a JSON array of objects; a comparison matches when an
	// element matches.
	MultiValued bool
	// CaseExact: strings compare exactly; otherwise ignoring the case of
	// ASCII letters.
	CaseExact bool
	// Unfilterable attributes (password) are refused in filters.
	Unfilterable bool
	// EqOnly attributes (ids kept in a binary form) take only eq, ne
	// and pr.
	EqOnly bool
}

// Schema is the set of attributes of one SCIM resource type, looked up
// ignoring case. Build it with NewSchema; it is safe for concurrent use.
type Schema struct {
	urn   string
	attrs map[string]Attribute // by lower-case canonical name
}

// NewSchema returns the schema of a resource whose core schema URN is urn
// (an optional prefix of its core attributes).
func NewSchema(urn string, attrs ...Attribute) *Schema {
	s := &Schema{urn: urn, attrs: make(map[string]Attribute, len(attrs))}
	for _, a := range attrs {
		s.attrs[strings.ToLower(a.Name)] = a
	}
	return s
}

// Key is the lower-case canonical name of a parsed SCIM path, without the
// core schema's URN.
func (s *Schema) Key(p Path) string {
	if len(p) > 0 && strings.Contains(p[0], ":") {
		if strings.EqualFold(p[0], s.urn) {
			return strings.ToLower(strings.Join(p[1:], "."))
		}
		return strings.ToLower(p[0] + ":" + strings.Join(p[1:], "."))
	}
	return strings.ToLower(strings.Join(p, "."))
}

// Lookup finds the attribute a parsed SCIM path names, ignoring case.
func (s *Schema) Lookup(p Path) (Attribute, bool) {
	a, ok := s.attrs[s.Key(p)]
	return a, ok
}

// parent returns the multi-valued attribute whose sub-attribute key names.
func (s *Schema) parent(key string) (Attribute, bool) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 || strings.LastIndexByte(key, ':') > i {
		return Attribute{}, false
	}
	a, ok := s.attrs[key[:i]]
	return a, ok && a.MultiValued
}

func resolveErr(format string, args ...any) error {
	return fault.E(fault.Op("filter.Resolve"), fault.Invalid, fault.Field("filter"), "filter: "+fmt.Sprintf(format, args...))
}

// Resolve maps a tree from ParseSCIM onto the schema: paths become Store
// paths, comparisons on attributes that are not caseExact fold case,
// comparisons on a multi-valued attribute (or its sub-attributes) become
// Has, and a bare multi-valued attribute compares its "value"
// sub-attribute. Unknown and unfilterable attributes are a fault.Invalid
// error (SCIM's invalidFilter).
func (s *Schema) Resolve(e Expr) (Expr, error) { return s.resolve(e, "") }

// resolve resolves e; inside a value path, within is the multi-valued
// attribute's key.
func (s *Schema) resolve(e Expr, within string) (Expr, error) {
	switch e := e.(type) {
	case And:
		l, err := s.resolve(e.Left, within)
		if err != nil {
			return nil, err
		}
		r, err := s.resolve(e.Right, within)
		if err != nil {
			return nil, err
		}
		return And{l, r}, nil
	case Or:
		l, err := s.resolve(e.Left, within)
		if err != nil {
			return nil, err
		}
		r, err := s.resolve(e.Right, within)
		if err != nil {
			return nil, err
		}
		return Or{l, r}, nil
	case Not:
		x, err := s.resolve(e.X, within)
		if err != nil {
			return nil, err
		}
		return Not{x}, nil
	case Has:
		if within != "" {
			return nil, resolveErr("value paths do not nest")
		}
		key := s.Key(e.Path)
		a, ok := s.attrs[key]
		if !ok || !a.MultiValued || a.Unfilterable {
			return nil, resolveErr("%q is not a filterable multi-valued attribute", joinSCIM(e.Path))
		}
		f, err := s.resolve(e.Filter, key)
		if err != nil {
			return nil, err
		}
		return Has{Path: a.Store, Filter: f}, nil
	case Compare:
		key := s.Key(e.Path)
		if within != "" {
			if len(e.Path) != 1 {
				return nil, resolveErr("%q: a value filter names sub-attributes", joinSCIM(e.Path))
			}
			key = within + "." + key
		}
		a, ok := s.attrs[key]
		if !ok {
			return nil, resolveErr("unknown attribute %q", joinSCIM(e.Path))
		}
		if a.Unfilterable {
			return nil, resolveErr("attribute %q cannot be filtered", a.Name)
		}
		if a.EqOnly && e.Op != Eq && e.Op != Ne && e.Op != Pr {
			return nil, resolveErr("attribute %q takes only eq, ne and pr", a.Name)
		}
		if a.MultiValued {
			if e.Op == Pr {
				return Compare{Path: a.Store, Op: Pr}, nil
			}
			v, ok := s.attrs[key+".value"]
			if !ok {
				return nil, resolveErr("attribute %q: compare one of its sub-attributes", a.Name)
			}
			return Has{Path: a.Store, Filter: Compare{Path: v.Store, Op: e.Op, Value: e.Value, Fold: !v.CaseExact}}, nil
		}
		c := Compare{Path: a.Store, Op: e.Op, Value: e.Value, Fold: !a.CaseExact}
		if within == "" {
			if m, ok := s.parent(key); ok {
				return Has{Path: m.Store, Filter: c}, nil
			}
		}
		return c, nil
	}
	return nil, resolveErr("unknown expression %T", e)
}

// Fold lowers the ASCII letters of s: the case folding of attributes that
// are not caseExact, the same in Match, in SQL (SQLite's lower() folds
// ASCII only) and in keys a store keeps folded.
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
