#!/usr/bin/env bash
# Compares P1 and P2 of three builds side by side, round after round:
# BASE (a revision without tracing, default main), this tree with tracing
# off (BenchmarkP1TokenEndpoint, BenchmarkP2AuthenticatedGet) and this tree
# with tracing on (the ...Traced benchmarks: otelenv, every request
# sampled, OTLP/HTTP to a receiver in the process). The order of the three
# alternates each round, so that a change of load on a shared machine
# falls on all of them. The base tree gets this tree's P1/P2 harness
# (env_test.go, token_test.go, cpu_test.go: the same loops, plus CPU time
# per operation) so both measure alike. Results: one line per benchmark
# in $OUT (default /tmp/tracing-compare.txt), summarised in
# docs/performance.md ("Tracing").
#
# Usage: bash bench/tracing_compare.sh [rounds (default 8)] [base revision (default main)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
base=${2:-main}
out=${OUT:-/tmp/tracing-compare.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git archive "$base" | tar -x -C "$work"
cp bench/env_test.go bench/token_test.go bench/cpu_test.go "$work/bench/"
(cd "$work" && go test -c -o "$work/base.test" ./bench)
go test -c -o "$work/this.test" ./bench
: > "$out"
run() { # label dir binary pattern
	echo "### $1 $4 round $r load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out"
	(cd "$2" && "$3" -test.run '^$' -test.bench "$4" -test.benchtime 20000x -test.benchmem -test.count 1 2>&1) |
		grep -E '^Benchmark|FAIL|panic' >> "$out"
}
for r in $(seq 1 "$rounds"); do
	order="base off on"
	if (( r % 2 == 0 )); then order="on off base"; fi
	for b in P1TokenEndpoint P2AuthenticatedGet; do
		for o in $order; do
			case $o in
			base) run base "$work/bench" "$work/base.test" "$b\$" ;;
			off) run off bench "$work/this.test" "$b\$" ;;
			on) run on bench "$work/this.test" "${b}Traced" ;;
			esac
		done
	done
done
echo "results in $out"
