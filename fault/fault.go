// Package fault defines the error kinds shared by every area of the platform.
// Services return errors built with E; the HTTP layer maps a kind to a status
// in one table. Only the Message of an error is ever shown to a client, and
// errors of kind Internal never show theirs.
package fault

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an error.
type Kind uint8

// The kinds. Stores document which kind each method returns.
const (
	Internal        Kind = iota // unexpected failure; details are logged, never shown
	Invalid                     // the request is malformed or breaks a rule (400)
	Unauthenticated             // missing or bad credentials (401)
	Forbidden                   // authenticated but not allowed (403)
	NotFound                    // the resource does not exist or is not visible (404)
	Conflict                    // the state does not allow it, or it exists already (409)
	TooLarge                    // the request body is too large (413)
	TooManyRequests             // throttled (429)
	Unavailable                 // a dependency is down; try again (503)
	Expired                     // a link or grant has expired (403 for signed URLs)
)

var kindNames = [...]string{
	Internal: "internal", Invalid: "invalid", Unauthenticated: "unauthenticated",
	Forbidden: "forbidden", NotFound: "not found", Conflict: "conflict",
	TooLarge: "too large", TooManyRequests: "too many requests",
	Unavailable: "unavailable", Expired: "expired",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Error is the platform's error value.
type Error struct {
	Op      string // operation, e.g. "identity.Login"
	Kind    Kind
	Message string // safe to show to the client
	Field   string // the request field at fault, when there is one
	// Code names the refusal more precisely than Kind in bodies that carry
	// a machine-readable code (area A's codeDesc, e.g. MFA_REQUIRED);
	// "" means the kind's own code.
	Code string
	Err  error // the underlying cause; never shown to the client
}

// Msg is a client-facing message given to E.
type Msg string

// Field names the request field an error is about.
type Field string

// Op names the operation for E.
type Op string

// Code is a machine-readable code given to E (Error.Code).
type Code string

// E builds an *Error from its arguments, in any order: an Op, a Kind, a Msg
// (or a plain string, taken as the message), a Field, and an error (the
// cause). When the cause is itself an *Error and no kind is given, its kind
// and message are inherited.
func E(args ...any) error {
	e := &Error{}
	kindSet := false
	for _, a := range args {
		switch a := a.(type) {
		case Op:
			e.Op = string(a)
		case Kind:
			e.Kind = a
			kindSet = true
		case Msg:
			e.Message = string(a)
		case string:
			e.Message = a
		case Field:
			e.Field = string(a)
		case Code:
			e.Code = string(a)
		case *Error:
			e.Err = a
		case error:
			e.Err = a
		case nil:
		default:
			panic(fmt.Sprintf("fault.E: bad argument of type %T", a))
		}
	}
	var inner *Error
	if errors.As(e.Err, &inner) {
		if !kindSet {
			e.Kind = inner.Kind
		}
		if e.Message == "" {
			e.Message = inner.Message
		}
		if e.Field == "" {
			e.Field = inner.Field
		}
		if e.Code == "" && !kindSet {
			e.Code = inner.Code
		}
	}
	return e
}

// Errorf is shorthand for an error of kind k with a formatted public message.
func Errorf(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.String())
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of the outermost *Error in err's chain, or Internal
// for any other non-nil error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err is an *Error of kind k.
func Is(k Kind, err error) bool {
	if err == nil {
		return false
	}
	return KindOf(err) == k
}

// MessageOf returns the client-facing message of err, or "" when there is
// none or the error is internal.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Kind != Internal {
		return e.Message
	}
	return ""
}

// FieldOf returns the request field err is about, or "".
func FieldOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// CodeOf returns the machine-readable code of the outermost *Error in
// err's chain (Error.Code; E gives a wrapper without a kind of its own the
// code of what it wraps), or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
