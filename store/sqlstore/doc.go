// Package sqlstore is every area's Store on a SQL database, written once
// for SQLite (store/sqlite) and PostgreSQL (store/postgres), after dex's
// storage/sql. Those packages open the database, apply their migrations
// and hand New a Conn and a Dialect; everything else is here.
//
// # Layout
//
// One file per area holds its queries, transactions and row scanning:
// identity.go, clients.go, vault.go, audit.go (the chain), export.go,
// events.go, notify.go, eventstream.go, authenticator.go, vtoken.go and
// guide.go. sqlstore.go has what they share: Conn, the database as the
// store uses it (a pool, a transaction, a batch of statements, a
// two-batch pipelined transaction, error mapping), and Dialect, the SQL
// text that differs. Statements use $1, $2, ... placeholders, which both
// databases read; values are bound and scanned as Go types (time.Time,
// *time.Time for "none", []string, []byte, ...) and the SQLite Conn
// converts them to its columns.
//
// Adding a field to a stored type is one edit here (the column list, the
// insert's arguments and the scan, which sit together in the area's file)
// plus one migration per database: a numbered file in
// store/sqlite/migrations and in store/postgres/migrations. The
// conformance suite (store/storetest) then runs the field on memstore,
// SQLite and PostgreSQL alike.
//
// What really differs is kept out of the queries: Dialect (a list bound
// as one parameter, row locks and SKIP LOCKED, an advisory lock, SQLite's
// unindexed column, the notification merge that PostgreSQL writes as a
// LATERAL join), and Conn, where PostgreSQL sends a batch in one round
// trip (pgx.Batch) and SQLite runs it statement by statement on its one
// writer.
//
// # Guarantees
//
// Each holds across processes sharing a PostgreSQL database because the
// database enforces it, and on SQLite because one connection writes:
//
//   - Audit chain: each tenant has one audit_heads row (last seq, hash and
//     time). An append locks the heads of its tenants with INSERT ... ON
//     CONFLICT DO UPDATE ... RETURNING, in tenant id order (no deadlock),
//     chains the records (seq = head+1, PrevHash = head hash, times never
//     before the head's), stores them as one audit_batches row per tenant
//     (the canonical JSON each hash was computed over, and the hashes) and
//     advances the heads in one transaction (Conn.Pipeline). A reader
//     decodes the hashed bytes, so what it gets back hashes to the stored
//     hash.
//   - Events: event_heads numbers each tenant's log the same way, so seqs
//     are gapless and a reader that sees a head sees every event up to it;
//     AppendEventsAudited puts events and their records in one commit.
//   - Notification retrieval locks the subscription's row, reads the head,
//     reads the page and advances the cursor in one transaction, so a page
//     is handed out once however many pollers there are.
//   - Single use: refresh tokens and WebAuthn challenges are taken with one
//     DELETE ... RETURNING; registration tokens with one conditional UPDATE.
//   - Leases: export jobs and event-stream subscriptions are claimed with
//     one UPDATE whose candidates are locked with SKIP LOCKED, and renewed,
//     completed or recorded only while the lease is held (checked in the
//     same statement or under a row lock).
//   - Uniqueness is enforced by constraints; a violation is
//     fault.Conflict, mapped by error code (Conn.MapErr), never by message.
//   - Count and page of a list are read in one snapshot (Querier.Batch).
package sqlstore
