package filter

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/latchkey/latchkey/fault"
)

// Limits of Parse. They bound the work and recursion spent on a query
// parameter, and the size of the SQL compiled from it.
const (
	MaxLength = 4 << 10 // bytes of filter text
	MaxDepth  = 32      // nesting of parentheses and not
)

// SyntaxError describes why a filter was refused. Parse returns it; it
// unwraps to a fault.Invalid error for the "filter" field, so the HTTP
// layer maps it like any other invalid request.
type SyntaxError struct {
	Pos int    // 1-based byte position of the offending token in the filter
	Msg string // what was expected or wrong
	err error
}

// Error gives "filter: position N: message".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("filter: position %d: %s", e.Pos, e.Msg)
}

// Unwrap returns the fault.Invalid form of the error.
func (e *SyntaxError) Unwrap() error { return e.err }

func syntaxErr(pos int, format string, args ...any) error {
	e := &SyntaxError{Pos: pos + 1, Msg: fmt.Sprintf(format, args...)}
	e.err = fault.E(fault.Op("filter.Parse"), fault.Invalid, fault.Field("filter"), e.Error())
	return e
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tLParen
	tRParen
	tWord
	tString
	tNumber
	tLBracket // SCIM mode only
	tRBracket // SCIM mode only
)

type token struct {
	kind tokKind
	pos  int    // 0-based byte offset
	text string // source text (words, numbers); decoded value (strings)
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of filter"
	case tLParen:
		return `"("`
	case tRParen:
		return `")"`
	case tString:
		return "string"
	case tNumber:
		return "number " + t.text
	case tLBracket:
		return `"["`
	case tRBracket:
		return `"]"`
	}
	if len(t.text) > 20 {
		return strconv.Quote(t.text[:20] + "...")
	}
	return strconv.Quote(t.text)
}

// lexer produces tokens on demand; the parser needs one token of look-ahead
// plus a peek at the next, for "not" used as an attribute name.
type lexer struct {
	s    string
	pos  int
	scim bool // value paths: "[" and "]" are tokens
}

func (l *lexer) next() (token, error) {
	for l.pos < len(l.s) && isSpace(l.s[l.pos]) {
		l.pos++
	}
	start := l.pos
	if l.pos >= len(l.s) {
		return token{kind: tEOF, pos: start}, nil
	}
	c := l.s[l.pos]
	switch {
	case c == '(':
		l.pos++
		return token{kind: tLParen, pos: start}, nil
	case c == ')':
		l.pos++
		return token{kind: tRParen, pos: start}, nil
	case c == '"':
		return l.string()
	case c == '-' || isDigit(c):
		return l.number()
	case c == '[' && l.scim:
		l.pos++
		return token{kind: tLBracket, pos: start}, nil
	case c == ']' && l.scim:
		l.pos++
		return token{kind: tRBracket, pos: start}, nil
	case c == '[' || c == ']':
		return token{}, syntaxErr(start, "complex attribute filters ([...]) are not supported")
	case isWordByte(c):
		for l.pos < len(l.s) && isWordByte(l.s[l.pos]) {
			l.pos++
		}
		return token{kind: tWord, pos: start, text: l.s[start:l.pos]}, nil
	}
	r, _ := utf8.DecodeRuneInString(l.s[l.pos:])
	return token{}, syntaxErr(start, "unexpected character %q", r)
}

// string reads a JSON string literal and decodes its escapes.
func (l *lexer) string() (token, error) {
	start := l.pos
	i := l.pos + 1
	for {
		if i >= len(l.s) {
			return token{}, syntaxErr(start, "unterminated string")
		}
		c := l.s[i]
		switch {
		case c == '"':
			raw := l.s[start : i+1]
			var v string
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				return token{}, syntaxErr(start, "invalid string escape")
			}
			l.pos = i + 1
			return token{kind: tString, pos: start, text: v}, nil
		case c == '\\':
			i += 2
		case c < 0x20:
			return token{}, syntaxErr(i, "control character in string")
		default:
			i++
		}
	}
}

// number reads a JSON number.
func (l *lexer) number() (token, error) {
	start := l.pos
	i := l.pos
	if l.s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(l.s) && isDigit(l.s[i]) {
			i++
			n++
		}
		return n
	}
	bad := func() (token, error) { return token{}, syntaxErr(start, "invalid number") }
	if i < len(l.s) && l.s[i] == '0' {
		i++
	} else if digits() == 0 {
		return bad()
	}
	if i < len(l.s) && l.s[i] == '.' {
		i++
		if digits() == 0 {
			return bad()
		}
	}
	if i < len(l.s) && (l.s[i] == 'e' || l.s[i] == 'E') {
		i++
		if i < len(l.s) && (l.s[i] == '+' || l.s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return bad()
		}
	}
	if i < len(l.s) && isWordByte(l.s[i]) {
		return bad()
	}
	l.pos = i
	return token{kind: tNumber, pos: start, text: l.s[start:i]}, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

// isWordByte covers names, dots, and the characters of SCIM names we refuse
// ("-", "$", ":"), so that they are reported as a bad path, not as junk.
func isWordByte(c byte) bool {
	return isAlpha(c) || isDigit(c) || c == '.' || c == '-' || c == '$' || c == ':'
}

type parser struct {
	lx    lexer
	tok   token // current token
	depth int
	scim  bool // SCIM mode: URN paths, value paths, "-" and "$ref" in names
	inVal bool // inside a value path's brackets, where paths are sub-attribute names
}

// Parse parses a SCIM filter. Errors are *SyntaxError, which unwraps to a
// fault.Invalid error whose message names the byte position, for example
// `filter: position 17: expected operator, found "foo"`.
func Parse(s string) (Expr, error) { return parse(s, false) }

