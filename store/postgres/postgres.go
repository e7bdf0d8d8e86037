package postgres

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/internal/migrations"
	"github.com/latchkey/latchkey/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is a PostgreSQL-backed store for every area. It is safe for
// concurrent use, and several Stores (in one process or many) may share one
// database and schema.
type Store struct {
	*sqlstore.Store
	pool     *pgxpool.Pool
	conn     *conn
	schema   string        // the schema the tables are in
	interval time.Duration // Options.PartitionInterval
	ahead    int           // Options.PartitionsAhead
	want     []migrations.Migration
}

// Dialect is PostgreSQL's SQL where it differs from SQLite's.
var Dialect = sqlstore.Dialect{
	Name:       "postgres",
	Filter:     filter.PostgreSQL,
	In:         func(expr string, n int) string { return expr + ` = ANY($` + strconv.Itoa(n) + `)` },
	ForUpdate:  ` FOR UPDATE`,
	SkipLocked: ` FOR UPDATE SKIP LOCKED`,
	LockKey:    `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
	Unindexed:  func(col string) string { return col + ` + interval '0'` },
	NotifySeqs: func(tenantID string, types []string, after, head int64, notBefore time.Time, limit int) (string, []any) {
		return notifySeqs, []any{tenantID, types, after, head, limit, notBefore}
	},
	PartitionedLogs: true,
	RecentEvents:    recentEvents,
	InsertEvents: `INSERT INTO events (tenant_id, seq, id, type_id, occurred_at, received_at, user_ids, body, trace_parent)
		SELECT t, s, i, ty, o, r, ARRAY(SELECT jsonb_array_elements_text(u::jsonb)), b::jsonb, tp
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[], $9::text[])
			AS x(t, s, i, ty, o, r, u, b, tp)`,
	InsertEventUsers: `INSERT INTO event_users (tenant_id, user_id, seq, received_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::timestamptz[])`,
}

// notifySeqs merges one index-only walk of events_by_type per type, each
// stopped at a page, through a LATERAL join over the list of types. The
// bound on received_at prunes the partitions older than the tenant's
// notification retention (events_by_type carries received_at, so the
// walks stay index-only).
const notifySeqs = `SELECT s.seq FROM unnest($2::text[]) AS t(type_id)
	CROSS JOIN LATERAL (
		SELECT x.seq FROM events x
		WHERE x.tenant_id = $1 AND x.type_id = t.type_id AND x.seq > $3 AND x.seq <= $4 AND x.received_at >= $6
		ORDER BY x.seq LIMIT $5
	) s
	ORDER BY s.seq LIMIT $5`

// recentWindow is how far before the received_at of a tenant's last event
// an events query first looks (sqlstore.Dialect.RecentEvents).
const recentWindow = "interval '1 hour'"

// recentEvents is sqlstore.Dialect.RecentEvents: the start of the
// partition that holds the instant recentWindow before the tenant's last
// event. The start of the partition, not the instant itself: a walk of a
// partition's index in seq order cannot stop at a received_at inside it,
// and would read the partition's rows below the instant one by one; a
// whole partition passes or is pruned (when the statement is planned: the
// bound is a parameter). NULL while that instant lies in the legacy
// partition (no lower_bound), whose rows, stored before migration 18, may
// have received_at out of seq order.
const recentEvents = `SELECT max(p.lower_bound) FROM event_heads h, log_partitions p
	WHERE h.tenant_id = $1 AND p.parent = 'events' AND p.lower_bound <= h.received_at - ` + recentWindow

// Options tune Open.
type Options struct {
	// Schema, when set, is created if missing and made the connections'
	// only search_path, so the store's tables live there. Empty means the
	// DSN's (or the role's) search_path, usually public. Several
	// deployments, or parallel tests, can share one database this way.
	Schema string
	// MaxConns caps the pool; zero keeps pgxpool's default (the DSN's
	// pool_max_conns, else max(4, runtime.NumCPU())). Size it against the
	// server's max_connections divided by the number of processes.
	MaxConns int32
	// PartitionInterval is the range of time one partition of the event
	// log (by received_at) and of the audit log (by last_time) covers
	// (DefaultPartitionInterval when zero): retention
	// drops an event with its partition, up to one interval after the
	// event itself expired. Choose it so that a partition holds some
	// millions of events at most; an hour suits a log that grows by
	// millions a day. Processes sharing a database should agree on it.
	PartitionInterval time.Duration
	// PartitionsAhead is how many intervals past now the partitions are
	// created ahead of time (DefaultPartitionsAhead when zero), so that
	// appends find them made; it should outlast any pause of every
	// process's retention clean-up (events.Config.CleanupEvery). A write
	// whose row finds none still succeeds: it makes the partitions up to
	// now first, waiting for the partition lease.
	PartitionsAhead int
	// Migrate applies pending migrations at Open; nil means true. With
	// false, Ready fails until Migrate has run, here or in another
	// process (latchkey serve --migrate=false, latchkey migrate up).
	Migrate *bool
}

// maxAttempts bounds how often a transaction is run again after a
// serialization failure or deadlock (SQLSTATE 40001, 40P01).
const maxAttempts = 3

// Open connects to the database at dsn (a libpq URL or key=value string),
// applies any migrations not yet applied, and returns the store. Several
// processes may Open the same database at once: migrations run under a
// transaction-scoped advisory lock, so exactly one of them applies each.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fault.E(fault.Invalid, "postgres: bad DSN", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		// Every time the store returns is UTC; pgx would otherwise scan
		// timestamptz into time.Local.
		c.TypeMap().RegisterType(&pgtype.Type{
			Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
		})
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, mapErr(err)
	}
	ms, err := migrations.Load("postgres", migrationFiles, "migrations")
	if err != nil {
		pool.Close()
		return nil, err
	}
	c := &conn{pool: pool}
	s := &Store{Store: sqlstore.New(c, Dialect, ms), pool: pool, conn: c, schema: opts.Schema, want: ms,
		interval: cmp.Or(opts.PartitionInterval, DefaultPartitionInterval), ahead: cmp.Or(opts.PartitionsAhead, DefaultPartitionsAhead)}
	c.makePartitions = s.partitionsUntilNow
	if opts.Migrate != nil && !*opts.Migrate {
		if s.schema == "" {
			if err := pool.QueryRow(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&s.schema); err != nil {
				pool.Close()
				return nil, mapErr(err)
			}
		}
		return s, nil
	}
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Migrate applies the pending migrations and makes the partitions ahead
// (latchkey migrate up; Open does it unless Options.Migrate is false).
func (s *Store) Migrate(ctx context.Context) error {
	schema, err := s.conn.migrate(ctx, s.schema, s.want)
	if err != nil {
		return err
	}
	s.schema = schema
	return s.ensurePartitions(ctx)
}

// migrationLockKey is the advisory lock key that serialises migrations of
// one schema; schemas migrate independently of each other.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("latchkey/store/postgres/migrate\x00" + schema))
	return int64(h.Sum64())
}

// migrate applies the pending migrations in one transaction. The advisory
// lock is taken first, so a second process blocks until the first commits
// and then finds every migration applied; the schema and the
// schema_migrations table are created under the same lock because their
// IF NOT EXISTS forms race with each other in PostgreSQL.
//
// It returns the schema the store's tables are in.
func (c *conn) migrate(ctx context.Context, schema string, ms []migrations.Migration) (string, error) {
	err := c.tx(ctx, func(tx pgxQuerier) error {
		if schema == "" {
			if err := tx.QueryRow(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&schema); err != nil {
				return err
			}
			if schema == "" {
				return fault.E(fault.Invalid, "postgres: no existing schema in search_path; set Options.Schema")
			}
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey(schema)); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			// Only when missing: CREATE SCHEMA IF NOT EXISTS would still
			// demand the CREATE privilege on the database.
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
				return fmt.Errorf("postgres: create schema: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("postgres: migrations table: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		for _, m := range ms {
			if slices.Contains(applied, m.Version) {
				continue
			}
			// No arguments: pgx sends it over the simple protocol, which
			// runs a file of several statements.
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("postgres: migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
	return schema, err
}

// retry runs attempt, again after a serialization failure or deadlock, up
// to maxAttempts times, and maps the error it ends with.
func retry(ctx context.Context, attempt func() error) error {
	for n := 1; ; n++ {
		err := attempt()
		if err == nil {
			return nil
		}
		if n < maxAttempts && retryable(err) && ctx.Err() == nil {
			continue
		}
		return mapErr(err)
	}
}

// Pipeline implements sqlstore.Conn: it runs one transaction in two round
// trips where BEGIN, a batch and COMMIT sent apart take four: first queues
// statements after
// BEGIN in one batch (their callbacks read the results when it returns);
// then second queues, from what those read, the statements that follow,
// and COMMIT goes in the same batch. The round trips saved are time the
// transaction's row locks are not held. A batch is one pipeline with one
// Sync, so a failing statement skips the rest, COMMIT included, and the
// transaction is rolled back. Retried as tx is; first and second are then
// called again.
func (c *conn) Pipeline(ctx context.Context, first, second func(*sqlstore.Batch)) error {
	return retry(ctx, c.healing(ctx, func() error { return c.pipelinedOnce(ctx, first, second) }))
}

func (c *conn) pipelinedOnce(ctx context.Context, first, second func(*sqlstore.Batch)) error {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection released inside a transaction is closed by the pool,
	// so one whose ROLLBACK failed is never reused.
	defer conn.Release()
	// The transaction's id is read with the first batch, before COMMIT is
	// sent, so a commit of unknown outcome can be resolved.
	var x xact
	b := &sqlstore.Batch{}
	b.QueryRow(x.scan, xactID)
	first(b)
	if err := sendBatch(ctx, conn.Conn(), `BEGIN`, b, ""); err != nil {
		return err
	}
	b = &sqlstore.Batch{}
	second(b)
	if b.Err != nil {
		// Nothing of the second batch was sent; the locks the first took
		// go now, not when the pool closes the connection.
		rollback(ctx, conn.Conn())
		return b.Err
	}
	if hook := c.commitHook.Load(); hook != nil {
		(*hook)(ctx, conn.Conn(), x.id)
	}
	if err := sendBatch(ctx, conn.Conn(), "", b, `COMMIT`); err != nil {
		return c.resolve(ctx, x, err)
	}
	return nil
}

// SQLSTATE codes the store acts on. See
// https://www.postgresql.org/docs/current/errcodes-appendix.html.
const (
	codeUniqueViolation       = "23505"
	codeCheckViolation        = "23514" // also: no partition of a partitioned table takes the row
	codeSerializationFailure  = "40001"
	codeDeadlockDetected      = "40P01"
	codeQueryCanceled         = "57014"
	codeLockNotAvailable      = "55P03"
	codeTooManyConnections    = "53300"
	codeAdminShutdown         = "57P01"
	codeCrashShutdown         = "57P02"
	codeCannotConnectNow      = "57P03"
	codeCharNotInRepertoire   = "22021" // e.g. a NUL byte in a text value
	codeUntranslatableChar    = "22P05" // e.g. \u0000 in a jsonb value
	classConnectionException  = "08"
	classInsufficientResource = "53"
)

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func retryable(err error) bool {
	switch sqlState(err) {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	}
	return false
}

// mapErr turns driver errors into fault kinds by SQLSTATE and by error
// type (codeErr), never by message text.
func mapErr(err error) error { return sqlstore.MapErr(err, codeErr) }

func codeErr(err error) error {
	if code := sqlState(err); code != "" {
		switch {
		case code == codeUniqueViolation:
			return fault.E(fault.Conflict, "already exists", err)
		case code == codeSerializationFailure, code == codeDeadlockDetected, code == codeLockNotAvailable:
			return fault.E(fault.Unavailable, "database busy; try again", err)
		case code == codeQueryCanceled:
			return fault.E(fault.Unavailable, "request cancelled", err)
		case code == codeAdminShutdown, code == codeCrashShutdown, code == codeCannotConnectNow,
			code == codeTooManyConnections, strings.HasPrefix(code, classConnectionException),
			strings.HasPrefix(code, classInsufficientResource):
			return fault.E(fault.Unavailable, "database unavailable; try again", err)
		case code == codeCharNotInRepertoire, code == codeUntranslatableChar:
			return fault.E(fault.Invalid, "text contains a character that cannot be stored", err)
		}
		return fault.E(fault.Internal, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil // "request cancelled"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.Timeout(err) {
		return fault.E(fault.Unavailable, "database unavailable; try again", err)
	}
	// The connection died under the statement (the server restarted or
	// crashed, the network dropped it) or was found closed: the database
	// is unreachable for now, not broken (the chaos harness met these as
	// 500s).
	var ne net.Error
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne) {
		return fault.E(fault.Unavailable, "database unavailable; try again", err)
	}
	return nil
}
