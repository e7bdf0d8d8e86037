package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/identity"
)

// childResult is what an ingest child reports.
type childResult struct {
	Events int64 `json:"events"`
	Posts  int64 `json:"posts"`
	Errors int64 `json:"errors"`
	// Commits is the ingest transactions (group commits) of the run.
	Commits int64 `json:"commits"`
}

// postBody is a post of n events for the ingest children (the P3 shape).
func postBody(first, n int) []byte {
	var b bytes.Buffer
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		k := first + i
		fmt.Fprintf(&b, `"e%d":{"count":%d,"end_user":{"id":"user-%d","segment":"gold"},"event_type_id":"1000%d","timestamp":"2026-05-01T00:00:00Z"}`,
			i, k, k%1000, k%10)
	}
	b.WriteString("}")
	return b.Bytes()
}

// childIngest is one ingesting process: it opens its own pool, reports
// "ready", waits for a line on stdin, posts for -ingest-duration from
// -posters goroutines into -tenants tenants, prints its result and waits
// for stdin to close (so that the parent reads its CPU time first).
func childIngest(ctx context.Context, c config) error {
	st, err := open(ctx, c.dsn, c.schema, 8)
	if err != nil {
		return err
	}
	defer st.Close()
	rec := audit.NewRecorder(st, clock.System{}, slog.New(slog.DiscardHandler))
	defer rec.Close()
	svc := events.NewService(events.Config{Store: st, Audit: rec, Clock: clock.System{}})
	defer svc.Close()
	bodies := make([][]byte, 16)
	for i := range bodies {
		bodies[i] = postBody(i*c.postSize, c.postSize)
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		return err
	}
	var res childResult
	before := svc.IngestStats()
	deadline := time.Now().Add(c.ingestD)
	var wg sync.WaitGroup
	var next atomic.Int64
	for g := range c.posters {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				k := int(next.Add(1))
				tenant := fmt.Sprintf("%s-%03d", c.prefix, (k+g)%c.tenants)
				by := identity.Principal{Kind: identity.KindClient, TenantID: tenant, Scopes: []string{identity.ScopeEventProducer}}
				out, err := svc.PostExternal(ctx, by, bodies[k%len(bodies)])
				if err != nil {
					atomic.AddInt64(&res.Errors, 1)
					continue
				}
				atomic.AddInt64(&res.Posts, 1)
				atomic.AddInt64(&res.Events, int64(len(out)))
			}
		})
	}
	wg.Wait()
	res.Commits = svc.IngestStats().Batches - before.Batches
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	io.Copy(io.Discard, in)
	return nil
}

// cpuTicks is the user+system CPU time of process pid in clock ticks
// (/proc/<pid>/stat fields 14 and 15), 0 when it is gone.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after "pid (comm) "
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

const ticksPerSecond = 100 // USER_HZ on Linux

