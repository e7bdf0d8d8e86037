package filter

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/fault"
)

// Engine names a SQL database engine.
type Engine uint8

// The supported engines.
const (
	SQLite     Engine = iota + 1 // json_extract(body, '$.a.b')
	PostgreSQL                   // body #>> '{a,b}' on a jsonb column
)

// Dialect says how to write SQL for one store.
type Dialect struct {
	Engine Engine
	// FirstArg is the number of the first placeholder ($N, which both
	// engines read), for fragments placed after other parameters ($1
	// tenant, $2 user, ...); 0 means 1.
	FirstArg int
	// Body is the column holding the event's JSON (jsonb for PostgreSQL);
	// "" means "body".
	Body string
}

// SQL compiles e into a boolean SQL expression for a WHERE clause, with its
// arguments in placeholder order. Paths found in cols (key: dotted path such
// as "event_type_id"; value: a column name such as "type_id") use that
// column, so the store's indexes serve them; other paths read the JSON body.
//
// User input never enters the SQL text: values become arguments, and paths,
// column names and the body column are checked against
// [A-Za-z_][A-Za-z0-9_]* (columns may be qualified once, t.col) before use.
//
// The result agrees with Match on the stored body when the store keeps:
//   - in each column of cols, the attribute's string value as text, NULL
//     when absent (so a number or boolean literal never matches a column);
//   - every date-time in TimeLayout, as the events package writes them.
//     Date-time literals are rewritten to TimeLayout for comparisons, so
//     text order is time order; attributes that hold date-times without
//     being date-time fields of the schema compare as text and can differ
//     from Match.
//
// Every compiled comparison is two-valued (never NULL), so not, and and or
// behave as in Match. Comparisons with arrays and objects never match. co,
// sw and ew are case-sensitive in both engines: PostgreSQL uses LIKE with
// %, _ and \ escaped; SQLite uses instr and substr, because its LIKE ignores
// ASCII case. PostgreSQL orders text with COLLATE "C" (byte order), as Match
// does.
func SQL(e Expr, d Dialect, cols map[string]string) (where string, args []any, err error) {
	var cc map[string]Column
	if len(cols) > 0 {
		cc = make(map[string]Column, len(cols))
		for path, col := range cols {
			cc[path] = Column{Name: col}
		}
	}
	return SQLColumns(e, d, cc)
}

// Column is a table column that holds one attribute, for SQLColumns.
type Column struct {
	// Name is the column, optionally qualified once (t.col).
	Name string
	// Kind is the column's type: String (the zero Kind, Null, reads as
	// String: text, NULL when absent) or Bool (a boolean: SQLite's 0 and 1,
	// PostgreSQL's boolean). A literal of another kind never matches it.
	Kind Kind
	// Folded: the column holds the value with ASCII letters folded (see
	// Fold), so a comparison with Fold compares it with the folded literal
	// as it is, and an index on it serves the comparison.
	Folded bool
	// Convert, when set, turns a string literal into the column's stored
	// form (an id kept as bytes); a literal it refuses matches nothing.
	// Such a column takes eq, ne and pr only (Attribute.EqOnly); other
	// comparisons match nothing.
	Convert func(string) (any, bool)
	// EmptyIsNull: the column holds "" where the attribute is absent
	// (NOT NULL columns with a default), so "" reads as absent.
	EmptyIsNull bool
}

// SQLColumns is SQL with typed columns: cols maps dotted paths to the
// columns that hold them. SQL's contract holds, with Bool columns compared
// with true and false, and Has compiled to EXISTS over the elements of the
// JSON array (json_each, jsonb_array_elements); Has paths never name a
// column. Comparisons with Fold compare lower(value) with the folded
// literal.
func SQLColumns(e Expr, d Dialect, cols map[string]Column) (where string, args []any, err error) {
	if d.Engine != SQLite && d.Engine != PostgreSQL {
		return "", nil, fault.E(fault.Op("filter.SQL"), fault.Internal, fmt.Sprintf("unknown engine %d", d.Engine))
	}
	if d.Body == "" {
		d.Body = "body"
	}
	if d.FirstArg <= 0 {
		d.FirstArg = 1
	}
	if !validColumn(d.Body) {
		return "", nil, fault.E(fault.Op("filter.SQL"), fault.Internal, fmt.Sprintf("invalid body column %q", d.Body))
	}
	for path, col := range cols {
		if !validColumn(col.Name) {
			return "", nil, fault.E(fault.Op("filter.SQL"), fault.Internal, fmt.Sprintf("invalid column %q for %q", col.Name, path))
		}
		if col.Kind != Null && col.Kind != String && col.Kind != Bool {
			return "", nil, fault.E(fault.Op("filter.SQL"), fault.Internal, fmt.Sprintf("column %q: kind %d", col.Name, col.Kind))
		}
	}
	c := &compiler{d: d, cols: cols}
	var b strings.Builder
	if err := c.expr(&b, e); err != nil {
		return "", nil, err
	}
	return b.String(), c.args, nil
}

