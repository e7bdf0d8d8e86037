#!/usr/bin/env bash
# compare.sh: before/after comparison of the speed targets P1..P10
# (TARGETS.md) between two source trees, on SQLite and on PostgreSQL.
#
#   bench/compare.sh [OLD_DIR [NEW_DIR]]
#
#   OLD_DIR  the "before" tree, e.g. a `git archive` of the old main
#            (default: $OLD, else <parent of NEW>/oldmain-bench)
#   NEW_DIR  the "after" tree (default: $NEW, else the checkout holding
#            this script)
#
# Make the "before" tree once, before the change lands:
#   mkdir -p /work/oldmain-bench && git -C /work/main archive HEAD | tar -x -C /work/oldmain-bench
#   git -C /work/main rev-parse HEAD > /work/oldmain-bench.commit   # optional, recorded in meta.txt
# (or let the script do it: OLD_REV=<commit> bench/compare.sh, when OLD_DIR does not exist yet)
#
# What it does: copies OLD to RESULTS/old-tree and replaces its
# bench/*_test.go with NEW's (OVERLAY_BENCH=1, the default), so both trees
# run the same benchmark code and only the code under test differs (the
# benchmarks use only public API present in both trees: sqlite/postgres
# Open and Options, the area services, the latchkey package); builds
# bench/'s test binary once per tree (go test -c), then runs every
# selected benchmark ROUNDS times, the two trees one after the other for
# each benchmark (old,new in odd rounds, new,old in even rounds:
# ORDER=fixed keeps old,new), with -count 1 per invocation, so load on the
# shared machine hits both alike. Each invocation runs in the
# tree's bench/ directory (P9 reads ../vtoken/testdata). Raw outputs go to
# RESULTS; at the end it prints benchstat per store (every unit, custom
# ones such as events/s, p99-µs, imports/s included) and a table of the P
# figures as TARGETS.md defines them, median over rounds, with new/old and
# a verdict against TOL.
#
# Environment:
#   QUICK=1      smoke test (about 3 min, half of it PostgreSQL): 2
#                rounds, small -benchtime, 10k sizes only, no 1M export,
#                P6 and P8's 200 logins once.
#                A full run (288 invocations) is estimated at about 30 min
#                on a quiet 2-core machine (more under load), plus, once per
#                distinct tree, the seeding of the 1M-event SQLite logs of
#                P4/P5 (a few minutes; SEED_ONLY=1 does it ahead).
#                PostgreSQL takes about 20 of the 30: P7's 1M export about
#                8 (per tree ~30 s of loading and, in old and new alike
#                when this was written, ~3.5 min of export), P4 at 200k
#                about 3 (the log is seeded through the store in every
#                invocation, ~6 s, twice: at b.N=1 and at b.N=300).
#                ONLY='^P([1-6]|[89]|10)$' leaves P7 out
#   ROUNDS=n     rounds (default 5; QUICK 2)
#   ONLY=regex   run only the P ids matching (e.g. ONLY='^P(1|3)$')
#   STORES="sqlite postgres"  stores to run (default both)
#   PLATFORM_POSTGRES_DSN     default postgres://postgres@127.0.0.1:5432/test?sslmode=disable
#   RESULTS=dir  where raw outputs go (default /tmp/latchkey-compare/<time>)
#   SEED_CACHE=dir  persistent cache of the seeded SQLite logs of P4/P5,
#                keyed by a hash of each tree's store/, internal/, bench/
#                sources (default ${TMPDIR:-/tmp}/latchkey-bench-seeds);
#                each run works on fresh copies, so both trees start alike
#   TOL=0.10     verdict tolerance (new/old beyond 1±TOL in the bad
#                direction is WORSE)
#   ORDER=alternate|fixed  see above
#   BENCHMEM=1   add B/op and allocs/op (default 1)
#   KEEP_TMP=1   keep the per-run copies of the seeded databases and the
#                overlaid copy of the old tree (RESULTS/old-tree)
#   OVERLAY_BENCH=1  run NEW's bench/*_test.go in the old tree too (default
#                1; 0 runs each tree's own benchmarks, which then must have
#                the same names)
#   DRY_RUN=1    print the plan (invocations) and exit
#   BUILD_ONLY=1 copy and overlay the old tree, build both binaries, exit
#                (checks that NEW's benchmarks compile against OLD)
#   SEED_ONLY=1  build and seed the cached P4/P5 logs, then exit (warm-up)
#
# Exit status: 0 all compared figures within TOL, 1 some figure WORSE
# (never with QUICK=1: its samples are too small for the 10% rule),
# 2 a build or a benchmark invocation failed (see failures.txt).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NEW=${2:-${NEW:-$(cd "$script_dir/.." && pwd)}}
NEW=$(cd "$NEW" && pwd)
OLD=${1:-${OLD:-$(dirname "$NEW")/oldmain-bench}}
QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then ROUNDS=${ROUNDS:-2}; else ROUNDS=${ROUNDS:-5}; fi
ONLY=${ONLY:-.}
STORES=${STORES:-sqlite postgres}
DSN=${PLATFORM_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
TOL=${TOL:-0.10}
ORDER=${ORDER:-alternate}
BENCHMEM=${BENCHMEM:-1}
OVERLAY_BENCH=${OVERLAY_BENCH:-1}
SEED_CACHE=${SEED_CACHE:-${TMPDIR:-/tmp}/latchkey-bench-seeds}
suffix=; [[ $QUICK == 1 ]] && suffix=-quick
RESULTS=${RESULTS:-/tmp/latchkey-compare/$(date -u +%Y%m%dT%H%M%SZ)$suffix}
if [[ $QUICK == 1 ]]; then timeout=10m; else timeout=30m; fi

die() { echo "compare.sh: $*" >&2; exit 2; }

# --- the "before" tree -------------------------------------------------
if [[ ! -d $OLD ]]; then
	[[ -n ${OLD_REV:-} ]] || die "OLD tree $OLD does not exist; create it with: mkdir -p $OLD && git -C $NEW archive <commit> | tar -x -C $OLD (or set OLD_REV=<commit>)"
	rev=$(git -C "$NEW" rev-parse --verify "$OLD_REV^{commit}") || die "OLD_REV $OLD_REV is not a commit of $NEW"
	mkdir -p "$OLD"
	git -C "$NEW" archive "$rev" | tar -x -C "$OLD"
	echo "$rev" >"${OLD%/}.commit"
	echo "compare.sh: made $OLD from git archive $rev"
fi
OLD=$(cd "$OLD" && pwd)
[[ -f $OLD/bench/doc.go ]] || die "$OLD has no bench/ package"
[[ -f $NEW/bench/doc.go ]] || die "$NEW has no bench/ package"

# --- the plan ------------------------------------------------------------
# P ; store ; name ; -bench regex ; full -benchtime ; quick -benchtime ; max rounds (full) ; max rounds (quick)
# "skip" leaves a line out of that mode; "-" is every round.
# Fixed iteration counts (Nx), so both trees do the same work per sample.
# Store "both": the SQLite line and its PostgreSQL twin (see twins below).
# P7_1M_STORES=sqlite leaves PostgreSQL's 1M export out: a tree whose
# export still reads "seq > last LIMIT n" pages (before a7762fa) spends
# about 200 s in it, because PostgreSQL's plan for a table without
# statistics sorts the rest of the log for every page.
P7_1M_STORES=${P7_1M_STORES:-both}
specs=$(cat <<'EOF'
P1;sqlite;p1-token;^BenchmarkP1TokenEndpoint$;10000x;2000x;-;-
P2;both;p2-authget;^BenchmarkP2AuthenticatedGet$;10000x;2000x;-;-
P3;sqlite;p3-post100;^BenchmarkEventsPost100$;300x;30x;-;-
P3;sqlite;p3-single64;^BenchmarkEventsPostSingle64$;10000x;1000x;-;-
P4;sqlite;p4-query;^BenchmarkEventsQuery$;2000x;skip;-;-
P4;sqlite;p4-query-10k;^BenchmarkEventsQuery$/^events=10000$;skip;300x;-;-
P5;sqlite;p5-notify;^BenchmarkNotifyRetrieve$;500x;skip;-;-
P5;sqlite;p5-notify-10k;^BenchmarkNotifyRetrieve$/^events=10000$;skip;100x;-;-
P6;both;p6-eventstream;^BenchmarkEventStreamDelivery$;1x;1x;3;1
P7;both;p7-export10k;^BenchmarkExport10k$;20x;3x;-;-
P7;$P7_1M_STORES;p7-export1m;^BenchmarkExport1M$;1x;skip;1;-
P8;both;p8-login;^BenchmarkP8PasswordLogin$/^(baseline=raw-argon2id|latchkey-login)$;100x;10x;-;-
P8;both;p8-200logins;^BenchmarkP8PasswordLogin$/^200-simultaneous-logins$;1x;1x;3;1
P9;both;p9-pfx;^BenchmarkP9PFXImport$;400x;60x;-;-
P10;both;p10-verify;^BenchmarkP10FIDOImport$/^verify$;5000x;500x;-;-
P10;both;p10-import;^BenchmarkP10FIDOImport$/^import$;300x;50x;-;-
P10;both;p10-import-par;^BenchmarkP10FIDOImport$/^import-parallel$;3000x;300x;-;-
P1;postgres;p1-token-pg;^BenchmarkP1TokenEndpointPostgres$;10000x;2000x;-;-
P1;postgres;p1-auditappend-pg;^BenchmarkAuditAppendPostgres$;10000x;2000x;-;-
P3;postgres;p3-post100-pg;^BenchmarkEventsPost100Postgres$;200x;30x;-;-
P3;postgres;p3-single64-pg;^BenchmarkEventsPostSingle64Postgres$;6000x;1000x;-;-
P4;postgres;p4-query-10k-pg;^BenchmarkEventsQueryPostgres$/^events=10000$;2000x;300x;-;-
P4;postgres;p4-query-200k-pg;^BenchmarkEventsQueryPostgres$/^events=200000$;300x;skip;-;-
P5;postgres;p5-notify-pg;^BenchmarkNotifyRetrievePostgres$;200x;skip;-;-
P5;postgres;p5-notify-10k-pg;^BenchmarkNotifyRetrievePostgres$/^events=10000$;skip;50x;-;-
EOF
)
specs=${specs//'$P7_1M_STORES'/$P7_1M_STORES}
# Seeding of the cached SQLite logs (P4, P5), run once per tree into SEED_CACHE.
if [[ $QUICK == 1 ]]; then
	seed_specs=$'P4;^BenchmarkEventsQuery$/^events=10000$\nP5;^BenchmarkNotifyRetrieve$/^events=10000$'
else
	seed_specs=$'P4;^BenchmarkEventsQuery$\nP5;^BenchmarkNotifyRetrieve$'
fi

# The P figures, as TARGETS.md defines them, from the samples (median over
# rounds of each round's figure). role: target = the TARGETS figure,
# raw = Latchkey's own metric (both get a verdict), ref = a baseline whose
# code does not change (its new/old shows the run's noise), info = shown only.
# P | store | role | better | scale | label | A | unit A | B | unit B  (B set: A/B)
# Store "both" as in specs; pg_sizes below scales P4's twin down to 200k.
figures=$(cat <<'EOF'
P1|sqlite|target|higher|1|x of bare ES256 handler (time ratio)|P1TokenEndpoint/baseline=bare-es256-handler|ns/op|P1TokenEndpoint/latchkey|ns/op
P1|sqlite|raw|lower|0.001|token endpoint us/op|P1TokenEndpoint/latchkey|ns/op||
P1|sqlite|ref|lower|0.001|bare ES256 handler us/op|P1TokenEndpoint/baseline=bare-es256-handler|ns/op||
P2|both|target|higher|1|x of unauthenticated handler|P2AuthenticatedGet/baseline=same-read-no-auth|ns/op|P2AuthenticatedGet/latchkey|ns/op
P2|both|raw|lower|0.001|authenticated GET us/op|P2AuthenticatedGet/latchkey|ns/op||
P2|both|ref|lower|0.001|unauthenticated handler us/op|P2AuthenticatedGet/baseline=same-read-no-auth|ns/op||
P3|sqlite|target|higher|1|x of raw inserts (events/s ratio)|EventsPost100/http|events/s|EventsPost100/raw|events/s
P3|sqlite|raw|higher|1|POST 100 events/request, events/s|EventsPost100/http|events/s||
P3|sqlite|target|higher|1|single posts, 64 clients, events/s|EventsPostSingle64|events/s||
P3|sqlite|info|higher|1|single posts per ingest commit|EventsPostSingle64|posts/commit||
P3|sqlite|ref|higher|1|raw inserts events/s|EventsPost100/raw|events/s||
P4|both|target|lower|1|query p99 us at 1M|EventsQuery/events=1000000|p99-µs||
P4|both|target|lower|1|query p50 1M / 10k|EventsQuery/events=1000000|p50-µs|EventsQuery/events=10000|p50-µs
P4|both|raw|lower|1|query p50 us at 1M|EventsQuery/events=1000000|p50-µs||
P4|both|raw|lower|1|query p50 us at 10k|EventsQuery/events=10000|p50-µs||
P4|both|raw|lower|1|query p99 us at 10k|EventsQuery/events=10000|p99-µs||
P5|sqlite|target|higher|1|notifications/s 1M all-types|NotifyRetrieve/events=1000000/all-types|notifications/s||
P5|sqlite|target|higher|1|notifications/s 1M one-type|NotifyRetrieve/events=1000000/one-type|notifications/s||
P5|sqlite|target|lower|1|page p50 1M / 10k, all-types|NotifyRetrieve/events=1000000/all-types|p50-µs|NotifyRetrieve/events=10000/all-types|p50-µs
P5|sqlite|target|lower|1|page p50 1M / 10k, one-type|NotifyRetrieve/events=1000000/one-type|p50-µs|NotifyRetrieve/events=10000/one-type|p50-µs
P5|sqlite|raw|higher|1|notifications/s 10k all-types|NotifyRetrieve/events=10000/all-types|notifications/s||
P5|sqlite|raw|higher|1|notifications/s 10k one-type|NotifyRetrieve/events=10000/one-type|notifications/s||
P5|sqlite|raw|lower|1|page p50 us 10k all-types|NotifyRetrieve/events=10000/all-types|p50-µs||
P6|both|target|higher|1|deliveries/s (10 subs x 330/s)|EventStreamDelivery|deliveries/s||
P6|both|info|lower|1|worst subscription off its rate, %|EventStreamDelivery|max-sub-dev-%||
P6|both|ref|higher|1|bare POSTs/s to the receiver|EventStreamDelivery|bare-posts/s||
P7|both|target|lower|1|1M-record export, s|Export1M|s/export||
P7|both|target|lower|1|1M-record export, heap growth MiB|Export1M|MiB-heap-growth||
P7|both|raw|lower|1|10k-record export, s|Export10k|s/export||
P7|both|info|lower|1|10k-record export, heap growth MiB|Export10k|MiB-heap-growth||
P8|both|target|higher|1|x of raw argon2id (time ratio)|P8PasswordLogin/baseline=raw-argon2id|ns/op|P8PasswordLogin/latchkey-login|ns/op
P8|both|raw|lower|0.000001|login ms/op|P8PasswordLogin/latchkey-login|ns/op||
P8|both|target|lower|1|200 simultaneous logins, peak heap MiB|P8PasswordLogin/200-simultaneous-logins|peak-heap-MiB||
P8|both|ref|lower|0.000001|raw argon2id ms/op|P8PasswordLogin/baseline=raw-argon2id|ns/op||
P9|both|target|higher|1|library imports/s|P9PFXImport/library-sqlite|imports/s||
P9|both|target|higher|1|HTTP imports/s|P9PFXImport/http-sqlite|imports/s||
P9|both|raw|lower|1|library cpu-ms/import|P9PFXImport/library-sqlite|cpu-ms/import||
P9|both|ref|higher|1|DecodeChain alone /s|P9PFXImport/baseline-DecodeChain|imports/s||
P10|both|target|higher|1|imports/s, 256 concurrent|P10FIDOImport/import-parallel|imports/s||
P10|both|raw|higher|1|imports/s, one at a time|P10FIDOImport/import|imports/s||
P10|both|ref|higher|1|verification alone /s|P10FIDOImport/verify|imports/s||
P1|postgres|target|higher|1|x of bare ES256 handler (time ratio)|P1TokenEndpointPostgres/baseline=bare-es256-handler|ns/op|P1TokenEndpointPostgres/latchkey-postgres|ns/op
P1|postgres|raw|lower|0.001|token endpoint us/op|P1TokenEndpointPostgres/latchkey-postgres|ns/op||
P1|postgres|ref|lower|0.001|bare ES256 handler us/op|P1TokenEndpointPostgres/baseline=bare-es256-handler|ns/op||
P1|postgres|raw|higher|1|audit append recs/s, 1 tenant|AuditAppendPostgres/1tenant|recs/s||
P1|postgres|raw|higher|1|audit append recs/s, 64 tenants|AuditAppendPostgres/64tenants|recs/s||
P3|postgres|target|higher|1|x of raw inserts (events/s ratio)|EventsPost100Postgres/http|events/s|EventsPost100Postgres/raw|events/s
P3|postgres|raw|higher|1|POST 100 events/request, events/s|EventsPost100Postgres/http|events/s||
P3|postgres|target|higher|1|single posts, 64 clients, events/s|EventsPostSingle64Postgres|events/s||
P3|postgres|info|higher|1|single posts per ingest commit|EventsPostSingle64Postgres|posts/commit||
P3|postgres|ref|higher|1|raw inserts events/s|EventsPost100Postgres/raw|events/s||
P3|postgres|ref|higher|1|raw COPY events/s|EventsPost100Postgres/raw-copy|events/s||
P5|postgres|target|higher|1|notifications/s 100k all-types|NotifyRetrievePostgres/events=100000/all-types|notifications/s||
P5|postgres|target|lower|1|page p50 100k / 10k|NotifyRetrievePostgres/events=100000/all-types|p50-µs|NotifyRetrievePostgres/events=10000/all-types|p50-µs
P5|postgres|raw|higher|1|notifications/s 10k all-types|NotifyRetrievePostgres/events=10000/all-types|notifications/s||
P5|postgres|raw|lower|1|page p50 us 10k all-types|NotifyRetrievePostgres/events=10000/all-types|p50-µs||
EOF
)

# twins SEP FIELDS...: expands the lines of store "both" (specs, figures)
# into a SQLite line and a PostgreSQL one. The PostgreSQL benchmark is the
# SQLite one's name plus "Postgres" (BenchmarkXxx -> BenchmarkXxxPostgres,
# Xxx/sub -> XxxPostgres/sub), its sub-benchmarks' "-sqlite" suffix
# becomes "-postgres", a plan name gets "-pg"; FIELDS are the numbers of the
# fields holding -bench regexes (r), benchmark names (n) or plan names (p),
# e.g. 3p 4r. In the twins of a P listed in pg_sizes, each "from=to" of it
# is replaced in every field (the PostgreSQL logs are seeded smaller).
# Output: SQLite lines, then PostgreSQL, each in P order.
pg_sizes='P4:1000000=200000,1M=200k'
twins() {
	local sep=$1; shift
	awk -F"$sep" -v OFS="$sep" -v fields="$*" -v sizes="$pg_sizes" '
	BEGIN {
		nf = split(fields, fs, " ")
		split(sizes, ps, ":"); resize_p = ps[1]; nr = split(ps[2], rs, ",")
	}
	function pg(v, kind,    k) {
		if (v == "") return v
		if (kind == "p") return v "-pg"
		if (kind == "r") { sub(/\$/, "Postgres$", v); gsub(/-sqlite\$/, "-postgres$", v); return v }
		k = index(v, "/")
		v = k ? substr(v, 1, k - 1) "Postgres" substr(v, k) : v "Postgres"
		sub(/-sqlite$/, "-postgres", v)
		return v
	}
	$2 != "both" { print; next }
	{
		$2 = "sqlite"; print
		$2 = "postgres"
		for (i = 1; i <= nf; i++) { f = fs[i] + 0; $f = pg($f, substr(fs[i], length(fs[i]))) }
		if ($1 == resize_p) for (i = 1; i <= nr; i++) { split(rs[i], ft, "="); for (f = 3; f <= NF; f++) gsub(ft[1], ft[2], $f) }
		print
	}' | sort -s -t"$sep" -k2,2r -k1.2,1n
}
specs=$(twins ';' 3p 4r <<<"$specs")
figures=$(twins '|' 7n 9n <<<"$figures")

want_store() { [[ " $STORES " == *" $1 "* ]]; }
want_p() { [[ $1 =~ $ONLY ]]; }

# plan: one line per invocation kind selected for this mode
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
plan=()
while IFS=';' read -r p store name regex full quick rfull rquick; do
	want_p "$p" && want_store "$store" || continue
	if [[ $QUICK == 1 ]]; then bt=$quick maxr=$rquick; else bt=$full maxr=$rfull; fi
	[[ $bt == skip ]] && continue
	[[ $maxr == - ]] && maxr=$ROUNDS
	[[ $maxr =~ ^[0-9]+$ && $bt =~ ^[0-9]+(x|s|ms)$ ]] || die "bad spec line: $p;$store;$name;$regex;..."
	plan+=("$p;$store;$name;$regex;$bt;$maxr")
done <<<"$specs"
((${#plan[@]})) || die "nothing selected (ONLY=$ONLY STORES=$STORES)"

total=0
for line in "${plan[@]}"; do
	IFS=';' read -r _ _ _ _ _ maxr <<<"$line"
	total=$((total + 2 * (maxr < ROUNDS ? maxr : ROUNDS)))
done

echo "compare.sh: OLD=$OLD$( ((OVERLAY_BENCH == 1)) && echo " (run with NEW's bench/*_test.go, in a copy)")"
echo "            NEW=$NEW"
echo "            ${ROUNDS} rounds, $total invocations, stores: $STORES, QUICK=$QUICK, results: $RESULTS"
if [[ ${DRY_RUN:-0} == 1 ]]; then
	printf '%-4s %-9s %-18s %-8s %-6s %s\n' P store name benchtime rounds regex
	for line in "${plan[@]}"; do
		IFS=';' read -r p store name regex bt maxr <<<"$line"
		printf '%-4s %-9s %-18s %-8s %-6s %s\n' "$p" "$store" "$name" "$bt" "$((maxr < ROUNDS ? maxr : ROUNDS))" "$regex"
	done
	exit 0
fi

# --- tools and services --------------------------------------------------
benchstat=$(command -v benchstat || true)
if [[ -z $benchstat ]]; then
	gobin=$(go env GOBIN); gobin=${gobin:-$(go env GOPATH)/bin}
	if [[ ! -x $gobin/benchstat ]]; then
		echo "compare.sh: installing benchstat"
		(cd / && go install golang.org/x/perf/cmd/benchstat@latest) || die "cannot install benchstat"
	fi
	benchstat=$gobin/benchstat
fi
if want_store postgres; then
	if command -v pg_isready >/dev/null && ! pg_isready -q -t 5 -d "$DSN"; then
		die "PostgreSQL at $DSN is not ready (start it, e.g. pg_ctlcluster --skip-systemctl-redirect \$(ls /etc/postgresql) main start; or STORES=sqlite)"
	fi
fi

mkdir -p "$RESULTS"/{bin,raw,sqlite,postgres}
: >"$RESULTS/samples.tsv"
: >"$RESULTS/timing.tsv"
: >"$RESULTS/failures.txt"
failed=0

cleanup() {
	[[ -n ${child:-} ]] && kill "$child" 2>/dev/null || true
	if [[ ${KEEP_TMP:-0} != 1 ]]; then rm -rf "$RESULTS/tmp-old" "$RESULTS/tmp-new" "$RESULTS/old-tree"; fi
}
trap cleanup EXIT
trap 'echo "compare.sh: interrupted" >&2; exit 130' INT TERM

# --- overlay: the old tree runs NEW's benchmark code ----------------------
# OVERLAY_SKIP: NEW's benchmark files left out of the overlay when OLD has
# no file of that name: they measure features (DPoP, passkeys, tracing)
# that OLD does not have and would not build against it.
OVERLAY_SKIP=${OVERLAY_SKIP-dpop_test.go passkey_test.go tracing_test.go}
# A copy of OLD (OLD itself is left alone) whose bench/*_test.go are NEW's;
# bench/'s other files (doc.go, load/) stay OLD's. From here on OLD is the
# copy; OLD_SRC is the tree it was made from.
OLD_SRC=$OLD
if [[ $OVERLAY_BENCH == 1 ]]; then
	ovl=$RESULTS/old-tree
	rm -rf "$ovl"
	mkdir -p "$ovl"
	tar -C "$OLD_SRC" --exclude=./.git -cf - . | tar -C "$ovl" -xf - || die "cannot copy $OLD_SRC to $ovl"
	rm -f "$ovl"/bench/*_test.go
	cp "$NEW"/bench/*_test.go "$ovl/bench/" || die "cannot overlay $NEW/bench/*_test.go onto $ovl"
	# Benchmarks of features OLD lacks (OVERLAY_SKIP) would not build there.
	for f in $OVERLAY_SKIP; do
		[[ -f $OLD_SRC/bench/$f ]] || rm -f "$ovl/bench/$f"
	done
	{
		echo "bench/*_test.go of $NEW overlaid onto a copy of $OLD_SRC ($ovl):"
		for f in "$NEW"/bench/*_test.go; do
			f=$(basename "$f")
			if [[ ! -f $OLD_SRC/bench/$f ]]; then echo "  added    $f"
			elif cmp -s "$OLD_SRC/bench/$f" "$NEW/bench/$f"; then echo "  same     $f"
			else echo "  replaced $f"; fi
		done
		for f in "$OLD_SRC"/bench/*_test.go; do
			if [[ -f $f && ! -f $NEW/bench/$(basename "$f") ]]; then echo "  removed  $(basename "$f")"; fi
		done
	} >"$RESULTS/overlay.txt"
	OLD=$ovl
fi

# --- meta ----------------------------------------------------------------
tree_key() { # hash of what the seeded databases depend on
	(cd "$1" && find store internal bench -type f \( -name '*.go' -o -name '*.sql' \) -print0 2>/dev/null | sort -z | xargs -0r sha256sum; sha256sum go.sum) | sha256sum | cut -c1-16
}
describe_tree() {
	local dir=$1
	if [[ -e $dir/.git ]]; then
		echo "git $(git -C "$dir" rev-parse HEAD), $(git -C "$dir" --no-optional-locks status --porcelain 2>/dev/null | wc -l) changed/untracked paths"
	elif [[ -f ${dir%/}.commit ]]; then
		echo "archive of $(cat "${dir%/}.commit")"
	else
		echo "not a git checkout"
	fi
}
{
	echo "date: $(date -u +%FT%TZ)"
	echo "host: $(uname -srm), nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "go: $(go version)"
	if [[ $OLD != "$OLD_SRC" ]]; then
		echo "old: $OLD_SRC ($(describe_tree "$OLD_SRC")) with NEW's bench/*_test.go ($(grep -cE '^  (added|replaced|removed) ' "$RESULTS/overlay.txt" || true) file(s) differ from its own; overlay.txt), tree key $(tree_key "$OLD")"
	else
		echo "old: $OLD ($(describe_tree "$OLD")), its own bench/*_test.go, tree key $(tree_key "$OLD")"
	fi
	echo "new: $NEW ($(describe_tree "$NEW")), tree key $(tree_key "$NEW")"
	echo "rounds: $ROUNDS, order: $ORDER, quick: $QUICK, tol: $TOL, stores: $STORES, only: $ONLY"
	if want_store postgres; then echo "postgres: $DSN, $(psql "$DSN" -tAc 'show server_version' 2>/dev/null || echo '?')"; fi
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$RESULTS/meta.txt"

# --- build ---------------------------------------------------------------
for tree in old new; do
	dir=$OLD; [[ $tree == new ]] && dir=$NEW
	echo "compare.sh: building $tree bench binary ($dir)"
	t0=$(date +%s)
	if ! (cd "$dir" && go test -c -o "$RESULTS/bin/$tree.test" ./bench) >"$RESULTS/build-$tree.log" 2>&1; then
		cat "$RESULTS/build-$tree.log" >&2
		echo "build of $tree ($dir) failed" >>"$RESULTS/failures.txt"
		die "build of $tree ($dir) failed; see $RESULTS/build-$tree.log"
	fi
	echo "  $(go version "$RESULTS/bin/$tree.test" | cut -d' ' -f2-), $(($(date +%s) - t0)) s"
done
v_old=$(go version "$RESULTS/bin/old.test" | awk '{print $2}')
v_new=$(go version "$RESULTS/bin/new.test" | awk '{print $2}')
[[ $v_old == "$v_new" ]] || echo "compare.sh: WARNING: toolchains differ: old $v_old, new $v_new" | tee -a "$RESULTS/meta.txt"
if [[ ${BUILD_ONLY:-0} == 1 ]]; then
	echo "compare.sh: BUILD_ONLY: binaries in $RESULTS/bin"
	exit 0
fi

# run_bench TREE STORE REGEX BENCHTIME OUT: one invocation in the tree's bench/ dir
run_bench() {
	local tree=$1 store=$2 regex=$3 bt=$4 out=$5 dir=$OLD rc=0
	[[ $tree == new ]] && dir=$NEW
	local env=(env -u PLATFORM_POSTGRES_DSN "TMPDIR=$tmpdir_base-$tree")
	[[ $store == postgres ]] && env+=("PLATFORM_POSTGRES_DSN=$DSN")
	local mem=(); [[ $BENCHMEM == 1 ]] && mem=(-test.benchmem)
	(cd "$dir/bench" && exec "${env[@]}" "$RESULTS/bin/$tree.test" -test.run '^$' -test.bench "$regex" \
		-test.benchtime "$bt" -test.count 1 -test.timeout "$timeout" "${mem[@]}") >"$out" 2>"$out.stderr" &
	child=$!
	wait "$child" || rc=$?
	child=
	return "$rc"
}

# --- seeded SQLite logs (P4, P5): once per tree key, then fresh copies ----
tmpdir_base=$RESULTS/tmp
mkdir -p "$tmpdir_base-old" "$tmpdir_base-new"
need_seed=0
for line in "${plan[@]}"; do if [[ $line == "P4;sqlite;"* || $line == "P5;sqlite;"* ]]; then need_seed=1; fi; done
if ((need_seed)); then
	declare -A seeded=()
	for tree in old new; do
		dir=$OLD; [[ $tree == new ]] && dir=$NEW
		key=$(tree_key "$dir")
		cache=$SEED_CACHE/$key
		if [[ -z ${seeded[$key]:-} ]]; then
			mkdir -p "$cache"
			while IFS=';' read -r p regex; do
				want_p "$p" || continue
				echo "compare.sh: seeding/checking $p logs for $tree in $cache (first time for 1M: a few minutes)"
				(cd "$dir/bench" && env -u PLATFORM_POSTGRES_DSN TMPDIR="$cache" "$RESULTS/bin/$tree.test" -test.run '^$' \
					-test.bench "$regex" -test.benchtime 1x -test.timeout 60m) >"$RESULTS/seed-$tree-$p.log" 2>&1 ||
					die "seeding $p for $tree failed; see $RESULTS/seed-$tree-$p.log"
			done <<<"$seed_specs"
			seeded[$key]=1
		fi
		if [[ -d $cache/latchkey-bench ]]; then cp -a "$cache/latchkey-bench" "$tmpdir_base-$tree/"; fi
	done
	du -sh "$tmpdir_base-old/latchkey-bench" 2>/dev/null | sed 's/^/compare.sh: seeded logs per tree: /'
fi
if [[ ${SEED_ONLY:-0} == 1 ]]; then
	echo "compare.sh: SEED_ONLY: seeded logs are in $SEED_CACHE"
	exit 0
fi

# --- rounds --------------------------------------------------------------
parse() { # append the benchmark lines of a raw output to samples.tsv
	awk -v store="$1" -v tree="$2" -v round="$3" '
	/^Benchmark/ && NF >= 4 {
		name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
		for (i = 3; i + 1 <= NF; i += 2) printf "%s\t%s\t%s\t%s\t%s\t%s\n", store, tree, round, name, $(i+1), $i
	}' "$4" >>"$RESULTS/samples.tsv"
}

start=$(date +%s)
n=0
for ((r = 1; r <= ROUNDS; r++)); do
	order=(old new)
	[[ $ORDER == alternate ]] && ((r % 2 == 0)) && order=(new old)
	for line in "${plan[@]}"; do
		IFS=';' read -r p store name regex bt maxr <<<"$line"
		((r <= maxr)) || continue
		for tree in "${order[@]}"; do
			n=$((n + 1))
			out=$RESULTS/raw/$store-$name-r$r-$tree.txt
			t0=$(date +%s.%N)
			rc=0
			run_bench "$tree" "$store" "$regex" "$bt" "$out" || rc=$?
			dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$tree" "$store" "$name" "$bt" "$dt" "$rc" >>"$RESULTS/timing.tsv"
			cat "$out" >>"$RESULTS/$store/$tree.txt"
			parse "$store" "$tree" "$r" "$out"
			status="${dt}s"
			if ((rc != 0)) || grep -q -- '--- FAIL' "$out"; then
				failed=1
				status="$status FAILED (exit $rc)"
				{
					echo "== round $r $tree $store $name (exit $rc): $out"
					grep -A5 -- '--- FAIL' "$out" | head -20 || true
					tail -5 "$out.stderr" 2>/dev/null || true
				} >>"$RESULTS/failures.txt"
			fi
			printf '[%3d/%d] r%d %-3s %-8s %-18s %s  (elapsed %ds, load %s)\n' "$n" "$total" "$r" "$tree" "$store" "$name" "$status" \
				$(($(date +%s) - start)) "$(cut -d' ' -f1 /proc/loadavg)"
		done
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RESULTS/meta.txt"

# --- report --------------------------------------------------------------
nomem() { # drop the B/op and allocs/op pairs of benchmark lines
	awk '/^Benchmark/ { line = $1 "\t" $2; for (i = 3; i + 1 <= NF; i += 2) if ($(i+1) != "B/op" && $(i+1) != "allocs/op") line = line "\t" $i " " $(i+1); print line; next } { print }' "$1"
}
for mem in 1 0; do
	for store in sqlite postgres; do
		[[ -s $RESULTS/$store/old.txt || -s $RESULTS/$store/new.txt ]] || continue
		echo "==================== benchstat: $store (old = $OLD_SRC, new = $NEW)"
		if ((mem)); then
			"$benchstat" old="$RESULTS/$store/old.txt" new="$RESULTS/$store/new.txt" 2>&1 || true
		else
			nomem "$RESULTS/$store/old.txt" >"$RESULTS/$store/old.nomem.txt"
			nomem "$RESULTS/$store/new.txt" >"$RESULTS/$store/new.nomem.txt"
			"$benchstat" old="$RESULTS/$store/old.nomem.txt" new="$RESULTS/$store/new.nomem.txt" 2>&1 || true
		fi
		echo
	done >"$RESULTS/benchstat$( ((mem)) || echo -nomem).txt"
done
# on the terminal without B/op and allocs/op (they are in benchstat.txt)
cat "$RESULTS/benchstat-nomem.txt"

printf '%s\n' "$figures" | awk -F'|' -v tol="$TOL" -v samples="$RESULTS/samples.tsv" -v stores="$STORES" -v only="$ONLY" '
function median(arr, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
	return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
function fmt(x) { return x == "" ? "-" : (x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.3g", x)) }
BEGIN {
	FS = "\t"
	while ((getline l < samples) > 0) {
		split(l, f, "\t") # store tree round name unit value
		v[f[1], f[2], f[3], f[4], f[5]] = f[6]
		if (f[3] + 0 > maxround) maxround = f[3] + 0
	}
	FS = "|"
	printf "%-4s %-8s %-6s %-42s %-6s %3s %9s %9s %7s %13s  %s\n", "P", "store", "role", "figure", "better", "n", "old", "new", "new/old", "range", "verdict"
}
{
	p = $1; store = $2; role = $3; better = $4; scale = $5; label = $6
	if (index(" " stores " ", " " store " ") == 0 || p !~ only) next
	# figure value per tree and round (A, or A/B within the same round)
	delete fv
	for (tr = 1; tr <= 2; tr++) {
		tree = tr == 1 ? "old" : "new"; k = 0
		for (r = 1; r <= maxround; r++) {
			if (!((store, tree, r, $7, $8) in v)) continue
			a = v[store, tree, r, $7, $8]
			if ($9 != "") {
				if (!((store, tree, r, $9, $10) in v) || v[store, tree, r, $9, $10] == 0) continue
				a = a / v[store, tree, r, $9, $10]
			}
			fv[tree, r] = a * scale
			vals[++k] = a * scale
		}
		cnt[tree] = k; med[tree] = k ? median(vals, k) : ""
	}
	if (cnt["old"] == 0 && cnt["new"] == 0) { missing = missing sprintf("  %-4s %-8s %s\n", p, store, label); next }
	# new/old paired by round (the two ran back to back), then the median
	k = 0; nbad = 0; lo = ""; hi = ""
	for (r = 1; r <= maxround; r++) {
		if (!(("old", r) in fv) || !(("new", r) in fv) || fv["old", r] == 0) continue
		pr = fv["new", r] / fv["old", r]
		vals[++k] = pr
		if (lo == "" || pr < lo) lo = pr
		if (hi == "" || pr > hi) hi = pr
		if ((better == "higher") ? pr < 1 - tol : pr > 1 + tol) nbad++
	}
	ratio = k ? median(vals, k) : ""
	verdict = "-"
	if (ratio != "" && (role == "target" || role == "raw")) {
		bad = (better == "higher") ? ratio < 1 - tol : ratio > 1 + tol
		good = (better == "higher") ? ratio > 1 + tol : ratio < 1 - tol
		verdict = bad ? "WORSE" : good ? "better" : "ok"
		if (bad) { worse++; verdict = verdict sprintf(" (%d/%d rounds)", nbad, k) }
		else if (nbad) verdict = verdict sprintf(" (%d/%d rounds worse)", nbad, k)
	} else if (ratio != "" && role == "ref") verdict = "(noise ref)"
	n = cnt["old"] == cnt["new"] ? cnt["old"] : cnt["old"] "/" cnt["new"]
	printf "%-4s %-8s %-6s %-42s %-6s %3s %9s %9s %7s %13s  %s\n", p, store, role, label, better, n, fmt(med["old"]), fmt(med["new"]), \
		ratio == "" ? "-" : sprintf("%.3f", ratio), k ? sprintf("%.2f-%.2f", lo, hi) : "-", verdict
}
END {
	if (missing != "") printf "\nfigures without samples (not run in this mode, or the benchmark failed):\n%s", missing
	printf "\n%d figure(s) WORSE than old by more than %.0f%%\n", worse, tol * 100
	exit worse > 0
}' >"$RESULTS/figures.txt" && worse_rc=0 || worse_rc=$?

{
	echo "==================== P figures, new vs old (tolerance ${TOL})"
	echo "old/new: median over rounds; new/old: median of the per-round ratios (old and new of a round ran back to back), range: their min-max."
	echo "role: target = the TARGETS.md figure, raw = Latchkey's own metric (both judged), ref = baseline code that does not change (its new/old is the run's noise), info = shown only."
	cat "$RESULTS/figures.txt"
	if want_store postgres; then
		echo "on PostgreSQL, P4 stops at 200k events and P5 at 100k (their logs are seeded through the store in every invocation)"
	fi
	echo
	echo "wall time of the rounds: $(($(date +%s) - start)) s; per benchmark (both trees, all rounds):"
	awk -F'\t' '{ t[$3 " " $4] += $6 } END { for (k in t) printf "  %-32s %7.1f s\n", k, t[k] }' "$RESULTS/timing.tsv" | sort
	if [[ -s $RESULTS/failures.txt ]]; then
		echo
		echo "FAILED invocations (see $RESULTS/failures.txt):"
		grep '^==' "$RESULTS/failures.txt" | sed 's/^/  /'
	fi
	echo
	echo "results: $RESULTS (meta.txt, benchstat.txt with B/op and allocs/op, summary.txt, samples.tsv, timing.tsv, raw/)"
} | tee "$RESULTS/summary.txt"

if ((failed)) || [[ -s $RESULTS/failures.txt ]]; then exit 2; fi
if [[ $QUICK == 1 ]]; then
	((worse_rc == 0)) || echo "compare.sh: QUICK: small samples, the verdicts are indicative only (exit 0); run without QUICK for the 10% rule"
	exit 0
fi
((worse_rc == 0)) || exit 1
exit 0
