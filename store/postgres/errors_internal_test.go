package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latchkey/latchkey/fault"
)

// TestLostConnectionIsUnavailable: a connection that dies under a
// statement (a database restart, a dropped connection: what the chaos
// harness injects) is fault.Unavailable, a 503 that tells the client to try
// again, never an internal error.
func TestLostConnectionIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want fault.Kind
	}{
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), fault.Unavailable},
		{"EOF", io.EOF, fault.Unavailable},
		{"conn closed", fmt.Errorf("query: %w", pgconn.ErrConnClosed), fault.Unavailable},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, fault.Unavailable},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), fault.Unavailable},
		{"anything else", errors.New("something broke"), fault.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fault.KindOf(mapErr(tc.err)); got != tc.want {
				t.Errorf("mapErr(%v) is %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
