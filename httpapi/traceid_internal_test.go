package httpapi

import "testing"

// TestTraceIDFrom checks which traceparent headers lend their trace id
// and which get a fresh one (W3C Trace Context: version 2 hex digits, not
// ff; a 32-digit lower-case trace id, not all zeros; parent id and flags
// after it).
func TestTraceIDFrom(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for tp, keep := range map[string]bool{
		"00-" + id + "-00f067aa0ba902b7-01":          true,
		" 00-" + id + "-00f067aa0ba902b7-01 ":        true,
		"01-" + id + "-00f067aa0ba902b7-01-future":   true,
		"ff-" + id + "-00f067aa0ba902b7-01":          false,
		"0-" + id + "-00f067aa0ba902b7-01":           false,
		"00-" + id + "-00f067aa0ba902b7":             false,
		"00-" + id:                                   false,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00-01":  false,
		"00-" + zeroTraceID + "-00f067aa0ba902b7-01": false,
		"00-" + id[:31] + "-00f067aa0ba902b7-01":     false,
		"":                                           false,
	} {
		got := traceIDFrom(tp)
		if keep && got != id {
			t.Errorf("traceIDFrom(%q) = %q, want %q", tp, got, id)
		}
		if !keep && (got == id || len(got) != 32 || !isLowerHex(got)) {
			t.Errorf("traceIDFrom(%q) = %q, want a fresh id", tp, got)
		}
	}
}
