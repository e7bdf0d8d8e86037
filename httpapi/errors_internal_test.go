package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/fault"
)

// A 5xx is logged as an error, unless the client had already hung up:
// then it is information, since no one waits for the answer.
func TestWriteErrorLogLevel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel bool
		want   string
	}{
		{"server failure", false, "level=ERROR"},
		{"client hung up", true, "level=INFO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := &Server{log: slog.New(slog.NewTextHandler(&buf, nil))}
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			r := httptest.NewRequestWithContext(ctx, "GET", "/notification/v1/subscriptions/x/notifications", nil)
			s.writeError(httptest.NewRecorder(), r, styleProblem, fault.E(fault.Unavailable, "request cancelled", ctx.Err()))
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("log %q, want %s", buf.String(), tc.want)
			}
		})
	}
}