// backends returns the pids of the server processes serving database db.
func backends(ctx context.Context, conn *pgx.Conn, db string) ([]int, error) {
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, db)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// ingest runs the four ingest cases: 1 and 3 processes, into one tenant
// and into 100, the same posters in all.
func ingest(ctx context.Context, c config) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	conn, err := connect(ctx, c.dsn, "big")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	u, _ := pgx.ParseConfig(c.dsn)
	run := 0
	for _, tn := range []int{1, 100} {
		for _, procs := range []int{1, 3} {
			run++
			prefix := fmt.Sprintf("ingest-%d-%d", time.Now().Unix(), run)
			var children []*exec.Cmd
			var stdins []io.WriteCloser
			var outs []*bufio.Reader
			for range procs {
				cmd := exec.Command(self, "-child", "ingest", "-dsn", c.dsn, "-schema", "big", "-prefix", prefix,
					"-tenants", strconv.Itoa(tn), "-posters", strconv.Itoa(c.posters/procs), "-post-size", strconv.Itoa(c.postSize),
					"-ingest-duration", c.ingestD.String())
				cmd.Stderr = os.Stderr
				w, _ := cmd.StdinPipe()
				r, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					return err
				}
				children, stdins, outs = append(children, cmd), append(stdins, w), append(outs, bufio.NewReader(r))
			}
			for _, r := range outs {
				if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
					return fmt.Errorf("child: %q, %v", line, err)
				}
			}
			pids, err := backends(ctx, conn, u.Database)
			if err != nil {
				return err
			}
			startTicks := map[int]int64{}
			for _, p := range pids {
				startTicks[p] = cpuTicks(p)
			}
			for _, ch := range children {
				startTicks[-ch.Process.Pid] = cpuTicks(ch.Process.Pid)
			}
			var walStart, walEnd int64
			if err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&walStart); err != nil {
				return err
			}
			t0 := time.Now()
			for _, w := range stdins {
				io.WriteString(w, "go\n")
			}
			var total childResult
			for _, r := range outs {
				line, err := r.ReadString('\n')
				if err != nil {
					return err
				}
				var res childResult
				if err := json.Unmarshal([]byte(line), &res); err != nil {
					return fmt.Errorf("child said %q: %w", line, err)
				}
				total.Events += res.Events
				total.Posts += res.Posts
				total.Errors += res.Errors
				total.Commits += res.Commits
			}
			el := time.Since(t0)
			if err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&walEnd); err != nil {
				return err
			}
			pids, err = backends(ctx, conn, u.Database)
			if err != nil {
				return err
			}
			var pgTicks, appTicks int64
			for _, p := range pids {
				pgTicks += cpuTicks(p) - startTicks[p]
			}
			for _, ch := range children {
				appTicks += cpuTicks(ch.Process.Pid) - startTicks[-ch.Process.Pid]
			}
			for _, w := range stdins {
				w.Close()
			}
			for _, ch := range children {
				if err := ch.Wait(); err != nil {
					return fmt.Errorf("child: %w", err)
				}
			}
			rate := float64(total.Events) / el.Seconds()
			perEvent := func(ticks int64) float64 { return float64(ticks) / ticksPerSecond / float64(total.Events) * 1e6 }
			fmt.Printf("ingest procs=%d tenants=%-3d posters=%d post=%d: %d events in %.1f s = %.0f events/s, errors %d, %.1f posts/commit, WAL %.0f B/event (whole server); CPU µs/event: processes %.1f + postgres %.1f = %.1f\n",
				procs, tn, c.posters, c.postSize, total.Events, el.Seconds(), rate, total.Errors, float64(total.Posts)/float64(max(total.Commits, 1)), float64(walEnd-walStart)/float64(total.Events),
				perEvent(appTicks), perEvent(pgTicks), perEvent(appTicks+pgTicks))
		}
	}
	return nil
}

// retention drops the oldest half of the big log (the partitions of its
// first days) through MaintainPartitions while 4 goroutines append single
// events to other tenants, and reports how long it took and the longest
// append during it and before it.
func retention(ctx context.Context, c config) error {
	st, err := open(ctx, c.dsn, "big", 8)
	if err != nil {
		return err
	}
	defer st.Close()
	conn, err := connect(ctx, c.dsn, "big")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var l layout
	var n int
	if err := conn.QueryRow(ctx, `SELECT end_at, days, events FROM scale_layout`).Scan(&l.end, &l.days, &n); err != nil {
		return err
	}
	cutoff := l.dayStart(l.days / 2)
	var before int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE received_at < $1`, cutoff).Scan(&before); err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		phase    = 0 // 0 before, 1 during, 2 after
		longest  [3]time.Duration
		appends  [3]int
		failures int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ev := &events.Event{TenantID: fmt.Sprintf("retention-%d", g), TypeID: "10001", Time: time.Now(), ReceivedAt: time.Now(),
					UserIDs: []string{"user-1"}, Body: []byte(`{"event_type_id":"10001","end_user":{"id":"user-1"}}`)}
				t0 := time.Now()
				err := st.AppendEvents(ctx, []*events.Event{ev})
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					failures++
				}
				longest[phase] = max(longest[phase], d)
				appends[phase]++
				mu.Unlock()
			}
		})
	}
	time.Sleep(2 * time.Second)
	mu.Lock()
	phase = 1
	mu.Unlock()
	t0 := time.Now()
	dropped, err := st.MaintainPartitions(ctx, time.Now(), cutoff)
	took := time.Since(t0)
	mu.Lock()
	phase = 2
	mu.Unlock()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	fmt.Printf("retention: dropped %d events (estimate %d) received before %s in %.2f s; longest append before %v (%d appends), during %v (%d), after %v (%d); %d failed\n",
		before, dropped, cutoff.Format(time.RFC3339), took.Seconds(), longest[0].Round(time.Microsecond), appends[0],
		longest[1].Round(time.Microsecond), appends[1], longest[2].Round(time.Microsecond), appends[2], failures)
	return nil
}
