// Command chaos is Latchkey's fault-injection harness: it starts N real
// server processes (the example server, built once) on one database of a
// private PostgreSQL cluster it runs itself, drives every area at once
// through a stand-in load balancer, injects faults, and checks at the end
// that the promises held:
//
//	go run ./bench/chaos -duration 60s -processes 3 -kills 3 -db-restarts 1 -net-faults 4
//
// Clients: event posters (each event carries a count unique over the run,
// each post an Idempotency-Key; with -retry-posts a failed post is sent
// again with the same key until acknowledged), notification pollers with
// plain (consuming) retrieval and with acknowledged retrieval (-ack-drop
// of their pages are abandoned unconfirmed, as by a poller that dies),
// both with and without long polling, event-stream receivers the harness
// serves, audit exports, OAuth token issuance and virtual-token PFX
// imports.
//
// Faults, spread over the run one at a time: SIGKILL of a process (every
// other one the process holding the most event-stream leases, else a
// random one) and its restart a second later; PostgreSQL restarts
// (pg_ctl restart -m immediate: a crash); dropped and stalled database
// connections through a TCP proxy between each process and the database.
//
// Everything listens on loopback; the run is bounded by -duration (plus
// the time to settle, at most -settle) and -max-requests. The cluster is
// initdb'd in a temporary directory on a free port (as the user postgres
// when run as root); the machine's own PostgreSQL is never touched. The
// exit status is 1 when a check fails.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latchkey/latchkey/audit"
)

type config struct {
	duration, settle, stallMax                       time.Duration
	processes, kills, dbRestarts, netFaults          int
	posters, perPost, pollers, ackPollers, receivers int
	retryPosts, keep                                 bool
	ackDrop                                          float64
	maxRequests                                      int64
	seed                                             uint64
	pgBin, serverBin, jsonOut                        string
}

