package audit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

type sinkFunc func(context.Context, audit.Entry) error

func (f sinkFunc) Record(ctx context.Context, e audit.Entry) error { return f(ctx, e) }

func TestOutcome(t *testing.T) {
	denied := fault.E(fault.Forbidden, "no")
	ok := sinkFunc(func(context.Context, audit.Entry) error { return nil })
	broken := sinkFunc(func(context.Context, audit.Entry) error { return errors.New("disk full") })
	tests := []struct {
		name    string
		sink    audit.Sink
		err     error
		want    fault.Kind
		wantNil bool
	}{
		{"success recorded", ok, nil, 0, true},
		{"failure recorded keeps its error", ok, denied, fault.Forbidden, false},
		{"unrecordable success fails", broken, nil, fault.Unavailable, false},
		{"unrecordable failure fails as unavailable", broken, denied, fault.Unavailable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := audit.Outcome(t.Context(), tt.sink, audit.Entry{TenantID: "t", Source: audit.SourcePlatform, Action: "a", Err: tt.err})
			if tt.wantNil {
				if err != nil {
					t.Fatalf("Outcome = %v, want nil", err)
				}
				return
			}
			if !fault.Is(tt.want, err) {
				t.Fatalf("Outcome = %v, want kind %v", err, tt.want)
			}
		})
	}
}
