package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// fault kinds.
const (
	faultKill      = "kill"
	faultDBRestart = "db-restart"
	faultDrop      = "drop"
	faultStall     = "stall"
)

// killRecord is one SIGKILL: when, of which process, and the receivers of
// the event-stream subscriptions it held then.
type killRecord struct {
	victim    string
	at        time.Time
	receivers []int
	restarted time.Duration // from the kill until the restarted process served
}

// dbRestart is one PostgreSQL restart: pg_ctl restart -m immediate began
// at start and returned at end.
type dbRestart struct{ start, end time.Time }

// injector runs the faults of a schedule, one at a time.
type injector struct {
	servers  []*server
	cluster  *cluster
	db       *pgxpool.Pool
	fix      *fixture
	r        *rand.Rand
	log      func(format string, args ...any)
	stallMax time.Duration

	mu       sync.Mutex
	kills    []killRecord
	restarts []dbRestart
	drops    int
	stalls   int
	errors   []string
}

// schedule spreads kinds over [from, to) of the run, shuffled.
func schedule(r *rand.Rand, kills, restarts, net int, from, to time.Duration) []struct {
	at   time.Duration
	kind string
} {
	var kinds []string
	for range kills {
		kinds = append(kinds, faultKill)
	}
	for range restarts {
		kinds = append(kinds, faultDBRestart)
	}
	for i := range net {
		if i%2 == 0 {
			kinds = append(kinds, faultStall)
		} else {
			kinds = append(kinds, faultDrop)
		}
	}
	r.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	out := make([]struct {
		at   time.Duration
		kind string
	}, len(kinds))
	for i, k := range kinds {
		out[i].kind = k
		out[i].at = from + (to-from)*time.Duration(i)/time.Duration(max(1, len(kinds)))
	}
	return out
}

// run injects the faults at their times, from start, until ctx ends.
func (in *injector) run(ctx context.Context, start time.Time, plan []struct {
	at   time.Duration
	kind string
}) {
	nkill := 0
	for _, f := range plan {
		sleepCtx(ctx, time.Until(start.Add(f.at)))
		if ctx.Err() != nil {
			return
		}
		switch f.kind {
		case faultKill:
			in.kill(ctx, nkill%2 == 1)
			nkill++
		case faultDBRestart:
			in.restartDB(ctx)
		case faultDrop:
			s := in.servers[in.r.IntN(len(in.servers))]
			n := s.proxy.Drop()
			in.mu.Lock()
			in.drops++
			in.mu.Unlock()
			in.log("fault: dropped %d database connections of %s", n, s.name)
		case faultStall:
			s := in.servers[in.r.IntN(len(in.servers))]
			d := time.Second + time.Duration(in.r.Int64N(int64(in.stallMax-time.Second)+1))
			s.proxy.Stall(d)
			in.mu.Lock()
			in.stalls++
			in.mu.Unlock()
			in.log("fault: stalled the database connections of %s for %v", s.name, d.Round(time.Millisecond))
			sleepCtx(ctx, d)
		}
	}
}

// leases returns, per process name, the receivers of the event-stream
// subscriptions whose live lease it holds.
func (in *injector) leases(ctx context.Context) (map[string][]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := in.db.Query(ctx, `SELECT id, lease_owner FROM eventstream_subscriptions WHERE tenant_id = $1 AND lease_until > now()`, in.fix.tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]int{}
	for rows.Next() {
		var id, owner string
		if err := rows.Scan(&id, &owner); err != nil {
			return nil, err
		}
		name, _, _ := strings.Cut(owner, "-")
		out[name] = append(out[name], in.fix.streams[id])
	}
	return out, rows.Err()
}

// kill SIGKILLs a process (holder: the one holding the most event-stream
// leases; else a random one) and restarts it after a second.
func (in *injector) kill(ctx context.Context, holder bool) {
	held, err := in.leases(ctx)
	if err != nil {
		in.log("fault: reading the leases before a kill: %v", err)
	}
	victim := in.servers[in.r.IntN(len(in.servers))]
	if holder {
		for _, s := range in.servers {
			if len(held[s.name]) > len(held[victim.name]) {
				victim = s
			}
		}
	}
	k := killRecord{victim: victim.name, receivers: held[victim.name]}
	k.at = time.Now()
	victim.Kill()
	in.log("fault: SIGKILL %s (holding %d event-stream subscriptions)", victim.name, len(k.receivers))
	sleepCtx(ctx, time.Second)
	if err := victim.Start(in.cluster.DSN(victim.proxy.Port()), 60*time.Second); err != nil {
		in.fail("restart after kill: %v", err)
	}
	k.restarted = time.Since(k.at)
	in.mu.Lock()
	in.kills = append(in.kills, k)
	in.mu.Unlock()
}

// restartDB crashes and restarts PostgreSQL.
func (in *injector) restartDB(ctx context.Context) {
	rs := dbRestart{start: time.Now()}
	err := in.cluster.Restart(ctx)
	rs.end = time.Now()
	if err != nil {
		in.fail("PostgreSQL restart: %v", err)
	}
	in.mu.Lock()
	in.restarts = append(in.restarts, rs)
	in.mu.Unlock()
	in.log("fault: PostgreSQL restarted (immediate) in %v", rs.end.Sub(rs.start).Round(time.Millisecond))
}

func (in *injector) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	in.log("%s", msg)
	in.mu.Lock()
	in.errors = append(in.errors, msg)
	in.mu.Unlock()
}
