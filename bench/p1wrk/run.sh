#!/usr/bin/env bash
# P1 with wrk: the token endpoint (client_credentials) measured from a
# client outside the measured processes, side by side, in alternating
# rounds on one machine:
#   bare      bench/p1wrk/bare, the bare ES256 handler TARGETS.md names as P1's baseline
#   sqlite    the example server on SQLite (FULL sync; audit record on disk before the answer)
#   postgres  the example server on PostgreSQL, when PLATFORM_POSTGRES_DSN is set
#   hydra     Ory Hydra v2 on PostgreSQL, when HYDRA names its binary (client
#             secret hashing reduced to one PBKDF2 iteration, opaque tokens:
#             Hydra's cheapest configuration)
# Usage: bench/p1wrk/run.sh [rounds] [duration]   (defaults 3 and 10s)
# Needs wrk and python3. Databases it creates are dropped at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
dur=${2:-10s}
tmp=$(mktemp -d)
pids=()
dbs=()
dsn=${PLATFORM_POSTGRES_DSN:-}
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for d in "${dbs[@]}"; do psql "$dsn" -qc "DROP DATABASE IF EXISTS $d" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
withdb() { python3 -c 'import sys,urllib.parse as u;p=u.urlsplit(sys.argv[1]);print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$dsn" "$1"; }
waitfor() { for _ in $(seq 300); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "p1wrk: $1 did not answer" >&2; exit 1; }

go build -o "$tmp/server" ./examples/server
go build -o "$tmp/bare" ./bench/p1wrk/bare
export PLATFORM_ADMIN_PASSWORD=p1wrk-admin-password-1
names=() urls=() bodies=()

port=$(freeport)
"$tmp/bare" -addr "127.0.0.1:$port" & pids+=($!)
waitfor "http://127.0.0.1:$port/"
names+=(bare) urls+=("http://127.0.0.1:$port/oauth/v1/token") bodies+=("grant_type=client_credentials&client_id=c&client_secret=s")

# latchkey NAME [EXTRA FLAGS]: starts the example server and registers a client.
latchkey() {
  local name=$1; shift
  local port; port=$(freeport)
  "$tmp/server" -addr "127.0.0.1:$port" -tls-addr "" -data "$tmp/$name" "$@" >"$tmp/$name.out" 2>"$tmp/$name.log" & pids+=($!)
  local base="http://127.0.0.1:$port"
  waitfor "$base/healthz"
  local jwt tid client
  jwt=$(curl -s "$base/api/v1/auth/tokens/" -H 'Content-Type: application/json' \
    -d "{\"name\":\"admin\",\"password\":\"$PLATFORM_ADMIN_PASSWORD\",\"auth_domain\":\"root\"}" | python3 -c 'import sys,json;print(json.load(sys.stdin)["jwt"])')
  tid=$(python3 -c 'import sys,json,base64;p=sys.argv[1].split(".")[1];print(json.loads(base64.urlsafe_b64decode(p+"=="))["tid"])' "$jwt")
  client=$(curl -s "$base/api/v1/admin/tenants/$tid/oauth-clients" -H "Authorization: Bearer $jwt" -H 'Content-Type: application/json' \
    -d '{"name":"p1wrk","scopes":["audit:export"]}' | python3 -c 'import sys,json;d=json.load(sys.stdin);print("client_id=%s&client_secret=%s"%(d["client_id"],d["client_secret"]))')
  names+=("$name") urls+=("$base/oauth/v1/token") bodies+=("grant_type=client_credentials&$client")
}
latchkey sqlite
if [ -n "$dsn" ]; then
  db=p1wrk_latchkey_$$; psql "$dsn" -qc "CREATE DATABASE $db"; dbs+=("$db")
  latchkey postgres -postgres "$(withdb "$db")"
fi
if [ -n "${HYDRA:-}" ]; then
  [ -n "$dsn" ] || { echo "p1wrk: HYDRA needs PLATFORM_POSTGRES_DSN" >&2; exit 1; }
  db=p1wrk_hydra_$$; psql "$dsn" -qc "CREATE DATABASE $db"; dbs+=("$db")
  pub=$(freeport) adm=$(freeport)
  cat >"$tmp/hydra.yml" <<YML
dsn: $(withdb "$db")
serve: {public: {host: 127.0.0.1, port: $pub}, admin: {host: 127.0.0.1, port: $adm}}
urls: {self: {issuer: "http://127.0.0.1:$pub"}}
secrets: {system: ["p1wrk-benchmark-system-secret-32-bytes"]}
oauth2: {hashers: {algorithm: pbkdf2, pbkdf2: {iterations: 1}}}
log: {level: error}
YML
  "$HYDRA" migrate sql up -e --yes -c "$tmp/hydra.yml" >/dev/null
  "$HYDRA" serve all --dev -c "$tmp/hydra.yml" >"$tmp/hydra.log" 2>&1 & pids+=($!)
  waitfor "http://127.0.0.1:$adm/health/ready"
  curl -sf "http://127.0.0.1:$adm/admin/clients" -H 'Content-Type: application/json' \
    -d '{"client_id":"p1wrk","client_secret":"p1wrk-secret-0123456789abcdef","grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_post","scope":"audit:export"}' >/dev/null
  names+=(hydra) urls+=("http://127.0.0.1:$pub/oauth2/token") bodies+=("grant_type=client_credentials&client_id=p1wrk&client_secret=p1wrk-secret-0123456789abcdef&scope=audit:export")
fi

echo "round ${names[*]}   (requests/s, wrk -t2 -c64 -d$dur)"
declare -A all
for r in $(seq "$rounds"); do
  line="$r"
  for i in "${!names[@]}"; do
    printf 'wrk.method="POST"\nwrk.body="%s"\nwrk.headers["Content-Type"]="application/x-www-form-urlencoded"\n' "${bodies[$i]}" >"$tmp/s.lua"
    out=$(wrk -t2 -c64 -d"$dur" -s "$tmp/s.lua" "${urls[$i]}")
    if grep -q 'Non-2xx' <<<"$out"; then echo "p1wrk: ${names[$i]} answered errors:"; echo "$out"; exit 1; fi
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    all[${names[$i]}]+="$rps "
    line+=" $rps"
  done
  echo "$line"
done
echo "median requests/s and ratio to bare:"
base=$(tr ' ' '\n' <<<"${all[bare]}" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
for n in "${names[@]}"; do
  m=$(tr ' ' '\n' <<<"${all[$n]}" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$n $m $(python3 -c "print('%.2fx' % ($m/$base))")"
done
