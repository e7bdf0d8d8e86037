// Package bench holds the benchmarks of the hot paths named in TARGETS.md.
// Each benchmark measures its baseline in the same run, so results are read
// as ratios; docs/performance.md records the command and the figures.
//
//	go test ./bench -run '^$' -bench . -benchtime 3s
package bench
