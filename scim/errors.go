// Package scim is the SCIM 2.0 service provider (RFC 7643, RFC 7644) of
// Latchkey, without net/http: the resource schemas, the PATCH engine that
// accepts what Okta and Microsoft Entra ID send, and the mapping between
// SCIM resources and Latchkey's users and groups.
//
// A SCIM server is three things kept apart: a filter (package filter's
// SCIM mode), a PATCH engine (Patch, over resources as decoded JSON), and a
// resource mapper (UserFromResource, UserResource and their Group twins).
// Each identity provider's dialect is a row in the PATCH engine's table
// tests, never a branch in the code.
package scim

import (
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/fault"
)

// The scimType values of RFC 7644 §3.12 that this package returns.
const (
	TypeInvalidFilter = "invalidFilter"
	TypeTooMany       = "tooMany"
	TypeUniqueness    = "uniqueness"
	TypeMutability    = "mutability"
	TypeInvalidSyntax = "invalidSyntax"
	TypeInvalidPath   = "invalidPath"
	TypeNoTarget      = "noTarget"
	TypeInvalidValue  = "invalidValue"
)

// Error is a refusal with its SCIM error type. It unwraps to a fault error
// of the matching kind (Invalid for 400, Conflict for uniqueness), so code
// that only knows fault kinds still maps it to the right status.
type Error struct {
	ScimType string // one of the Type constants, "" for none
	Detail   string // safe to show to the client
	kind     fault.Kind
}

// Error gives "scim: <scimType>: <detail>".
func (e *Error) Error() string {
	if e.ScimType == "" {
		return "scim: " + e.Detail
	}
	return "scim: " + e.ScimType + ": " + e.Detail
}

// Unwrap gives the fault form of the error.
func (e *Error) Unwrap() error { return fault.E(fault.Op("scim"), e.kind, e.Detail) }

// Kind is the fault kind of the error.
func (e *Error) Kind() fault.Kind { return e.kind }

func errorf(scimType string, format string, args ...any) error {
	kind := fault.Invalid
	if scimType == TypeUniqueness {
		kind = fault.Conflict
	}
	return &Error{ScimType: scimType, Detail: fmt.Sprintf(format, args...), kind: kind}
}

// TypeOf returns the scimType of err, "" when it has none.
func TypeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.ScimType
	}
	return ""
}

const kindInvalid = fault.Invalid

// errText is the client-facing text of an error.
func errText(err error) string { return fault.MessageOf(err) }
