#!/usr/bin/env bash
# Runs the PostgreSQL store's tests (store/postgres, and store/sqlstore's
# tests on both databases), and the two-process tests of the
# example server (two real server processes on one database), against the
# machine's local server.
#
# The tests skip themselves when PLATFORM_POSTGRES_DSN is unset, which is
# right on a laptop and wrong in CI: here a skipped test, or a run in which
# no test ran, fails the script, so a missing database cannot pass as green.
#
# Usage: bash .ci/postgres.sh   (from anywhere; set PLATFORM_POSTGRES_DSN to
# use another server than 127.0.0.1:5432, database test, user postgres).
set -euo pipefail
cd "$(dirname "$0")/.."

host=127.0.0.1
if ! pg_isready -q -h "$host"; then
	if ! command -v pg_ctlcluster >/dev/null; then
		echo "postgres.sh: PostgreSQL is not running and pg_ctlcluster is not installed" >&2
		exit 1
	fi
	echo "postgres.sh: starting PostgreSQL"
	for ver in $(ls /etc/postgresql); do
		# pg_ctlcluster waits until the server accepts connections.
		pg_ctlcluster --skip-systemctl-redirect "$ver" main start
	done
	if ! pg_isready -h "$host"; then
		echo "postgres.sh: PostgreSQL did not start" >&2
		exit 1
	fi
fi

export PLATFORM_POSTGRES_DSN="${PLATFORM_POSTGRES_DSN:-postgres://postgres@$host:5432/test?sslmode=disable}"
if ! psql "$PLATFORM_POSTGRES_DSN" -qAtc 'SELECT 1' >/dev/null 2>&1; then
	# The server is up but the database may be missing on a new machine.
	createdb -h "$host" -U postgres test
fi

# Every test makes a schema of some fifty tables and drops it: thousands
# of them leave PostgreSQL's catalogs millions of dead rows (3.3 M in
# pg_attribute after one day's sessions here), and every later schema's
# DDL slows with them (store/postgres's suite: 164 s, 85 s after this).
# Autovacuum does not keep up with catalogs churned this fast; CI's
# superuser compacts them (a few seconds), and goes on if it may not.
psql "$PLATFORM_POSTGRES_DSN" -qc 'VACUUM FULL pg_catalog.pg_attribute, pg_catalog.pg_depend, pg_catalog.pg_class,
	pg_catalog.pg_index, pg_catalog.pg_type, pg_catalog.pg_constraint, pg_catalog.pg_attrdef, pg_catalog.pg_trigger,
	pg_catalog.pg_namespace, pg_catalog.pg_inherits, pg_catalog.pg_sequence, pg_catalog.pg_statistic' 2>/dev/null ||
	echo "postgres.sh: cannot compact the catalogs (not a superuser?); going on"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