type compiler struct {
	d     Dialect
	cols  map[string]Column
	args  []any
	elems int // Has subqueries so far, naming their element aliases
	// twoValued is set by compare when its leaf is never NULL, so that
	// expr leaves out the COALESCE that would keep an index from serving
	// it (userName eq on a folded column).
	twoValued bool
}

// arg adds a parameter and returns its placeholder.
func (c *compiler) arg(v any) string {
	c.args = append(c.args, v)
	return "$" + strconv.Itoa(c.d.FirstArg+len(c.args)-1)
}

func (c *compiler) expr(b *strings.Builder, e Expr) error {
	switch e := e.(type) {
	case And:
		return c.binary(b, e.Left, " AND ", e.Right)
	case Or:
		return c.binary(b, e.Left, " OR ", e.Right)
	case Not:
		b.WriteString("NOT (")
		if err := c.expr(b, e.X); err != nil {
			return err
		}
		b.WriteByte(')')
		return nil
	case Compare:
		c.twoValued = false
		leaf, err := c.compare(e)
		if err != nil {
			return err
		}
		if c.twoValued {
			b.WriteString(leaf)
			return nil
		}
		b.WriteString("COALESCE(" + leaf + ", FALSE)")
		return nil
	case Has:
		return c.has(b, e)
	}
	return fault.E(fault.Op("filter.SQL"), fault.Internal, fmt.Sprintf("unknown expression %T", e))
}

func (c *compiler) binary(b *strings.Builder, l Expr, op string, r Expr) error {
	b.WriteByte('(')
	if err := c.expr(b, l); err != nil {
		return err
	}
	b.WriteString(op)
	if err := c.expr(b, r); err != nil {
		return err
	}
	b.WriteByte(')')
	return nil
}

// access is how one attribute is read: its text (or SQL scalar) value, and
// a condition that it is of a given JSON kind.
type access struct {
	value   string // SQLite: json_extract(...) or column; PostgreSQL: (body #>> ...) or column
	jsonb   string // PostgreSQL: (body #> ...); empty for columns
	jtype   string // json_type(...) / jsonb_typeof(...); empty for columns
	jargs   string // SQLite: the arguments body, '$.a.b' of the JSON functions
	column  bool
	col     Column // the column, when column
	fold    bool   // value is folded: so are the canonical date-times it is compared with
	sqlite  bool
	numeric string // PostgreSQL: the value cast to numeric when it is a number
}

func (c *compiler) access(p Path) (access, error) {
	for _, name := range p {
		if !validName(name) { // Parse guarantees it; hand-built trees may not
			return access{}, fault.E(fault.Op("filter.SQL"), fault.Invalid, fault.Field("filter"), fmt.Sprintf("filter: invalid attribute path %q", p.String()))
		}
	}
	if len(p) == 0 {
		return access{}, fault.E(fault.Op("filter.SQL"), fault.Invalid, fault.Field("filter"), "filter: empty attribute path")
	}
	a := access{sqlite: c.d.Engine == SQLite}
	if col, ok := c.cols[p.String()]; ok {
		a.value, a.column, a.col = col.Name, true, col
		if col.EmptyIsNull && col.Kind != Bool {
			a.value = "NULLIF(" + col.Name + ", '')"
		}
		return a, nil
	}
	if a.sqlite {
		jp := "'$." + strings.Join(p, ".") + "'"
		a.value = "json_extract(" + c.d.Body + ", " + jp + ")"
		a.jargs = c.d.Body + ", " + jp
		a.jtype = "json_type(" + a.jargs + ")"
		return a, nil
	}
	pp := "'{" + strings.Join(p, ",") + "}'"
	a.value = "(" + c.d.Body + " #>> " + pp + ")"
	a.jsonb = "(" + c.d.Body + " #> " + pp + ")"
	a.jtype = "jsonb_typeof(" + a.jsonb + ")"
	a.numeric = "CASE WHEN " + a.jtype + " = 'number' THEN " + a.value + "::numeric END"
	return a, nil
}

