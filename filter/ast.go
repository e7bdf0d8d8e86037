// Package filter parses and evaluates SCIM filter expressions (RFC 7644
// §3.4.2.2), those of the events query and those of the SCIM server, and
// compiles them to parameterised SQL for the SQLite and PostgreSQL stores.
//
// ParseSCIM, ParsePatchPath and Schema add the SCIM mode that SCIM
// resources use (see scim.go): URN paths, value paths, multi-valued
// attributes and case-insensitive attributes.
//
// Supported grammar of Parse (keywords, operators and true/false/null are
// case-insensitive; attribute paths are not, because they name JSON keys):
//
//	filter  = or
//	or      = and *("or" and)
//	and     = unary *("and" unary)
//	unary   = "not" "(" filter ")" / "(" filter ")" / attrExp
//	attrExp = path "pr" / path compOp value
//	compOp  = "eq" / "ne" / "co" / "sw" / "ew" / "gt" / "ge" / "lt" / "le"
//	path    = name *("." name)     ; name = [A-Za-z_][A-Za-z0-9_]*
//	value   = JSON string / JSON number / "true" / "false" / "null"
//
// Parse does not take complex attribute filters (emails[type eq "work"]),
// URN attribute prefixes or names containing "-" or "$": ParseSCIM does.
//
// Parse accepts at most MaxLength bytes and MaxDepth levels of parentheses
// and "not". co, sw and ew take a string; gt, ge, lt and le a string or a
// number; anything else is a syntax error, as RFC 7644 allows.
package filter

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Expr is a node of a parsed filter: And, Or, Not or Compare. Parse returns
// values of these types, never pointers, so trees compare with ==-style
// deep equality.
type Expr interface {
	// String prints the expression in filter syntax, with parentheses
	// only where needed. For a tree returned by Parse, Parse(e.String())
	// returns an equal tree, provided the printed text is within
	// MaxLength (number and escape spellings can make it longer than the
	// parsed text).
	String() string
	expr()
}

// And matches when both sides match.
type And struct{ Left, Right Expr }

// Or matches when either side matches.
type Or struct{ Left, Right Expr }

// Not matches when X does not match.
type Not struct{ X Expr }

// Compare is an attribute expression. For Op Pr, Value is the zero Value
// and unused.
type Compare struct {
	Path  Path
	Op    Op
	Value Value
	// Fold compares strings ignoring the case of ASCII letters (see Fold):
	// set by Schema.Resolve for SCIM attributes that are not caseExact,
	// never by parsing, since the text of a filter cannot say it.
	Fold bool
}

func (And) expr()     {}
func (Or) expr()      {}
func (Not) expr()     {}
func (Compare) expr() {}

// Path is a dotted attribute path, one element per JSON key:
// end_user.segment is Path{"end_user", "segment"}.
type Path []string

// String gives the dotted form, as written in a filter.
func (p Path) String() string { return strings.Join(p, ".") }

// Op is a comparison operator, in lower case.
type Op string

// The operators of RFC 7644 §3.4.2.2.
const (
	Eq Op = "eq" // equal
	Ne Op = "ne" // not equal: exactly not (eq), so it matches absent attributes
	Co Op = "co" // contains (strings)
	Sw Op = "sw" // starts with (strings)
	Ew Op = "ew" // ends with (strings)
	Gt Op = "gt" // greater than
	Ge Op = "ge" // greater than or equal
	Lt Op = "lt" // less than
	Le Op = "le" // less than or equal
	Pr Op = "pr" // present: not absent, null, "", [] or {}
)

var ops = map[string]Op{"eq": Eq, "ne": Ne, "co": Co, "sw": Sw, "ew": Ew, "gt": Gt, "ge": Ge, "lt": Lt, "le": Le, "pr": Pr}

// Kind is the JSON type of a literal.
type Kind uint8

// The literal kinds.
const (
	Null Kind = iota
	String
	Number
	Bool
)

// Value is a literal of a comparison. Only the field of its Kind is set.
type Value struct {
	Kind Kind
	Str  string
	// Num holds a number literal. Numbers are float64, as in
	// encoding/json; integers beyond 2^53 lose precision.
	Num  float64
	Bool bool
}

// String gives the literal in filter syntax: a JSON string, number,
// true, false or null.
func (v Value) String() string {
	switch v.Kind {
	case String:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v.Str) // a string always encodes
		return strings.TrimSuffix(b.String(), "\n")
	case Number:
		return strconv.FormatFloat(v.Num, 'g', -1, 64)
	case Bool:
		return strconv.FormatBool(v.Bool)
	}
	return "null"
}

// And and Or print with the parentheses precedence and left
// associativity need, and no more, so that printing never nests deeper than
// the text that was parsed.
// String implements Expr.
func (e And) String() string {
	return paren(e.Left, isOr(e.Left)) + " and " + paren(e.Right, isOr(e.Right) || isAnd(e.Right))
}

// String implements Expr.
func (e Or) String() string {
	return e.Left.String() + " or " + paren(e.Right, isOr(e.Right))
}

// String implements Expr.
func (e Not) String() string { return "not (" + e.X.String() + ")" }

// String implements Expr.
func (e Compare) String() string {
	if e.Op == Pr {
		return joinSCIM(e.Path) + " pr"
	}
	return joinSCIM(e.Path) + " " + string(e.Op) + " " + e.Value.String()
}

func paren(e Expr, need bool) string {
	if need {
		return "(" + e.String() + ")"
	}
	return e.String()
}

func isAnd(e Expr) bool { _, ok := e.(And); return ok }
func isOr(e Expr) bool  { _, ok := e.(Or); return ok }
