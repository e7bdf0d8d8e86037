package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latchkey/latchkey/events"
)

// The event log (events, with its event_users rows) is partitioned by
// received_at (migration 0018), and the audit log (audit_batches) by
// last_time (migration 0019): one partition per PartitionInterval, made
// ahead of time. Event retention detaches and drops whole partitions; the
// audit log has no retention, so its partitions stay. The partitions are
// listed in log_partitions; this file keeps them.

// Defaults of Options.PartitionInterval and Options.PartitionsAhead.
const (
	DefaultPartitionInterval = 24 * time.Hour
	DefaultPartitionsAhead   = 3
)

// logTables are the partitioned tables, in the order partitions are
// created: a user row's partition exists whenever its event's does.
var logTables = []string{"events", "event_users", "audit_batches"}

// expiringTables are the log tables whose old partitions event retention
// drops, in the order they are dropped.
var expiringTables = []string{"event_users", "events"}

var _ events.Partitioner = (*Store)(nil)

// partitionLockKey is the key of the session advisory lock that is the
// partition maintenance lease of one schema: held by one connection of
// one process while it creates or drops partitions, released when it is
// done or its connection ends.
func partitionLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("latchkey/store/postgres/partitions\x00" + schema))
	return int64(h.Sum64())
}

// partition is one row of log_partitions.
type partition struct {
	name         string
	lower, upper *time.Time // lower nil: MINVALUE
}

// MaintainPartitions implements events.Partitioner. The process that
// takes the maintenance lease (an advisory lock; another process holding
// it makes this call return 0 at once) creates the partitions that cover
// received_at up to now + PartitionsAhead intervals, and drops every
// partition whose range ends at or before cutoff, each detached
// CONCURRENTLY first so that appends and reads of the other partitions
// never wait for it. It returns the number of events the dropped
// partitions held, as the statistics estimate them.
func (s *Store) MaintainPartitions(ctx context.Context, now, cutoff time.Time) (int64, error) {
	var dropped int64
	err := s.withPartitionLease(ctx, false, func(c *pgx.Conn) error {
		if err := s.createPartitions(ctx, c, now); err != nil {
			return err
		}
		var err error
		dropped, err = s.dropPartitions(ctx, c, cutoff)
		return err
	})
	return dropped, mapErr(err)
}

// ensurePartitions creates the partitions ahead at Open, by the database's
// clock, waiting for the lease when another process holds it: once Open
// returns, appends find their partition.
func (s *Store) ensurePartitions(ctx context.Context) error {
	return mapErr(s.withPartitionLease(ctx, true, func(c *pgx.Conn) error {
		var now time.Time
		if err := c.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		return s.createPartitions(ctx, c, now)
	}))
}

// partitionsUntilNow creates the partitions that cover now, by this
// process's clock (which stamps the rows) and the database's, waiting for
// the lease: the repair of a write that found no partition for its row.
func (s *Store) partitionsUntilNow(ctx context.Context) error {
	return mapErr(s.withPartitionLease(ctx, true, func(c *pgx.Conn) error {
		var now time.Time
		if err := c.QueryRow(ctx, `SELECT greatest(now(), $1)`, time.Now()).Scan(&now); err != nil {
			return err
		}
		return s.createPartitions(ctx, c, now)
	}))
}

// noPartition reports whether err is PostgreSQL's refusal of a row that
// no partition of a log table accepts: a check violation naming the
// partitioned table itself and no constraint.
func noPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == codeCheckViolation && pe.ConstraintName == "" && slices.Contains(logTables, pe.TableName)
}

// healing wraps a write attempt: when it fails because no partition holds
// its row (the partitions ahead ran out: no process has run the
// maintenance for longer than PartitionsAhead intervals, or a clock is
// ahead), it creates the partitions up to now and tries once more, so
// that a stalled maintenance delays writes instead of failing every
// audited action.
func (c *conn) healing(ctx context.Context, attempt func() error) func() error {
	return func() error {
		err := attempt()
		if c.makePartitions == nil || !noPartition(err) {
			return err
		}
		if herr := c.makePartitions(ctx); herr != nil {
			return errors.Join(err, herr)
		}
		return attempt()
	}
}

// withPartitionLease runs fn on a connection holding the maintenance lease;
// without wait it returns nil when another holds it.
func (s *Store) withPartitionLease(ctx context.Context, wait bool, fn func(*pgx.Conn) error) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release()
	c := pc.Conn()
	key := partitionLockKey(s.schema)
	if wait {
		if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
			return err
		}
	} else {
		var got bool
		if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil || !got {
			return err
		}
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := c.Exec(uctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			// A connection that may still hold the lease never goes back
			// to the pool; closing it releases the lease.
			c.Close(uctx)
		}
	}()
	return fn(c)
}

// listPartitions returns parent's partitions in range order.
func listPartitions(ctx context.Context, c *pgx.Conn, parent string) ([]partition, error) {
	rows, err := c.Query(ctx, `SELECT name, lower_bound, upper_bound FROM log_partitions WHERE parent = $1
		ORDER BY upper_bound`, parent)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (partition, error) {
		var p partition
		err := row.Scan(&p.name, &p.lower, &p.upper)
		return p, err
	})
}