// canon is the text of a date-time as the compared value holds it.
func (a access) canon(t time.Time) string {
	if a.fold {
		return Fold(t.Format(TimeLayout))
	}
	return t.Format(TimeLayout)
}

// isKind is the condition that the attribute holds a JSON value of kind k.
func (a access) isKind(k Kind) string {
	if a.column {
		if k == String && a.col.Kind != Bool {
			return a.value + " IS NOT NULL"
		}
		return "FALSE"
	}
	switch {
	case a.sqlite && k == String:
		return a.jtype + " = 'text'"
	case a.sqlite && k == Number:
		return a.jtype + " IN ('integer', 'real')"
	case k == String:
		return a.jtype + " = 'string'"
	}
	return a.jtype + " = 'number'"
}

func (c *compiler) compare(e Compare) (string, error) {
	a, err := c.access(e.Path)
	if err != nil {
		return "", err
	}
	if a.column && (a.col.Kind == Bool || a.col.Convert != nil) {
		return c.special(a, e), nil
	}
	if e.Fold && e.Value.Kind == String {
		e.Value.Str = Fold(e.Value.Str)
		if !(a.column && a.col.Folded) {
			a.value = "lower(" + a.value + ")"
		}
		a.fold = true
	}
	switch e.Op {
	case Pr:
		return c.present(a), nil
	case Ne:
		eq, err := c.compare(Compare{Path: e.Path, Op: Eq, Value: e.Value})
		if err != nil {
			return "", err
		}
		return "NOT COALESCE(" + eq + ", FALSE)", nil
	case Eq:
		switch e.Value.Kind {
		case Null:
			switch {
			case a.column, a.sqlite:
				return a.value + " IS NULL", nil
			}
			return "COALESCE(" + a.jtype + ", 'null') = 'null'", nil
		case Bool:
			switch {
			case a.column:
				return "FALSE", nil
			case a.sqlite:
				return a.jtype + " = '" + strconv.FormatBool(e.Value.Bool) + "'", nil
			}
			return a.jsonb + " = '" + strconv.FormatBool(e.Value.Bool) + "'::jsonb", nil
		case String:
			// A date-time literal matches its canonical form (how date-time
			// fields are stored) as well as its exact text.
			cond := a.value + " = " + c.arg(e.Value.Str)
			if t, err := ParseTime(e.Value.Str); err == nil && a.canon(t) != e.Value.Str {
				cond = "(" + cond + " OR " + a.value + " = " + c.arg(a.canon(t)) + ")"
			}
			// A folded column compared as it is: "col IS NOT NULL AND col
			// = $n" is never NULL, and without COALESCE its index serves
			// it. (Only folded columns: the events' query plans rely on
			// their columns' comparisons as they are.)
			c.twoValued = a.column && a.col.Folded && a.value == a.col.Name
			return "(" + a.isKind(String) + " AND " + cond + ")", nil
		}
		return c.order(a, "=", e.Value)
	case Gt, Ge, Lt, Le:
		sym := map[Op]string{Gt: ">", Ge: ">=", Lt: "<", Le: "<="}[e.Op]
		return c.order(a, sym, e.Value)
	case Co, Sw, Ew:
		if e.Value.Kind != String {
			return "FALSE", nil
		}
		return c.text(a, e.Op, e.Value.Str), nil
	}
	return "", fault.E(fault.Op("filter.SQL"), fault.Invalid, fault.Field("filter"), fmt.Sprintf("filter: unknown operator %q", e.Op))
}

// order compiles =, >, >=, <, <= against a string or number literal.
func (c *compiler) order(a access, sym string, v Value) (string, error) {
	switch v.Kind {
	case String:
		s := v.Str
		if t, err := ParseTime(s); err == nil {
			s = a.canon(t)
		}
		lhs := a.value
		if !a.sqlite && sym != "=" {
			lhs += ` COLLATE "C"`
		}
		return "(" + a.isKind(String) + " AND " + lhs + " " + sym + " " + c.arg(s) + ")", nil
	case Number:
		if a.column {
			return "FALSE", nil
		}
		if a.sqlite {
			return "(" + a.isKind(Number) + " AND " + a.value + " " + sym + " " + c.arg(v.Num) + ")", nil
		}
		return "(" + a.numeric + ") " + sym + " " + c.arg(v.Num), nil
	}
	return "FALSE", nil
}

