package postgres

import "testing"

// After a crash restart a "committed" status may be another transaction's
// (ids whose WAL was lost are given again), so it is not trusted.
func TestVerdict(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name      string
		status    *string
		restarted bool
		want      outcome
	}{
		{"committed", s("committed"), false, verdictCommitted},
		{"committed across a restart", s("committed"), true, verdictUnknown},
		{"aborted", s("aborted"), false, verdictAborted},
		{"aborted across a restart", s("aborted"), true, verdictAborted},
		{"in progress", s("in progress"), false, verdictAsk},
		{"too old to tell", nil, false, verdictAsk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verdict(tc.status, tc.restarted); got != tc.want {
				t.Errorf("verdict = %v, want %v", got, tc.want)
			}
		})
	}
}