// createPartitions adds partitions to every log table until they cover
// now + PartitionsAhead intervals. After a pause (no maintenance for longer
// than the partitions ahead), the first new partition reaches from the end
// of the last one to the end of now's interval, so there is no gap.
func (s *Store) createPartitions(ctx context.Context, c *pgx.Conn, now time.Time) error {
	until := now.Add(time.Duration(s.ahead) * s.interval)
	for _, parent := range logTables {
		parts, err := listPartitions(ctx, c, parent)
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			return fmt.Errorf("postgres: %s has no partitions (migrations 18 and 19 not applied?)", parent)
		}
		lower := *parts[len(parts)-1].upper
		for lower.Before(until) {
			upper := lower.Add(s.interval).Truncate(s.interval)
			if upper.Before(now) {
				upper = now.Add(s.interval).Truncate(s.interval)
			}
			if !upper.After(lower) {
				upper = lower.Add(s.interval)
			}
			if err := createPartition(ctx, c, parent, lower, upper); err != nil {
				return err
			}
			lower = upper
		}
	}
	return nil
}

// createPartition makes parent's partition [lower, upper) as a table of
// its own, then attaches it: ATTACH PARTITION takes a SHARE UPDATE
// EXCLUSIVE lock on the parent, which appends and reads do not wait for
// (CREATE TABLE ... PARTITION OF would take an ACCESS EXCLUSIVE one).
func createPartition(ctx context.Context, c *pgx.Conn, parent string, lower, upper time.Time) error {
	name := parent + "_p" + lower.UTC().Format("20060102t150405")
	id, pid := pgx.Identifier{name}.Sanitize(), pgx.Identifier{parent}.Sanitize()
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE `+id+` (LIKE `+pid+` INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`); err != nil {
			return fmt.Errorf("postgres: create partition %s: %w", name, err)
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')`,
			pid, id, lower.UTC().Format(time.RFC3339Nano), upper.UTC().Format(time.RFC3339Nano))); err != nil {
			return fmt.Errorf("postgres: attach partition %s: %w", name, err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO log_partitions (parent, name, lower_bound, upper_bound) VALUES ($1, $2, $3, $4)`, parent, name, lower, upper)
		return err
	})
}

// dropPartitions detaches and drops the partitions of the event log's
// tables that end at or before cutoff, oldest first, and returns the
// estimated number of events they held. The newest partition is never
// dropped.
func (s *Store) dropPartitions(ctx context.Context, c *pgx.Conn, cutoff time.Time) (int64, error) {
	var events int64
	for _, parent := range expiringTables {
		parts, err := listPartitions(ctx, c, parent)
		if err != nil {
			return 0, err
		}
		for _, p := range parts[:max(len(parts)-1, 0)] {
			if p.upper.After(cutoff) {
				break
			}
			if parent == "events" {
				var n int64
				if err := c.QueryRow(ctx, `SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass($1)`, p.name).Scan(&n); err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return 0, err
				}
				events += n
			}
			if err := dropPartition(ctx, c, parent, p.name); err != nil {
				return events, err
			}
		}
	}
	return events, nil
}

// dropPartition detaches name from parent CONCURRENTLY (outside a
// transaction; it waits for the transactions that may still read it, and
// blocks none), finishing a detach an earlier, interrupted call began, then
// drops it and its log_partitions row.
func dropPartition(ctx context.Context, c *pgx.Conn, parent, name string) error {
	id, pid := pgx.Identifier{name}.Sanitize(), pgx.Identifier{parent}.Sanitize()
	var attached, pending bool
	err := c.QueryRow(ctx, `SELECT true, i.inhdetachpending FROM pg_inherits i
		WHERE i.inhrelid = to_regclass($1) AND i.inhparent = to_regclass($2)`, name, parent).Scan(&attached, &pending)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	switch {
	case pending:
		_, err = c.Exec(ctx, `ALTER TABLE `+pid+` DETACH PARTITION `+id+` FINALIZE`)
	case attached:
		_, err = c.Exec(ctx, `ALTER TABLE `+pid+` DETACH PARTITION `+id+` CONCURRENTLY`)
	}
	if err != nil {
		return fmt.Errorf("postgres: detach partition %s: %w", name, err)
	}
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+id); err != nil {
			return fmt.Errorf("postgres: drop partition %s: %w", name, err)
		}
		_, err := tx.Exec(ctx, `DELETE FROM log_partitions WHERE parent = $1 AND name = $2`, parent, name)
		return err
	})
}

// Partition is one partition of the event or audit log, for operators
// and tests.
type Partition struct {
	Table, Name string
	// Lower is the zero time for the first partition (MINVALUE).
	Lower, Upper time.Time
}

// Partitions lists the partitions of the partitioned log tables, by table
// and range.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	rows, err := s.pool.Query(ctx, `SELECT parent, name, lower_bound, upper_bound FROM log_partitions ORDER BY parent, upper_bound`)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Partition, error) {
		var (
			p     Partition
			lower *time.Time
		)
		err := row.Scan(&p.Table, &p.Name, &lower, &p.Upper)
		if lower != nil {
			p.Lower = *lower
		}
		return p, err
	})
	return out, mapErr(err)
}
