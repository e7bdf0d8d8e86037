// Package postgres is the Store for several server processes behind one
// load balancer: PostgreSQL through github.com/jackc/pgx/v5 (pgxpool, no
// database/sql), with embedded numbered migrations applied at Open. The
// queries are store/sqlstore's; this package opens the pool, migrates,
// and adapts pgx to sqlstore.Conn. It passes store/storetest like memstore
// and sqlite.
//
// # Several processes, one database
//
// Every process opens its own Store (its own pool) on the same database
// and, when Options.Schema is set, the same schema. Nothing is coordinated
// in memory; the guarantees listed in store/sqlstore hold because the
// database enforces them (row locks, unique constraints, SKIP LOCKED).
// Besides those:
//
//   - Migrations: Open runs every pending migration in one transaction
//     that first takes pg_advisory_xact_lock on a key derived from the
//     schema name, so of processes booting together the first applies them
//     and the others find nothing to do. A failed migration rolls back.
//   - First start: WithLock (a row lock on store_locks, held by an open
//     transaction while the caller works on other connections) serialises
//     the creation of the first signing key, the client CA and the root
//     tenant across processes (latchkey.Locker).
//   - Wake-ups: Notify and Listen (latchkey.Notifier) carry signals between
//     processes over LISTEN/NOTIFY; workers still poll, so a lost signal
//     only delays.
//
// Transactions run at READ COMMITTED; the row locks, not the isolation
// level, provide the guarantees. A transaction that fails with a
// serialization failure or a deadlock (40001, 40P01) is run again, up to
// three times, then reported as fault.Unavailable; so is a cancelled query
// (57014), a cancelled context and a lost or refused connection. The
// append transactions (events, audit records, authenticator imports) take
// two round trips: BEGIN travels with the head locks, COMMIT with the
// inserts. Size Options.MaxConns so that processes × MaxConns stays below
// the server's max_connections (or use PgBouncer in transaction mode: the
// store keeps no session state beyond search_path, a startup parameter).
//
// # Types
//
// Times are timestamptz, microseconds, scanned in UTC, so they round-trip
// exactly at the precision the other stores use; "none" is NULL (the zero
// time for event-stream leases). Byte strings are bytea, settings and
// JSON lists jsonb, event user ids and type lists text[]. Audit meta is
// json, which keeps the text as written and, unlike jsonb, accepts \u0000.
// Text columns reject NUL bytes (SQLSTATE 22021), reported as
// fault.Invalid.
//
// # Portability (CockroachDB)
//
// INSERT ... ON CONFLICT, DELETE ... RETURNING, FOR UPDATE SKIP LOCKED
// (23.1 and later), bytea, jsonb and timestamptz exist in CockroachDB,
// whose SERIALIZABLE transactions report contention as 40001, which the
// retry absorbs. What differs: pg_advisory_xact_lock (migrations, virtual
// token creation) is not a real lock there; schema changes and writes do
// not mix in one transaction; json is jsonb, so audit meta loses its
// \u0000 tolerance; and there is no LISTEN/NOTIFY, so Listen keeps
// retrying quietly and workers rely on their poll.
package postgres
