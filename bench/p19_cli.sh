#!/usr/bin/env bash
# p19_cli.sh: P19's end-to-end run (API-cli.md): N Keycloak users (default
# 1,000,000) through `latchkey user import --format keycloak` into
# `latchkey serve` on SQLite, timed, with the load average before and after
# and the server's CPU. Long (minutes at 1M) and disk-hungry (the realm file
# is ~570 MB at 1M): run it once, on a machine as quiet as you can get.
#
#   bench/p19_cli.sh [N]
#
# The first and last 100k come from the command's plain progress lines
# (one every 10 s, in import.err).
set -euo pipefail
N=${1:-1000000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(mktemp -d /tmp/p19cli.XXXXXX)
cd "$DIR"
go build -C "$ROOT" -o "$DIR/latchkey" ./cmd/latchkey

# A kc.sh export --users realm_file: PBKDF2-SHA256 at 27,500 iterations
# (Keycloak's old default), with email and names.
python3 - "$N" <<'PY'
import json, os, base64, sys
n = int(sys.argv[1])
salt = base64.b64encode(b"sixteen-byte-sal").decode()
with open("realm-users.json", "w") as f:
    f.write('{"realm":"bench","enabled":true,"users":[')
    for i in range(n):
        u = {"id": "00000000-0000-4000-8000-%012d" % i, "createdTimestamp": 1700000000000,
             "username": "user%07d" % i, "enabled": True, "email": "user%07d@example.com" % i,
             "emailVerified": True, "firstName": "U", "lastName": str(i),
             "credentials": [{"id": "c%d" % i, "type": "password", "createdDate": 1700000000000,
                 "secretData": json.dumps({"value": base64.b64encode(os.urandom(32)).decode(), "salt": salt, "additionalParameters": {}}),
                 "credentialData": json.dumps({"hashIterations": 27500, "algorithm": "pbkdf2-sha256", "additionalParameters": {}})}]}
        f.write(("," if i else "") + json.dumps(u))
    f.write("]}")
PY

export PLATFORM_ADMIN_PASSWORD=p19-admin-password-1
./latchkey serve --addr 127.0.0.1:0 --tls-addr "" --data ./data --log-level warn > serve.out 2> serve.err &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
until grep -q "serving on" serve.out; do
	kill -0 $SERVER || { cat serve.err; exit 1; }
	sleep 0.2
done
ADDR=$(sed -n 's/^Latchkey is serving on \(http:\/\/[^ ]*\).*/\1/p' serve.out | head -1)
export LATCHKEY_URL=$ADDR XDG_CONFIG_HOME=$DIR/config CI=1
echo "$PLATFORM_ADMIN_PASSWORD" | ./latchkey login --name admin --password-stdin
./latchkey tenant create Bench --code BENCH00001 > /dev/null
echo "load before: $(cat /proc/loadavg)"
start=$(date +%s.%N)
./latchkey user import --tenant BENCH00001 --format keycloak --no-progress --report report.jsonl realm-users.json 2> import.err
end=$(date +%s.%N)
echo "load after:  $(cat /proc/loadavg)"
echo "wall: $(echo "$end - $start" | bc) s for $N users"
echo "server cpu: $(ps -o time= -p $SERVER)"
echo "progress lines: $DIR/import.err"
