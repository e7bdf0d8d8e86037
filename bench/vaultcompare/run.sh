#!/usr/bin/env bash
# P14 and P15 (API-keys.md, TARGETS.md) with wrk: the vault's encrypt and
# decrypt over HTTP, one item of 1 KiB and batches of 100, side by side
# with OpenBao v2.6.2 transit, in alternating rounds on one machine:
#   lk-get        Latchkey's authenticated GET /vault/keys2?limit=1 (P2's
#                 request, the guard: P14 >= 0.5x of it)
#   lk-enc        Latchkey POST /vault/keys2/k/encrypt, AES-256-GCM, 1 KiB,
#                 an OAuth access token with the vault scopes (per-request
#                 authentication; the audit record is on disk before the answer)
#   lk-dec        its decrypt of one such ciphertext
#   lk-batch      encrypt with batch_input of 100 items of 1 KiB
#   bao-aud-enc   OpenBao POST /v1/transit/encrypt/k, aes256-gcm96, a token
#                 whose policy allows only update on transit/encrypt/k and
#                 transit/decrypt/k, a file audit device
#   bao-aud-dec   its decrypt
#   bao-aud-batch the same batch of 100 (the same body bytes as lk-batch)
#   bao-dev-enc   OpenBao's dev defaults: root token, no audit device
#   bao-dev-dec   its decrypt
# Each request/s figure comes with the server's CPU per request (user+system
# time of the server process over the run, /proc/PID/stat). The order of
# the runs rotates from round to round, so the machine's load falls on all
# alike; medians over rounds and the per-round ratios' range are printed.
#
# Usage: BAO=/path/to/bao bench/vaultcompare/run.sh [rounds] [duration]
#        (defaults 5 and 8s; connections: CONNS, default 64; wrk -t2)
# BAO is an OpenBao v2.6.2 binary built from source (docs/performance.md,
# "P14, P15" says how); without it only Latchkey's runs are made.
# PLATFORM_POSTGRES_DSN set and STORE=postgres runs Latchkey on PostgreSQL
# (a database it creates and drops) instead of SQLite.
# Needs wrk, curl and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
dur=${2:-8s}
conns=${CONNS:-64}
store=${STORE:-sqlite}
dsn=${PLATFORM_POSTGRES_DSN:-}
tmp=$(mktemp -d)
pids=()
dbs=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for d in "${dbs[@]}"; do psql "$dsn" -qc "DROP DATABASE IF EXISTS $d" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
withdb() { python3 -c 'import sys,urllib.parse as u;p=u.urlsplit(sys.argv[1]);print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$dsn" "$1"; }
waitfor() { for _ in $(seq 600); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "vaultcompare: $1 did not answer" >&2; exit 1; }
jget() { python3 -c 'import sys,json;d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d=d[int(k)] if isinstance(d,list) else d[k]
print(d)' "$1"; }
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user+system, clock ticks

# The bodies: 1 KiB of random bytes, base64; a batch of 100 of them.
python3 - "$tmp" <<'PY'
import base64, json, os, sys
d = sys.argv[1]
one = base64.b64encode(os.urandom(1024)).decode()
json.dump({"plaintext": one}, open(d + "/enc.json", "w"))
json.dump({"batch_input": [{"plaintext": base64.b64encode(os.urandom(1024)).decode()} for _ in range(100)]}, open(d + "/batch.json", "w"))
PY

names=() urls=() methods=() bodies=() heads=() pidof=() items=()
# add NAME METHOD URL BODYFILE|- AUTHHEADER PID ITEMS
add() { names+=("$1") methods+=("$2") urls+=("$3") bodies+=("$4") heads+=("$5") pidof+=("$6") items+=("$7"); }

# --- Latchkey --------------------------------------------------------------
go build -o "$tmp/server" ./examples/server
export PLATFORM_ADMIN_PASSWORD=vaultcompare-admin-password-1
port=$(freeport)
extra=()
if [ "$store" = postgres ]; then
  [ -n "$dsn" ] || { echo "vaultcompare: STORE=postgres needs PLATFORM_POSTGRES_DSN" >&2; exit 1; }
  db=vaultcompare_$$; psql "$dsn" -qc "CREATE DATABASE $db"; dbs+=("$db")
  extra=(-postgres "$(withdb "$db")")
fi
"$tmp/server" -addr "127.0.0.1:$port" -tls-addr "" -data "$tmp/lk" -log-level warn "${extra[@]}" >"$tmp/lk.out" 2>"$tmp/lk.log" & lkpid=$!; pids+=($lkpid)
lk="http://127.0.0.1:$port"
waitfor "$lk/healthz"
jwt=$(curl -sf "$lk/api/v1/auth/tokens/" -H 'Content-Type: application/json' \
  -d "{\"name\":\"admin\",\"password\":\"$PLATFORM_ADMIN_PASSWORD\",\"auth_domain\":\"root\"}" | jget jwt)
tid=$(python3 -c 'import sys,json,base64;p=sys.argv[1].split(".")[1];print(json.loads(base64.urlsafe_b64decode(p+"=="))["tid"])' "$jwt")
client=$(curl -sf "$lk/api/v1/admin/tenants/$tid/oauth-clients" -H "Authorization: Bearer $jwt" -H 'Content-Type: application/json' \
  -d '{"name":"vaultcompare","scopes":["vault:keys:read","vault:crypto:encrypt","vault:crypto:decrypt"]}')
cid=$(jget client_id <<<"$client") csec=$(jget client_secret <<<"$client")
at=$(curl -sf "$lk/oauth/v1/token" -d "grant_type=client_credentials&client_id=$cid&client_secret=$csec" | jget access_token)
curl -sf "$lk/api/v1/vault/keys2" -H "Authorization: Bearer $jwt" -H 'Content-Type: application/json' \
  -d '{"name":"k","algorithm":"AES","size":256}' >/dev/null
lkct=$(curl -sf "$lk/api/v1/vault/keys2/k/encrypt" -H "Authorization: Bearer $at" -H 'Content-Type: application/json' -d @"$tmp/enc.json" | jget ciphertext)
printf '{"ciphertext":"%s"}' "$lkct" >"$tmp/lk-dec.json"
curl -sf "$lk/api/v1/vault/keys2/k/decrypt" -H "Authorization: Bearer $at" -H 'Content-Type: application/json' -d @"$tmp/lk-dec.json" >/dev/null
add lk-get GET "$lk/api/v1/vault/keys2?limit=1" - "Bearer $at" $lkpid 1
add lk-enc POST "$lk/api/v1/vault/keys2/k/encrypt" "$tmp/enc.json" "Bearer $at" $lkpid 1
add lk-dec POST "$lk/api/v1/vault/keys2/k/decrypt" "$tmp/lk-dec.json" "Bearer $at" $lkpid 1
add lk-batch POST "$lk/api/v1/vault/keys2/k/encrypt" "$tmp/batch.json" "Bearer $at" $lkpid 100

# --- OpenBao ---------------------------------------------------------------
if [ -n "${BAO:-}" ]; then
  "$BAO" version >"$tmp/bao.version"
  # bao NAME: a dev server (in-memory storage, root token "root", one
  # unsealed node, -log-level=warn, no quotas) with transit and key k.
  bao() {
    local name=$1 port; port=$(freeport)
    # API-made audit devices need this in a config file beside -dev (OpenBao 2.x).
    echo 'unsafe_allow_api_audit_creation = true' >"$tmp/$name.hcl"
    "$BAO" server -dev -dev-root-token-id=root -dev-listen-address="127.0.0.1:$port" -log-level=warn \
      -config="$tmp/$name.hcl" >"$tmp/$name.log" 2>&1 & pids+=($!)
    eval "${name//-/_}_pid=$!"
    local u="http://127.0.0.1:$port"
    waitfor "$u/v1/sys/health"
    for _ in $(seq 100); do curl -sf "$u/v1/sys/health" >/dev/null && break; sleep 0.1; done
    curl -sf -H 'X-Vault-Token: root' "$u/v1/sys/mounts/transit" -d '{"type":"transit"}'
    curl -sf -H 'X-Vault-Token: root' "$u/v1/transit/keys/k" -d '{"type":"aes256-gcm96"}' >/dev/null
    eval "${name//-/_}_url=$u"
  }
  bao bao-aud
  bao bao-dev
  # The audited server: a file audit device and a token allowed only
  # update on the two paths (root bypasses policy checks).
  curl -sf -X PUT -H 'X-Vault-Token: root' "$bao_aud_url/v1/sys/audit/file" \
    -d "{\"type\":\"file\",\"options\":{\"file_path\":\"$tmp/bao-audit.log\"}}"
  curl -sf -X PUT -H 'X-Vault-Token: root' "$bao_aud_url/v1/sys/policies/acl/enc" \
    -d '{"policy":"path \"transit/encrypt/k\" { capabilities = [\"update\"] }\npath \"transit/decrypt/k\" { capabilities = [\"update\"] }"}'
  scoped=$(curl -sf -H 'X-Vault-Token: root' "$bao_aud_url/v1/auth/token/create" \
    -d '{"policies":["enc"],"no_default_policy":true,"ttl":"2h"}' | jget auth.client_token)
  # The scoped token may not read keys: the policy is what it says.
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Vault-Token: $scoped" "$bao_aud_url/v1/transit/keys/k")
  [ "$code" = 403 ] || { echo "vaultcompare: the scoped OpenBao token read the key ($code)" >&2; exit 1; }
  for name in bao-aud bao-dev; do
    v=${name//-/_}; u=${v}_url; p=${v}_pid; tok=root; [ $name = bao-aud ] && tok=$scoped
    ct=$(curl -sf -H "X-Vault-Token: $tok" "${!u}/v1/transit/encrypt/k" -d @"$tmp/enc.json" | jget data.ciphertext)
    printf '{"ciphertext":"%s"}' "$ct" >"$tmp/$name-dec.json"
    curl -sf -H "X-Vault-Token: $tok" "${!u}/v1/transit/decrypt/k" -d @"$tmp/$name-dec.json" >/dev/null
    add "$name-enc" POST "${!u}/v1/transit/encrypt/k" "$tmp/enc.json" "$tok" "${!p}" 1
    add "$name-dec" POST "${!u}/v1/transit/decrypt/k" "$tmp/$name-dec.json" "$tok" "${!p}" 1
    if [ $name = bao-aud ]; then add "$name-batch" POST "${!u}/v1/transit/encrypt/k" "$tmp/batch.json" "$tok" "${!p}" 100; fi
  done
  [ -s "$tmp/bao-audit.log" ] || { echo "vaultcompare: OpenBao's audit device wrote nothing" >&2; exit 1; }
fi

# --- rounds ----------------------------------------------------------------
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "go: $(go version)"
  echo "latchkey: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), store $store"
  [ -n "${BAO:-}" ] && echo "openbao: $(head -1 "$tmp/bao.version")"
  echo "wrk -t2 -c$conns -d$dur, $rounds rounds; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$tmp/meta"
declare -A rps cpr
n=${#names[@]}
echo "round name requests/s items/s cpu-us/request"
for r in $(seq "$rounds"); do
  for j in $(seq 0 $((n - 1))); do
    i=$(( (j + r - 1) % n ))  # rotate the order each round
    auth=${heads[$i]}
    hdr="Authorization"; [[ ${names[$i]} == bao-* ]] && hdr="X-Vault-Token"
    {
      printf 'wrk.method="%s"\nwrk.headers["Content-Type"]="application/json"\nwrk.headers["%s"]="%s"\n' "${methods[$i]}" "$hdr" "$auth"
      if [ "${bodies[$i]}" != - ]; then printf 'local f=io.open("%s","rb")\nwrk.body=f:read("*a")\nf:close()\n' "${bodies[$i]}"; fi
    } >"$tmp/s.lua"
    c0=$(cpu "${pidof[$i]}")
    out=$(wrk -t2 -c"$conns" -d"$dur" --timeout 10s -s "$tmp/s.lua" "${urls[$i]}")
    c1=$(cpu "${pidof[$i]}")
    if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then echo "vaultcompare: ${names[$i]} answered errors:"; echo "$out"; exit 1; fi
    req=$(awk '/requests in/ {print $1}' <<<"$out")
    x=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    c=$(python3 -c "print('%.0f' % (($c1-$c0)/$ticks*1e6/$req))")
    rps[${names[$i]}]+="$x " cpr[${names[$i]}]+="$c "
    eval "r_${r}_${names[$i]//-/_}=$x"
    echo "$r ${names[$i]} $x $(python3 -c "print('%.0f' % ($x*${items[$i]}))") $c"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- report ----------------------------------------------------------------
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rng() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {print lo "-" hi}'; }
echo
echo "median requests/s (range), median server CPU us/request:"
for j in $(seq 0 $((n - 1))); do
  nm=${names[$j]}
  printf '  %-14s %9s  (%s)  items/s %s  cpu %s us\n' "$nm" "$(med "${rps[$nm]}")" "$(rng "${rps[$nm]}")" \
    "$(python3 -c "print('%.0f' % ($(med "${rps[$nm]}")*${items[$j]}))")" "$(med "${cpr[$nm]}")"
done
# ratio A B TARGET LABEL: median of the per-round ratios A/B, their range, the verdict
ratio() {
  local a=${1//-/_} b=${2//-/_} vals=""
  for r in $(seq "$rounds"); do
    local x="r_${r}_$a" y="r_${r}_$b"
    [ -n "${!x:-}" ] && [ -n "${!y:-}" ] && vals+="$(python3 -c "print(${!x}/${!y})") "
  done
  [ -n "$vals" ] || return 0
  local m; m=$(med "$vals")
  printf '  %-44s %5.2fx (%s)  target >= %sx: %s\n' "$4" "$m" "$(rng "$vals" | python3 -c 'import sys;a,b=sys.stdin.read().strip().split("-");print("%.2f-%.2f"%(float(a),float(b)))')" "$3" \
    "$(python3 -c "print('met' if $m >= $3 else 'MISSED')")"
}
echo
echo "ratios (median of the per-round ratios, range):"
ratio lk-enc lk-get 0.5 "P14 guard: encrypt / authenticated GET"
if [ -n "${BAO:-}" ]; then
  ratio lk-enc bao-aud-enc 2 "P14 encrypt / OpenBao audited, scoped"
  ratio lk-enc bao-dev-enc 1.2 "P14 encrypt / OpenBao dev defaults"
  ratio lk-dec bao-aud-dec 2 "P14 decrypt / OpenBao audited, scoped"
  ratio lk-dec bao-dev-dec 1.2 "P14 decrypt / OpenBao dev defaults"
  ratio lk-batch bao-aud-batch 3 "P15 batch of 100 / OpenBao audited batch"
fi