func main() {
	var c config
	flag.DurationVar(&c.duration, "duration", 60*time.Second, "how long to drive the processes and inject faults")
	flag.DurationVar(&c.settle, "settle", 90*time.Second, "after the run, how long to wait at most for every notification and delivery")
	flag.DurationVar(&c.stallMax, "stall-max", 6*time.Second, "longest stall of a process's database connections")
	flag.IntVar(&c.processes, "processes", 3, "server processes")
	flag.IntVar(&c.kills, "kills", 3, "SIGKILLs of a process (each restarted a second later)")
	flag.IntVar(&c.dbRestarts, "db-restarts", 1, "PostgreSQL restarts (immediate)")
	flag.IntVar(&c.netFaults, "net-faults", 4, "network faults between a process and the database, stalls and drops alternately")
	flag.IntVar(&c.posters, "posters", 3, "concurrent event posters")
	flag.IntVar(&c.perPost, "events-per-post", 4, "events per post (the last of a type no subscription takes)")
	flag.IntVar(&c.pollers, "pollers", 2, "notification pollers with plain (consuming) retrieval")
	flag.IntVar(&c.ackPollers, "ack-pollers", 2, "notification pollers with acknowledged retrieval")
	flag.Float64Var(&c.ackDrop, "ack-drop", 0.05, "share of pages an acknowledging poller abandons unconfirmed")
	flag.IntVar(&c.receivers, "receivers", 4, "event-stream subscriptions, each to a receiver of the harness")
	flag.BoolVar(&c.retryPosts, "retry-posts", false, "posters retry every failed post with the same Idempotency-Key until acknowledged")
	flag.Int64Var(&c.maxRequests, "max-requests", 2_000_000, "stop driving after this many requests")
	flag.Uint64Var(&c.seed, "seed", 0, "seed of the fault schedule and victims (0: from the clock)")
	flag.StringVar(&c.pgBin, "pg-bin", "", "directory of initdb and pg_ctl (default: the newest /usr/lib/postgresql/*/bin, else PATH)")
	flag.StringVar(&c.serverBin, "server", "", "a built example server (default: go build ./examples/server of this module)")
	flag.StringVar(&c.jsonOut, "json", "", "write the figures as JSON here")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary directory (logs, cluster) after the run")
	flag.Parse()
	ok, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Printf("%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func run(c config) (bool, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if c.seed == 0 {
		c.seed = uint64(time.Now().UnixNano())
	}
	tmp, err := os.MkdirTemp("", "latchkey-chaos-")
	if err != nil {
		return false, err
	}
	if c.keep {
		logf("keeping %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return false, err
	}
	if c.serverBin == "" {
		root, err := moduleRoot()
		if err != nil {
			return false, err
		}
		c.serverBin = filepath.Join(tmp, "latchkey-server")
		logf("building ./examples/server")
		if err := buildServer(root, c.serverBin); err != nil {
			return false, err
		}
	}
	bin, err := findPGBin(c.pgBin)
	if err != nil {
		return false, err
	}
	pgDir := filepath.Join(tmp, "pg")
	if err := os.Mkdir(pgDir, 0o700); err != nil {
		return false, err
	}
	cl, err := startCluster(ctx, bin, pgDir)
	if err != nil {
		return false, fmt.Errorf("private PostgreSQL: %w", err)
	}
	defer cl.Stop()
	logf("private PostgreSQL on 127.0.0.1:%d (%s)", cl.port, pgDir)
	db, err := pgxpool.New(ctx, cl.DSN(cl.port))
	if err != nil {
		return false, err
	}
	defer db.Close()

	// The processes, each behind its own proxy to the database.
	password := "chaos-admin-password-1"
	env := []string{"PLATFORM_MASTER_KEY=" + masterKey(), "PLATFORM_ADMIN_PASSWORD=" + password}
	archives := filepath.Join(tmp, "archives")
	var servers []*server
	for i := range c.processes {
		px, err := newProxy(fmt.Sprintf("127.0.0.1:%d", cl.port))
		if err != nil {
			return false, err
		}
		defer px.Close()
		port, err := freePort()
		if err != nil {
			return false, err
		}
		servers = append(servers, &server{name: fmt.Sprintf("p%d", i), bin: c.serverBin, dataDir: filepath.Join(tmp, fmt.Sprintf("data-%d", i)),
			logPath: filepath.Join(tmp, fmt.Sprintf("p%d.log", i)), port: port, proxy: px, env: env, extra: []string{"-archive-dir", archives}})
	}
	defer func() {
		for _, s := range servers {
			s.Stop()
		}
	}()
	var wg sync.WaitGroup
	startErrs := make([]error, len(servers))
	for i, s := range servers {
		wg.Go(func() { startErrs[i] = s.Start(cl.DSN(s.proxy.Port()), 90*time.Second) })
	}
	wg.Wait()
	if err := errors.Join(startErrs...); err != nil {
		return false, err
	}
	logf("%d processes serving", len(servers))

	// Receivers, the balancer, the fixture.
	rc := &receivers{got: map[int][]arrival{}}
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return false, err
	}
	rsrv := &http.Server{Handler: rc}
	go rsrv.Serve(rln)
	defer rsrv.Close()
	driveCtx, stopDrive := context.WithCancel(ctx)
	defer stopDrive()
	b := &balancer{servers: servers, limit: c.maxRequests, stop: stopDrive, status: map[string]map[int]int{},
		h: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	fix, err := setup(ctx, b, password, "http://"+rln.Addr().String(), c.receivers)
	if err != nil {
		return false, fmt.Errorf("setup: %w", err)
	}
	logf("tenant %s: %d event-stream subscriptions, notification subscriptions %s (plain) and %s (ack)", fix.tenantCode, len(fix.streams), fix.plainSub, fix.ackSub)

	// Drive and inject.
	l := newLedger()
	runStart := time.Now()
	driveCtx, stopTimer := context.WithTimeout(driveCtx, c.duration)
	defer stopTimer()
	retryCtx, stopRetry := context.WithCancel(ctx)
	defer stopRetry()
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	var posters, others, pollers sync.WaitGroup
	for i := range c.posters {
		posters.Go(func() { poster(driveCtx, retryCtx, b, fix, l, i, c.perPost, c.retryPosts) })
	}
	for i := range c.pollers {
		pollers.Go(func() { plainPoller(pollCtx, b, fix, l, i) })
	}
	for i := range c.ackPollers {
		pollers.Go(func() { ackPoller(pollCtx, b, fix, l, i, c.ackDrop) })
	}
	r := rand.New(rand.NewPCG(c.seed, 7))
	others.Go(func() {
		tr := rand.New(rand.NewPCG(c.seed, 8))
		every(driveCtx, 200*time.Millisecond, func() {
			if err := fix.refreshToken(driveCtx, b, tr); err != nil && driveCtx.Err() == nil {
				l.count("token failures")
			}
		})
	})
	others.Go(func() {
		er := rand.New(rand.NewPCG(c.seed, 9))
		every(driveCtx, 5*time.Second, func() {
			now := time.Now().UTC()
			a := b.do(driveCtx, b.pick(er).URL(), request{area: "audit-export", method: "POST", path: "/audit/v1/audit-log-exports", bearer: fix.access(),
				body:   map[string]string{"from": now.Add(-time.Minute).Format(time.RFC3339), "to": now.Format(time.RFC3339)},
				header: map[string]string{"Idempotency-Key": fmt.Sprintf("chaos-export-%d", now.UnixNano())}})
			if id, _ := a.json()["jobId"].(string); a.status == 202 && id != "" {
				l.mu.Lock()
				l.exports = append(l.exports, id)
				l.mu.Unlock()
			}
		})
	})
	others.Go(func() {
		pr := rand.New(rand.NewPCG(c.seed, 10))
		every(driveCtx, time.Second, func() {
			req, err := fix.pfxImport()
			if err == nil {
				if a := b.do(driveCtx, b.pick(pr).URL(), req); a.status != 200 && a.status != 0 && a.status < 500 {
					l.count(fmt.Sprintf("pfx import answered %d: %.200s", a.status, a.body))
				}
			}
		})
	})
	others.Go(func() {
		rotateSigningKeys(driveCtx, b, fix, l, runStart, c.duration, rand.New(rand.NewPCG(c.seed, 11)))
	})
	in := &injector{servers: servers, cluster: cl, db: db, fix: fix, r: r, log: logf, stallMax: c.stallMax}
	plan := schedule(r, c.kills, c.dbRestarts, c.netFaults, c.duration/10, c.duration*85/100)
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		in.run(driveCtx, runStart, plan)
	}()
	<-driveCtx.Done()
	<-faultsDone
	driveEnd := time.Now()
	logf("drive ended after %v; settling", driveEnd.Sub(runStart).Round(time.Millisecond))

	// Every process up again; posters finish (retrying ones until
	// acknowledged, at most a minute); the rest stops.
	for _, s := range servers {
		if !s.Up() {
			if err := s.Start(cl.DSN(s.proxy.Port()), 60*time.Second); err != nil {
				in.fail("restart at the end: %v", err)
			}
		}
	}
	go func() {
		sleepCtx(ctx, time.Minute)
		stopRetry()
	}()
	posters.Wait()
	stopRetry()
	others.Wait()

	// Settle: every stored notification handed out, every event delivered.
	stored, err := storedEvents(ctx, db, fix.tenantID)
	if err != nil {
		return false, fmt.Errorf("reading the event log: %w", err)
	}
	var want []int64 // seqs of type 10001
	wantCount := map[int64]bool{}
	for _, e := range stored {
		if e.typeID == "10001" {
			want = append(want, e.seq)
			wantCount[e.count] = true
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	settled := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.plainIdle < 2*c.pollers || (c.ackPollers > 0 && l.ackIdle < 2*c.ackPollers) {
			return false
		}
		if c.ackPollers > 0 {
			for cnt := range wantCount {
				if l.ackSeen[cnt] == 0 {
					return false
				}
			}
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for i := range c.receivers {
			got := map[int64]bool{}
			for _, a := range rc.got[i] {
				got[a.seq] = true
			}
			for _, s := range want {
				if !got[s] {
					return false
				}
			}
		}
		return true
	}
	settleEnd := time.Now().Add(c.settle)
	l.mu.Lock()
	l.plainIdle, l.ackIdle = 0, 0 // empty pages count from now on
	l.mu.Unlock()
	for !settled() && time.Now().Before(settleEnd) && ctx.Err() == nil {
		sleepCtx(ctx, time.Second)
	}
	logf("settled in %v", time.Since(driveEnd).Round(time.Millisecond))
	stopPoll()
	pollers.Wait()

	rep := check(ctx, c, b, db, fix, l, rc, in, stored, want, servers, runStart, driveEnd)
	rep.print(os.Stdout)
	if c.jsonOut != "" {
		j, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(c.jsonOut, j, 0o644); err != nil {
			return false, err
		}
	}
	return rep.OK, nil
}

func masterKey() string {
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(rand.IntN(256))
	}
	return b64(k)
}

// storedEvent is one event of the log, as the check reads it.
type storedEvent struct {
	seq, count int64
	typeID     string
}

func storedEvents(ctx context.Context, db *pgxpool.Pool, tenant string) ([]storedEvent, error) {
	var (
		out []storedEvent
		err error
	)
	for try := 0; try < 30; try++ {
		out, err = readEvents(ctx, db, tenant)
		if err == nil {
			return out, nil
		}
		sleepCtx(ctx, time.Second)
	}
	return nil, err
}

func readEvents(ctx context.Context, db *pgxpool.Pool, tenant string) ([]storedEvent, error) {
	rows, err := db.Query(ctx, `SELECT seq, (body->>'count')::bigint, type_id FROM events WHERE tenant_id = $1 AND body ? 'count' ORDER BY seq`, tenant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storedEvent
	for rows.Next() {
		var e storedEvent
		if err := rows.Scan(&e.seq, &e.count, &e.typeID); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// verifyChain exports the tenant's whole audit log now and verifies the
// archive (audit.VerifyArchive) with the server's published keys.
func verifyChain(ctx context.Context, b *balancer, fix *fixture, from time.Time) (int64, error) {
	r := rand.New(rand.NewPCG(3, 4))
	if err := fix.refreshToken(ctx, b, r); err != nil {
		return 0, err
	}
	a, err := b.call(ctx, r, 202, request{area: "verify", method: "POST", path: "/audit/v1/audit-log-exports", bearer: fix.access(),
		body: map[string]string{"from": from.Add(-time.Hour).UTC().Format(time.RFC3339), "to": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}})
	if err != nil {
		return 0, err
	}
	id, _ := a.json()["jobId"].(string)
	job, err := waitExport(ctx, b, fix, id, 2*time.Minute)
	if err != nil {
		return 0, err
	}
	if job.State != audit.JobSucceeded || job.Location == "" || job.DigestLocation == "" {
		return 0, fmt.Errorf("the verification export ended %s: %s", job.State, job.Error)
	}
	get := func(u string) ([]byte, error) {
		a, err := b.call(ctx, r, 200, request{area: "verify", method: "GET", path: strings.TrimPrefix(u, publicURL)})
		return a.body, err
	}
	archive, err := get(job.Location)
	if err != nil {
		return 0, err
	}
	integrity, err := get(job.DigestLocation)
	if err != nil {
		return 0, err
	}
	jwks, err := get("/.well-known/jwks.json")
	if err != nil {
		return 0, err
	}
	keys, err := audit.KeysFromJWKS(jwks)
	if err != nil {
		return 0, err
	}
	vr, err := audit.VerifyArchive(bytes.NewReader(archive), int64(len(archive)), bytes.NewReader(integrity), int64(len(integrity)), keys)
	if err != nil {
		return 0, err
	}
	return vr.Count, nil
}

type exportJob struct {
	State, Location, DigestLocation, Error string
}

func waitExport(ctx context.Context, b *balancer, fix *fixture, id string, limit time.Duration) (exportJob, error) {
	r := rand.New(rand.NewPCG(5, 6))
	deadline := time.Now().Add(limit)
	var job exportJob
	for time.Now().Before(deadline) && ctx.Err() == nil {
		a := b.do(ctx, b.pick(r).URL(), request{area: "verify", method: "GET", path: "/audit/v1/audit-log-exports/" + id, bearer: fix.access()})
		if a.status == 200 {
			job = exportJob{}
			json.Unmarshal(a.body, &job)
			if job.State != audit.JobActive {
				return job, nil
			}
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
	return job, fmt.Errorf("export %s still %s after %v", id, job.State, limit)
}