func parse(s string, scim bool) (Expr, error) {
	p, err := newParser(s, scim)
	if err != nil {
		return nil, err
	}
	if p.tok.kind == tEOF {
		return nil, syntaxErr(p.tok.pos, "empty filter")
	}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		if p.tok.kind == tRParen {
			return nil, syntaxErr(p.tok.pos, `unbalanced ")"`)
		}
		return nil, syntaxErr(p.tok.pos, `expected "and", "or" or end of filter, found %s`, p.tok.describe())
	}
	return e, nil
}

// newParser checks the text's length and encoding and reads the first token.
func newParser(s string, scim bool) (*parser, error) {
	if len(s) > MaxLength {
		return nil, syntaxErr(MaxLength, "filter is longer than %d bytes", MaxLength)
	}
	if !utf8.ValidString(s) {
		i := 0
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, syntaxErr(i, "invalid UTF-8")
	}
	p := &parser{lx: lexer{s: s, scim: scim}, scim: scim}
	if err := p.advance(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) isKeyword(k string) bool {
	return p.tok.kind == tWord && strings.EqualFold(p.tok.text, k)
}

func (p *parser) or() (Expr, error) {
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("or") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.and()
		if err != nil {
			return nil, err
		}
		left = Or{left, right}
	}
	return left, nil
}

func (p *parser) and() (Expr, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("and") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.unary()
		if err != nil {
			return nil, err
		}
		left = And{left, right}
	}
	return left, nil
}

func (p *parser) unary() (Expr, error) {
	if p.isKeyword("not") {
		// "not" followed by "(" is the operator; otherwise it is an
		// attribute named not.
		save, saveTok := p.lx, p.tok
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tLParen {
			x, err := p.parens()
			if err != nil {
				return nil, err
			}
			return Not{x}, nil
		}
		p.lx, p.tok = save, saveTok
	}
	if p.tok.kind == tLParen {
		return p.parens()
	}
	return p.compare()
}

// parens parses "(" filter ")" with the current token on "(".
func (p *parser) parens() (Expr, error) {
	open := p.tok.pos
	p.depth++
	if p.depth > MaxDepth {
		return nil, syntaxErr(open, "filter nests more than %d deep", MaxDepth)
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tRParen {
		return nil, syntaxErr(p.tok.pos, "empty parentheses")
	}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tRParen {
		return nil, syntaxErr(p.tok.pos, `expected ")" to close "(" at position %d, found %s`, open+1, p.tok.describe())
	}
	p.depth--
	return e, p.advance()
}

func (p *parser) compare() (Expr, error) {
	if p.tok.kind != tWord {
		return nil, syntaxErr(p.tok.pos, `expected attribute path or "(", found %s`, p.tok.describe())
	}
	var (
		path Path
		err  error
	)
	if p.scim {
		path, err = p.scimPath(p.tok.text, p.tok.pos)
	} else {
		path, err = parsePath(p.tok.text, p.tok.pos)
	}
	if err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.scim && p.tok.kind == tLBracket {
		f, err := p.valueFilter(path)
		if err != nil {
			return nil, err
		}
		return Has{Path: path, Filter: f}, nil
	}
	if p.tok.kind != tWord {
		return nil, syntaxErr(p.tok.pos, "expected operator, found %s", p.tok.describe())
	}
	op, ok := ops[strings.ToLower(p.tok.text)]
	if !ok {
		return nil, syntaxErr(p.tok.pos, "expected operator, found %s", p.tok.describe())
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if op == Pr {
		return Compare{Path: path, Op: Pr}, nil
	}
	vpos := p.tok.pos
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	switch op {
	case Co, Sw, Ew:
		if v.Kind != String {
			return nil, syntaxErr(vpos, "%s needs a string value", op)
		}
	case Gt, Ge, Lt, Le:
		if v.Kind != String && v.Kind != Number {
			return nil, syntaxErr(vpos, "%s needs a string or number value", op)
		}
	}
	return Compare{Path: path, Op: op, Value: v}, nil
}

func (p *parser) value() (Value, error) {
	t := p.tok
	var v Value
	switch t.kind {
	case tString:
		v = Value{Kind: String, Str: t.text}
	case tNumber:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return Value{}, syntaxErr(t.pos, "number out of range")
		}
		v = Value{Kind: Number, Num: f}
	case tWord:
		switch strings.ToLower(t.text) {
		case "true":
			v = Value{Kind: Bool, Bool: true}
		case "false":
			v = Value{Kind: Bool}
		case "null":
			v = Value{Kind: Null}
		default:
			return Value{}, syntaxErr(t.pos, "expected value (string, number, true, false or null), found %s", t.describe())
		}
	default:
		return Value{}, syntaxErr(t.pos, "expected value (string, number, true, false or null), found %s", t.describe())
	}
	return v, p.advance()
}

// ParsePath checks a dotted attribute path: one or more names of the form
// [A-Za-z_][A-Za-z0-9_]* separated by single dots. The SQL compiler relies
// on it to put paths in SQL text safely.
func ParsePath(s string) (Path, error) { return parsePath(s, 0) }

func parsePath(s string, pos int) (Path, error) {
	var p Path
	off := 0
	for _, name := range strings.Split(s, ".") {
		if !validName(name) {
			return nil, syntaxErr(pos+off, "invalid attribute path %q: each name is a letter or _ followed by letters, digits or _", s)
		}
		p = append(p, name)
		off += len(name) + 1
	}
	return p, nil
}

func validName(s string) bool {
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isAlpha(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}
