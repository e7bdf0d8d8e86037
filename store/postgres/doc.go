// Package postgres is the Store for several server processes behind one
// load balancer: PostgreSQL through github.com/jackc/pgx/v5 (pgxpool, no
// database/sql), with embedded numbered migrations applied at Open. It
// passes store/storetest like memstore and sqlite.
//
// # Several processes, one database
//
// Every process opens its own Store (its own pool) on the same database
// and, when Options.Schema is set, the same schema. Nothing is coordinated
// in memory; each guarantee below holds across processes because the
// database enforces it:
//
//   - Migrations: Open runs every pending migration in one transaction
//     that first takes pg_advisory_xact_lock on a key derived from the
//     schema name. Processes booting together queue on the lock; the first
//     applies the migrations and records them in schema_migrations, the
//     others then find nothing to do. A failed migration rolls back whole
//     (PostgreSQL DDL is transactional).
//   - Audit chain: each tenant has one audit_heads row (last seq and hash).
//     AppendAuditRecords locks the heads of the tenants it writes with
//     INSERT ... ON CONFLICT DO UPDATE ... RETURNING, in tenant id order
//     (so two appends cannot deadlock), assigns seq = head+1, PrevHash =
//     head hash, Hash = audit.ChainHash, inserts the records in one
//     pgx.Batch and advances the heads, all in one transaction. Appends of
//     one tenant are therefore serialised and its chain has no gap or fork;
//     appends of different tenants proceed in parallel. Meta is normalised
//     by a JSON round trip before hashing, as in the SQLite store, so the
//     hash matches the record a reader gets back.
//   - Refresh tokens: UseRefreshToken is one DELETE ... RETURNING, so of
//     concurrent users of one token exactly one gets it.
//   - Service instances: EnsureServiceInstance inserts with ON CONFLICT
//     (tenant_id, source) DO NOTHING and then selects, so racing callers all
//     get the one row that won.
//   - Uniqueness (tenant codes, user names, key hashes, ...) is enforced by
//     unique constraints; a violation (SQLSTATE 23505) is fault.Conflict.
//     The client CA table admits one row (id = 1), so concurrent first
//     starts agree on the CA committed first.
//   - Registration tokens: UseRegistrationToken is one UPDATE ... WHERE
//     used < max_clients AND expires_at > now RETURNING; concurrent users
//     queue on the row and re-check the condition, so no more than
//     max_clients succeed. Only a refused call reads again, to tell
//     NotFound, Expired and Conflict apart.
//   - Export jobs: ClaimExportJob is one UPDATE whose subquery picks the
//     oldest claimable job FOR UPDATE SKIP LOCKED; Renew, Complete and Fail
//     check the lease holder and lease expiry in their own UPDATE's WHERE.
//     ScanAuditRecords reads keyset pages of ScanChunk records, each a
//     short statement, so an export holds neither a connection nor a
//     snapshot while it compresses.
//   - Audit times: the chain head also keeps the last record's time, and an
//     append stamps a record no earlier than it, so times never decrease
//     along a chain whatever the processes' clocks.
//   - First start: WithLock (a row lock on store_locks, taken by a
//     transaction held open while the caller works on other connections)
//     serialises the creation of the first signing key, the client CA and
//     the root tenant across processes (latchkey.Locker).
//   - Wake-ups: Notify and Listen (latchkey.Notifier) carry "a job was
//     queued" from one process's API to every process's export worker over
//     LISTEN/NOTIFY; the workers still poll, so a lost signal only delays.
//
// Transactions run at READ COMMITTED, PostgreSQL's default; the row locks
// above, not the isolation level, provide the guarantees. A transaction
// that still fails with a serialization failure or a deadlock (40001,
// 40P01) is run again, up to three times, then reported as
// fault.Unavailable; so is a cancelled query (57014), a cancelled context
// and a lost or refused connection. Errors are mapped by SQLSTATE and
// error type, never by message text; pgx.ErrNoRows is fault.NotFound.
//
// Size Options.MaxConns so that processes × MaxConns stays below the
// server's max_connections (or use a pooler such as PgBouncer in
// transaction mode; the store keeps no session state beyond search_path,
// which it sets as a startup parameter).
//
// # Types
//
// Times are timestamptz: PostgreSQL keeps microseconds, pgx truncates a
// time.Time to the microsecond when it encodes it, and the store scans
// every timestamptz in UTC, so times round-trip exactly at the precision
// the other stores use. Byte strings (hashes, ids, sealed keys) are bytea.
// Settings and string lists are jsonb. Audit meta is json, which keeps the
// text as written and, unlike jsonb, accepts \u0000, so no caller-supplied
// string can stop a record from being stored. Text columns reject NUL
// bytes (SQLSTATE 22021), which the store reports as fault.Invalid; SQLite
// would have stored them.
//
// # Portability (CockroachDB)
//
// The SQL is kept portable where that is cheap. The audit chain uses a row
// lock, not an advisory lock, and INSERT ... ON CONFLICT, DELETE ...
// RETURNING, bytea, jsonb and timestamptz all exist in CockroachDB, whose
// SERIALIZABLE transactions report contention as 40001, which the retry
// above absorbs. What differs:
//
//   - pg_advisory_xact_lock (migrations) is not a real lock in CockroachDB;
//     there, migrations would serialise on a row lock in a one-row lock
//     table created ahead of time, or run as a separate deployment step.
//   - CREATE SCHEMA / CREATE TABLE inside a transaction that also writes
//     rows works in PostgreSQL; CockroachDB restricts mixing schema changes
//     and writes in one transaction.
//   - json is an alias of jsonb in CockroachDB, so the \u0000 tolerance of
//     audit meta does not carry over.
//   - The existence check for the schema reads pg_namespace, which
//     CockroachDB also provides.
//   - There is no LISTEN/NOTIFY: Listen keeps retrying quietly and the
//     export workers rely on their poll. FOR UPDATE SKIP LOCKED needs
//     CockroachDB 23.1 or later.
package postgres