// text compiles co, sw and ew, case-sensitively.
func (c *compiler) text(a access, op Op, s string) string {
	typ := a.isKind(String)
	if s == "" {
		return typ // every string contains, starts and ends with ""
	}
	if !a.sqlite {
		pat := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
		switch op {
		case Co:
			pat = "%" + pat + "%"
		case Sw:
			pat += "%"
		case Ew:
			pat = "%" + pat
		}
		return "(" + typ + " AND " + a.value + ` LIKE ` + c.arg(pat) + ` ESCAPE '\')`
	}
	n := utf8.RuneCountInString(s)
	switch op {
	case Co:
		return "(" + typ + " AND instr(" + a.value + ", " + c.arg(s) + ") > 0)"
	case Sw:
		return "(" + typ + " AND substr(" + a.value + ", 1, " + c.arg(n) + ") = " + c.arg(s) + ")"
	}
	return "(" + typ + " AND substr(" + a.value + ", " + c.arg(-n) + ") = " + c.arg(s) + ")"
}

// special compiles comparisons on Bool columns and on columns with Convert.
func (c *compiler) special(a access, e Compare) string {
	switch e.Op {
	case Pr:
		return a.value + " IS NOT NULL"
	case Ne:
		return "NOT COALESCE(" + c.special(a, Compare{Path: e.Path, Op: Eq, Value: e.Value}) + ", FALSE)"
	case Eq:
		switch {
		case e.Value.Kind == Null:
			return a.value + " IS NULL"
		case a.col.Kind == Bool && e.Value.Kind == Bool:
			return a.value + " = " + strings.ToUpper(strconv.FormatBool(e.Value.Bool))
		case a.col.Convert != nil && e.Value.Kind == String:
			if v, ok := a.col.Convert(e.Value.Str); ok {
				return a.value + " = " + c.arg(v)
			}
		}
	}
	return "FALSE"
}

// has compiles Has to EXISTS over the elements of the array at its path
// that are objects, with the filter reading each element as its body.
func (c *compiler) has(b *strings.Builder, e Has) error {
	a, err := c.access(e.Path)
	if err != nil {
		return err
	}
	if a.column {
		return fault.E(fault.Op("filter.SQL"), fault.Internal, fmt.Sprintf("value path %q names a column", e.Path.String()))
	}
	c.elems++
	alias := "je" + strconv.Itoa(c.elems)
	saveBody, saveCols := c.d.Body, c.cols
	defer func() { c.d.Body, c.cols = saveBody, saveCols }()
	if a.sqlite {
		b.WriteString("EXISTS (SELECT 1 FROM json_each(" + a.jargs + ") AS " + alias +
			" WHERE " + a.jtype + " = 'array' AND " + alias + ".type = 'object' AND ")
		c.d.Body = alias + ".value"
	} else {
		b.WriteString("EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN " + a.jtype + " = 'array' THEN " + a.jsonb +
			" END) AS " + alias + "(v) WHERE jsonb_typeof(" + alias + ".v) = 'object' AND ")
		c.d.Body = alias + ".v"
	}
	c.cols = nil
	b.WriteByte('(')
	if err := c.expr(b, e.Filter); err != nil {
		return err
	}
	b.WriteString("))")
	return nil
}

// present compiles pr: not absent, null, "", [] or {}.
func (c *compiler) present(a access) string {
	if a.column {
		return "(" + a.value + " IS NOT NULL AND " + a.value + " <> '')"
	}
	if a.sqlite {
		return "(" + a.jtype + " IS NOT NULL AND CASE " + a.jtype +
			" WHEN 'null' THEN FALSE" +
			" WHEN 'text' THEN " + a.value + " <> ''" +
			" WHEN 'array' THEN json_array_length(" + a.jargs + ") > 0" +
			" WHEN 'object' THEN " + a.value + " <> '{}'" +
			" ELSE TRUE END)"
	}
	return "(" + a.jtype + " IS NOT NULL AND CASE " + a.jtype +
		" WHEN 'null' THEN FALSE" +
		" WHEN 'string' THEN " + a.value + " <> ''" +
		" WHEN 'array' THEN jsonb_array_length(" + a.jsonb + ") > 0" +
		" WHEN 'object' THEN " + a.jsonb + " <> '{}'::jsonb" +
		" ELSE TRUE END)"
}

// validColumn accepts an identifier, optionally qualified once (t.col).
func validColumn(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return false
	}
	for _, p := range parts {
		if !validName(p) {
			return false
		}
	}
	return true
}
