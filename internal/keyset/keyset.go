// Package keyset reads a large ordered result in pages, each query asking
// for the rows after the last key seen, so a scan never holds one long
// result set open and never keeps more than a page in memory.
package keyset

import "iter"

// Pages yields the items of successive pages. read returns up to size items
// whose key is greater than after, in key order, appending to buf (which it
// may reuse); key gives an item's key. Reading stops after a short page, on
// an error (yielded once), or when the consumer stops.
func Pages[T any](size int, after int64, read func(after int64, buf []T) ([]T, error), key func(T) int64) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		page := make([]T, 0, size)
		for {
			var err error
			page, err = read(after, page[:0])
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range page {
				if !yield(item, nil) {
					return
				}
			}
			if len(page) < size {
				return
			}
			after = key(page[len(page)-1])
		}
	}
}
