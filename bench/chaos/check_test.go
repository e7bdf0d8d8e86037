package main

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPercentileOf(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"none", nil, 0.99, 0},
		{"one", []time.Duration{3 * s}, 0.99, 3 * s},
		{"median of four", []time.Duration{4 * s, 1 * s, 3 * s, 2 * s}, 0.5, 2 * s},
		{"p99 of four is the largest", []time.Duration{4 * s, 1 * s, 3 * s, 2 * s}, 0.99, 4 * s},
		{"max", []time.Duration{4 * s, 9 * s, 3 * s}, 1, 9 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentileOf(tc.ds, tc.p); got != tc.want {
				t.Errorf("percentileOf(%v, %v) = %v, want %v", tc.ds, tc.p, got, tc.want)
			}
		})
	}
}

// The schedule holds each fault asked for, in order of time, within the
// window, one at a time.
func TestScheduleSpreadsEveryFault(t *testing.T) {
	plan := schedule(rand.New(rand.NewPCG(1, 2)), 3, 1, 4, 6*time.Second, 51*time.Second)
	got := map[string]int{}
	last := time.Duration(-1)
	for _, f := range plan {
		got[f.kind]++
		if f.at <= last || f.at < 6*time.Second || f.at >= 51*time.Second {
			t.Errorf("fault %s at %v (previous at %v), want increasing times in [6s, 51s)", f.kind, f.at, last)
		}
		last = f.at
	}
	want := map[string]int{faultKill: 3, faultDBRestart: 1, faultStall: 2, faultDrop: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("faults (-want +got):\n%s", diff)
	}
}
