package filter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
)

func path(s string) filter.Path { return strings.Split(s, ".") }
func str(s string) filter.Value { return filter.Value{Kind: filter.String, Str: s} }
func num(f float64) filter.Value {
	return filter.Value{Kind: filter.Number, Num: f}
}
func boolean(b bool) filter.Value { return filter.Value{Kind: filter.Bool, Bool: b} }

var null = filter.Value{Kind: filter.Null}

func c(p string, op filter.Op, v filter.Value) filter.Expr {
	return filter.Compare{Path: path(p), Op: op, Value: v}
}
func pr(p string) filter.Expr { return filter.Compare{Path: path(p), Op: filter.Pr} }

var (
	a = c("a", filter.Eq, num(1))
	b = c("b", filter.Eq, num(2))
	d = c("d", filter.Eq, num(3))
	e = c("e", filter.Eq, num(4))
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want filter.Expr
	}{
		// Every operator.
		{`username eq "alice"`, c("username", filter.Eq, str("alice"))},
		{`username ne "alice"`, c("username", filter.Ne, str("alice"))},
		{`username co "li"`, c("username", filter.Co, str("li"))},
		{`username sw "al"`, c("username", filter.Sw, str("al"))},
		{`username ew "ce"`, c("username", filter.Ew, str("ce"))},
		{`count gt 1`, c("count", filter.Gt, num(1))},
		{`count ge 1`, c("count", filter.Ge, num(1))},
		{`count lt 1`, c("count", filter.Lt, num(1))},
		{`count le 1`, c("count", filter.Le, num(1))},
		{`timestamp gt "2024-01-01T00:00:00Z"`, c("timestamp", filter.Gt, str("2024-01-01T00:00:00Z"))},
		{`end_user.segment pr`, pr("end_user.segment")},
		// Case-insensitive operators, keywords and literals; case-sensitive paths.
		{`Username EQ "x"`, c("Username", filter.Eq, str("x"))},
		{`a Eq 1 AND b eQ 2 Or d eq 3`, filter.Or{filter.And{a, b}, d}},
		{`x eq TRUE`, c("x", filter.Eq, boolean(true))},
		{`x eq False`, c("x", filter.Eq, boolean(false))},
		{`x eq NULL`, c("x", filter.Eq, null)},
		{`NOT (a eq 1)`, filter.Not{a}},
		{`x PR`, pr("x")},
		// Literals.
		{`x eq -1.5e3`, c("x", filter.Eq, num(-1500))},
		{`x eq 0`, c("x", filter.Eq, num(0))},
		{`x eq 0.25`, c("x", filter.Eq, num(0.25))},
		{`x eq "a\"b\\c\/d\n\t\u00e9\ud83d\ude00"`, c("x", filter.Eq, str("a\"b\\c/d\n\té😀"))},
		{`x eq ""`, c("x", filter.Eq, str(""))},
		{`x eq "and or not ( )"`, c("x", filter.Eq, str("and or not ( )"))},
		{`x eq "é"`, c("x", filter.Eq, str("é"))},
		// Paths.
		{`processing_purpose.description.locale eq "en"`, c("processing_purpose.description.locale", filter.Eq, str("en"))},
		{`_a1.B_2 pr`, pr("_a1.B_2")},
		// Keywords as attribute names.
		{`not eq 1`, c("not", filter.Eq, num(1))},
		{`and eq 1 and or eq 2`, filter.And{c("and", filter.Eq, num(1)), c("or", filter.Eq, num(2))}},
		// Precedence: not > and > or; both left-associative.
		{`a eq 1 or b eq 2 and d eq 3`, filter.Or{a, filter.And{b, d}}},
		{`a eq 1 and b eq 2 or d eq 3`, filter.Or{filter.And{a, b}, d}},
		{`a eq 1 and b eq 2 and d eq 3`, filter.And{filter.And{a, b}, d}},
		{`a eq 1 or b eq 2 or d eq 3`, filter.Or{filter.Or{a, b}, d}},
		{`not (a eq 1) and b eq 2`, filter.And{filter.Not{a}, b}},
		{`a eq 1 or not (b eq 2) and d eq 3`, filter.Or{a, filter.And{filter.Not{b}, d}}},
		{`a eq 1 and b eq 2 or d eq 3 and e eq 4`, filter.Or{filter.And{a, b}, filter.And{d, e}}},
		// Parentheses.
		{`(a eq 1 or b eq 2) and d eq 3`, filter.And{filter.Or{a, b}, d}},
		{`a eq 1 and (b eq 2 or d eq 3)`, filter.And{a, filter.Or{b, d}}},
		{`((a eq 1))`, a},
		{`not ((a eq 1 or b eq 2))`, filter.Not{filter.Or{a, b}}},
		{`not(a eq 1)`, filter.Not{a}},
		{"\t a eq 1 \n", a},
		{`(a eq 1)and(b eq 2)`, filter.And{a, b}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := filter.Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("AST (-want +got):\n%s", diff)
			}
			// Printing and parsing again gives the same tree.
			again, err := filter.Parse(got.String())
			if err != nil {
				t.Fatalf("reparse of %q: %v", got.String(), err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("reparse of %q (-first +second):\n%s", got.String(), diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	long := `a eq "` + strings.Repeat("x", filter.MaxLength) + `"`
	deep := strings.Repeat("(", filter.MaxDepth+1) + "a pr" + strings.Repeat(")", filter.MaxDepth+1)
	tests := []struct {
		in, want string
	}{
		{``, `filter: position 1: empty filter`},
		{`   `, `filter: position 4: empty filter`},
		{`username`, `filter: position 9: expected operator, found end of filter`},
		{`end_user.segment foo "x"`, `filter: position 18: expected operator, found "foo"`},
		{`a eq`, `filter: position 5: expected value (string, number, true, false or null), found end of filter`},
		{`a eq bob`, `filter: position 6: expected value (string, number, true, false or null), found "bob"`},
		{`a eq 1 b eq 2`, `filter: position 8: expected "and", "or" or end of filter, found "b"`},
		{`a eq 1 and`, `filter: position 11: expected attribute path or "(", found end of filter`},
		{`a eq 1 or or b eq 1`, `filter: position 14: expected operator, found "b"`},
		{`(a eq 1`, `filter: position 8: expected ")" to close "(" at position 1, found end of filter`},
		{`a eq 1)`, `filter: position 7: unbalanced ")"`},
		{`()`, `filter: position 2: empty parentheses`},
		{`not a eq 1`, `filter: position 5: expected operator, found "a"`},
		{`a eq "abc`, `filter: position 6: unterminated string`},
		{`a eq "\x"`, `filter: position 6: invalid string escape`},
		{"a eq \"a\tb\"", `filter: position 8: control character in string`},
		{`a eq 01`, `filter: position 6: invalid number`},
		{`a eq 1.`, `filter: position 6: invalid number`},
		{`a eq -`, `filter: position 6: invalid number`},
		{`a eq 1e`, `filter: position 6: invalid number`},
		{`a eq 12abc`, `filter: position 6: invalid number`},
		{`a eq 1e999`, `filter: position 6: number out of range`},
		{`a co 1`, `filter: position 6: co needs a string value`},
		{`a sw true`, `filter: position 6: sw needs a string value`},
		{`a ew null`, `filter: position 6: ew needs a string value`},
		{`a gt true`, `filter: position 6: gt needs a string or number value`},
		{`a le null`, `filter: position 6: le needs a string or number value`},
		{`end-user eq 1`, `filter: position 1: invalid attribute path "end-user": each name is a letter or _ followed by letters, digits or _`},
		{`a..b eq 1`, `filter: position 3: invalid attribute path "a..b": each name is a letter or _ followed by letters, digits or _`},
		{`a.1b eq 1`, `filter: position 3: invalid attribute path "a.1b": each name is a letter or _ followed by letters, digits or _`},
		{`urn:x:a eq 1`, `filter: position 1: invalid attribute path "urn:x:a": each name is a letter or _ followed by letters, digits or _`},
		{`emails[type eq "work"]`, `filter: position 7: complex attribute filters ([...]) are not supported`},
		{`a eq 'x'`, `filter: position 6: unexpected character '\''`},
		{`a = 1`, `filter: position 3: unexpected character '='`},
		{"a eq \"\xff\"", `filter: position 7: invalid UTF-8`},
		{long, `filter: position 4097: filter is longer than 4096 bytes`},
		{deep, `filter: position 33: filter nests more than 32 deep`},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			got, err := filter.Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse succeeded: %v", got)
			}
			if got != nil {
				t.Errorf("Parse returned a tree with the error: %v", got)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "filter" || fault.MessageOf(err) != tt.want {
				t.Errorf("not a fault.Invalid error for field filter with the message: kind %v field %q message %q",
					fault.KindOf(err), fault.FieldOf(err), fault.MessageOf(err))
			}
			var se *filter.SyntaxError
			if !errors.As(err, &se) || se.Pos < 1 {
				t.Errorf("errors.As(*SyntaxError) = %v, %+v", errors.As(err, &se), se)
			}
		})
	}
}

func TestParseLimitsAccepted(t *testing.T) {
	deep := strings.Repeat("(", filter.MaxDepth) + "a pr" + strings.Repeat(")", filter.MaxDepth)
	if _, err := filter.Parse(deep); err != nil {
		t.Errorf("depth %d: %v", filter.MaxDepth, err)
	}
	long := `a eq "` + strings.Repeat("x", filter.MaxLength-7) + `"`
	if len(long) != filter.MaxLength {
		t.Fatalf("test string is %d bytes", len(long))
	}
	if _, err := filter.Parse(long); err != nil {
		t.Errorf("%d bytes: %v", filter.MaxLength, err)
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		in   filter.Expr
		want string
	}{
		{filter.Or{filter.And{a, b}, filter.Not{d}}, `a eq 1 and b eq 2 or not (d eq 3)`},
		{filter.And{a, filter.Or{b, d}}, `a eq 1 and (b eq 2 or d eq 3)`},
		{filter.And{filter.Or{a, b}, d}, `(a eq 1 or b eq 2) and d eq 3`},
		{filter.Or{a, filter.Or{b, d}}, `a eq 1 or (b eq 2 or d eq 3)`},
		{filter.Or{filter.Or{a, b}, d}, `a eq 1 or b eq 2 or d eq 3`},
		{filter.Or{a, filter.And{b, d}}, `a eq 1 or b eq 2 and d eq 3`},
		{filter.And{filter.And{a, b}, d}, `a eq 1 and b eq 2 and d eq 3`},
		{filter.And{a, filter.And{b, d}}, `a eq 1 and (b eq 2 and d eq 3)`},
		{filter.Not{filter.Or{a, b}}, `not (a eq 1 or b eq 2)`},
		{c("x.y", filter.Co, str("a\"<b>")), `x.y co "a\"<b>"`},
		{c("x", filter.Eq, num(1e21)), `x eq 1e+21`},
		{c("x", filter.Ne, null), `x ne null`},
		{pr("x"), `x pr`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.in.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			again, err := filter.Parse(tt.in.String())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.in, again); diff != "" {
				t.Errorf("reparse (-want +got):\n%s", diff)
			}
		})
	}
}
