#!/usr/bin/env bash
# Starts the example server (SQLite in a temporary data directory, free
# loopback ports, metrics on their own listener), runs the load harness
# against it and stops the server. Used by CI with the default 20 s; the
# soak in docs/performance.md is
#   bench/load/run.sh 10m -rate N -plot docs/soak.png -json /tmp/soak.json
# Arguments: the duration, then any flags of bench/load.
set -euo pipefail
cd "$(dirname "$0")/../.."
dur=${1:-20s}
shift || true
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/server" ./examples/server
go build -o "$tmp/load" ./bench/load
export PLATFORM_ADMIN_PASSWORD=load-admin-password-1
"$tmp/server" -addr 127.0.0.1:0 -tls-addr "" -metrics-addr 127.0.0.1:0 -data "$tmp/data" >"$tmp/out" 2>"$tmp/log" &
pid=$!
for _ in $(seq 300); do
  if grep -q 'serving on' "$tmp/out" 2>/dev/null && grep -q 'serving metrics' "$tmp/log" 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$tmp/log"; echo "server exited"; exit 1; fi
  sleep 0.1
done
api=$(sed -n 's/.*serving on \(http:\/\/[^ ]*\).*/\1/p' "$tmp/out" | head -1)
metrics=$(sed -n 's/.*msg="serving metrics" addr=\([^ ]*\).*/\1/p' "$tmp/log" | head -1)
if [ -z "$api" ] || [ -z "$metrics" ]; then cat "$tmp/out" "$tmp/log"; echo "server did not report its addresses"; exit 1; fi
status=0
"$tmp/load" -url "$api" -metrics "http://$metrics/metrics" -duration "$dur" "$@" || status=$?
kill -INT "$pid"
if ! wait "$pid"; then echo "server did not shut down cleanly"; tail -20 "$tmp/log"; status=1; fi
pid=""
if grep -q 'level=ERROR' "$tmp/log"; then echo "server logged errors:"; grep 'level=ERROR' "$tmp/log" | head -20; status=1; fi
exit $status
