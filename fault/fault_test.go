package fault_test

import (
	"errors"
	"io"
	"testing"

	"github.com/latchkey/latchkey/fault"
)

func TestKindAndMessage(t *testing.T) {
	base := fault.E(fault.Op("store.GetUser"), fault.NotFound, "user not found")
	wrapped := fault.E(fault.Op("identity.Login"), base)
	tests := []struct {
		name    string
		err     error
		kind    fault.Kind
		message string
	}{
		{"direct", base, fault.NotFound, "user not found"},
		{"inherited", wrapped, fault.NotFound, "user not found"},
		{"overridden", fault.E(fault.Unauthenticated, fault.Msg("bad credentials"), base), fault.Unauthenticated, "bad credentials"},
		{"plain error", io.EOF, fault.Internal, ""},
		{"internal hides message", fault.E(fault.Internal, "db exploded"), fault.Internal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fault.KindOf(tt.err); got != tt.kind {
				t.Errorf("KindOf = %v, want %v", got, tt.kind)
			}
			if got := fault.MessageOf(tt.err); got != tt.message {
				t.Errorf("MessageOf = %q, want %q", got, tt.message)
			}
		})
	}
	if !fault.Is(fault.NotFound, wrapped) || fault.Is(fault.NotFound, nil) {
		t.Error("Is misreports")
	}
	cause := errors.New("cause")
	if !errors.Is(fault.E(fault.Invalid, cause), cause) {
		t.Error("Unwrap lost the cause")
	}
	if f := fault.FieldOf(fault.E(fault.Invalid, fault.Field("name"), "required")); f != "name" {
		t.Errorf("FieldOf = %q", f)
	}
}