go test -count=1 -timeout 30m -v ./store/postgres/... ./store/sqlstore/... 2>&1 | tee "$out" || status=$?
if [ "$status" -eq 0 ]; then
	go test -count=1 -v -run '^(TestTwoProcessesOnePostgres|TestNotificationsExactlyOnceAcrossTwoProcesses|TestKilledProcessSubscriptionsMoveWithinSeconds|TestVaultRotationsAcrossProcesses|TestVaultChangeHoldsOnEveryProcessWithin5s|TestVaultAutoRotationSurvivesKill|TestMFAOnceAcrossThreeProcesses|TestSigningKeyRotationAcrossProcesses)$' ./examples/server/ 2>&1 | tee -a "$out" || status=$?
	if ! grep -q -- '--- PASS: TestTwoProcessesOnePostgres' "$out"; then
		echo "postgres.sh: the two-process test did not run" >&2
		exit 1
	fi
	if ! grep -q -- '--- PASS: TestNotificationsExactlyOnceAcrossTwoProcesses' "$out"; then
		echo "postgres.sh: the two-process notification test did not run" >&2
		exit 1
	fi
	# The partitioned event and audit logs (migrations 0018 and 0019):
	# their maintenance, the migration from schema 14 and from the v11
	# fixture, and pruning (event-stream cursors' reads too, migration
	# 0020). TestDeactivationAcrossThreeProcesses is R19: a SCIM
	# deactivation refuses the user's tokens on three processes within 5 s.
	for t in TestMigrationFromV14 TestPartitionMaintenance TestDeleteExpiredDropsPartitions TestQueriesPruneToRecentPartitions TestAuditScanPrunesOlderPartitions TestEventStreamReadsPruneOlderPartitions TestWritesRecreateMissingPartitions TestUpgradeFromV11/postgres TestDeactivationAcrossThreeProcesses; do
		if ! grep -q -- "--- PASS: $t" "$out"; then
			echo "postgres.sh: $t did not run" >&2
			exit 1
		fi
	done
	# API-fapi.md's one-time credentials across 3 processes (R19): a
	# client assertion's jti, a PAR request_uri and a device code succeed
	# once; the user-code page's wrong codes count on every process.
	for t in TestFAPIReplaysAcrossProcesses/client_assertion_jti TestFAPIReplaysAcrossProcesses/request_uri TestFAPIReplaysAcrossProcesses/device_code TestFAPIReplaysAcrossProcesses/device_user-code_throttle; do
		if ! grep -q -- "--- PASS: $t" "$out"; then
			echo "postgres.sh: $t did not run" >&2
			exit 1
		fi
	done
	# API-keys.md's signing keys: rotations under load on three processes
	# (no request fails, every token verifies everywhere, the JWKS never
	# lacks a live token's key) and the compromised-key drill (the old kid
	# refused everywhere within 5 s).
	if ! grep -q -- '--- PASS: TestSigningKeyRotationAcrossProcesses' "$out"; then
		echo "postgres.sh: the signing-key rotation test did not run" >&2
		exit 1
	fi
	# R13/R14 of API-mfa.md: one-time codes and mfa_tokens once across
	# three processes, the stored throttles.
	if ! grep -q -- '--- PASS: TestMFAOnceAcrossThreeProcesses' "$out"; then
		echo "postgres.sh: the three-process MFA test did not run" >&2
		exit 1
	fi
	if ! grep -q -- '--- PASS: TestKilledProcessSubscriptionsMoveWithinSeconds' "$out"; then
		echo "postgres.sh: the takeover test did not run" >&2
		exit 1
	fi
	# The latchkey command's scripts (issue 36) with the server on
	# PostgreSQL: every subcommand, each import format followed by a
	# login, export -> verify -> tamper.
	go test -count=1 -v -run '^TestScriptsPostgres$' ./cmd/latchkey/ 2>&1 | tee -a "$out" || status=$?
	if ! grep -q -- '--- PASS: TestScriptsPostgres' "$out"; then
		echo "postgres.sh: the latchkey command's PostgreSQL scripts did not run" >&2
		exit 1
	fi
	# The vault across processes (issue 33): rotations by compare-and-set,
	# a key change holding everywhere within 5 s, the automatic rotation
	# taken over from a killed process; and the vault store's conformance
	# and the migration of keys made before versions.
	for t in TestVaultRotationsAcrossProcesses TestVaultChangeHoldsOnEveryProcessWithin5s TestVaultAutoRotationSurvivesKill TestConformance/VaultConcurrentRotationsEachAddOneVersion TestConformance/VaultKeyClaims TestConformance/VaultKeyUpdateAudited TestConformance/VaultKeyCreateAudited; do
		if ! grep -q -- "--- PASS: $t" "$out"; then
			echo "postgres.sh: $t did not run" >&2
			exit 1
		fi
	done
fi

if [ "$status" -ne 0 ]; then
	echo "postgres.sh: go test failed (exit $status)" >&2
	exit "$status"
fi
if grep -q -- '--- SKIP' "$out"; then
	echo "postgres.sh: some PostgreSQL tests were skipped:" >&2
	grep -- '--- SKIP' "$out" >&2
	exit 1
fi
ran=$(grep -c -- '--- PASS' "$out" || true)
if [ "$ran" -eq 0 ]; then
	echo "postgres.sh: no PostgreSQL test ran" >&2
	exit 1
fi
echo "postgres.sh: $ran PostgreSQL tests and subtests passed"
