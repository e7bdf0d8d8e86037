package keyset_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/keyset"
)

func TestPages(t *testing.T) {
	rows := []int64{2, 3, 5, 7, 11, 13, 17}
	var afters []int64
	read := func(after int64, buf []int64) ([]int64, error) {
		afters = append(afters, after)
		for _, r := range rows {
			if r > after && len(buf) < 3 {
				buf = append(buf, r)
			}
		}
		return buf, nil
	}
	var got []int64
	for v, err := range keyset.Pages(3, 0, read, func(v int64) int64 { return v }) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if d := cmp.Diff(rows, got); d != "" {
		t.Errorf("items (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int64{0, 5, 13}, afters); d != "" {
		t.Errorf("page queries after (-want +got):\n%s", d)
	}

	boom := errors.New("boom")
	n := 0
	for _, err := range keyset.Pages(3, 0, func(int64, []int64) ([]int64, error) { return nil, boom }, func(v int64) int64 { return v }) {
		n++
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("error yielded %d times", n)
	}
	afters = nil
	for range keyset.Pages(3, 0, read, func(v int64) int64 { return v }) {
		break
	}
	if len(afters) != 1 {
		t.Fatalf("stopping early still read %d pages", len(afters))
	}
}
