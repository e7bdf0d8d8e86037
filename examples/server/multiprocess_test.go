package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/postgres"
	"github.com/latchkey/latchkey/store/storetest"
)

// proc is one server process started by startProcess.
type proc struct {
	name   string
	url    string // http://127.0.0.1:port
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan error // receives Wait's result once
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// publicURL stands for the load balancer in front of the processes.
const publicURL = "http://latchkey.test"

// multiEnv is what the processes of one test share: the binary, the
// database (a fresh schema), the master key and the archive directory.
type multiEnv struct {
	bin, dsn, masterKey, archives, password string
	data                                    string // data directory; "" means a fresh one per process
}

// buildServer builds this command once into a temporary directory.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "latchkey-server")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freshSchemaDSN creates a schema no other test uses, drops it when the
// test ends, and returns a DSN whose connections use it.
func freshSchemaDSN(t *testing.T, dsn string) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	schema := "lk_mp_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("PLATFORM_POSTGRES_DSN must be a URL here: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// launch starts a server process; wait for it with ready.
func (e multiEnv) launch(t *testing.T, name, masterKey string, extra ...string) (*proc, <-chan string) {
	t.Helper()
	data := e.data
	if data == "" {
		data = t.TempDir()
	}
	args := append([]string{"-addr", "127.0.0.1:0", "-tls-addr", "", "-data", data, "-postgres", e.dsn,
		"-archive-dir", e.archives, "-log-level", "warn"}, extra...)
	cmd := exec.Command(e.bin, args...)
	cmd.Env = append(os.Environ(), "PLATFORM_MASTER_KEY="+masterKey, "PLATFORM_ADMIN_PASSWORD="+e.password)
	p := &proc{name: name, cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Latchkey is serving on "); ok {
				ready <- strings.Fields(rest)[0]
			}
		}
		io.Copy(io.Discard, stdout)
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { p.stop(t) })
	return p, ready
}

// await waits for a launched process to serve (or to exit, which fails the test).
func (p *proc) await(t *testing.T, ready <-chan string) {
	t.Helper()
	select {
	case u := <-ready:
		p.url = u
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("%s exited before serving: %v\n%s", p.name, err, p.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start in 30s\n%s", p.name, p.stderr.String())
	}
}

// stop ends the process with SIGTERM (SIGKILL after 10 s); idempotent.
func (p *proc) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		p.exited <- <-p.exited
		t.Errorf("%s ignored SIGTERM\n%s", p.name, p.stderr.String())
	}
}

// kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.exited <- <-p.exited
}

type reply struct {
	status int
	body   map[string]any
	raw    []byte
}

var httpc = &http.Client{Timeout: 30 * time.Second}

// doCall makes one request with a fresh W3C traceparent and returns the
// trace id, by which the audit record of the request is found later.
func doCall(t *testing.T, method, u string, body io.Reader, header map[string]string) (reply, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	tb := make([]byte, 16)
	rand.Read(tb)
	trace := hex.EncodeToString(tb)
	req.Header.Set("traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		t.Error(err)
		return reply{}, trace
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode}
	r.raw, _ = io.ReadAll(resp.Body)
	json.Unmarshal(r.raw, &r.body)
	return r, trace
}

func jsonCall(t *testing.T, method, u, bearer string, body any) (reply, string) {
	t.Helper()
	var rd io.Reader
	h := map[string]string{}
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
		h["Content-Type"] = "application/json"
	}
	if bearer != "" {
		h["Authorization"] = "Bearer " + bearer
	}
	return doCall(t, method, u, rd, h)
}

func tokenCall(t *testing.T, base, id, secret string) (reply, string) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	return doCall(t, "POST", base+"/oauth/v1/token", strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
}

// TestTwoProcessesOnePostgres runs two real server processes on one
// PostgreSQL schema (started together on the empty database) and checks
// what several processes behind a load balancer rely on: one bootstrap,
// one signing key (tokens of one verify on the other), an audit chain
// with every request recorded exactly once, an export job run exactly once
// and downloadable through either process (shared archive directory), and
// a job left behind by a killed process taken over when its lease lapses;
// events posted through both at once form one gapless log (see
// checkEventsThroughBoth).
func TestTwoProcessesOnePostgres(t *testing.T) {
	base := os.Getenv("PLATFORM_POSTGRES_DSN")
	if base == "" {
		t.Skip("PLATFORM_POSTGRES_DSN not set")
	}
	e := multiEnv{bin: buildServer(t), dsn: freshSchemaDSN(t, base), masterKey: base64.StdEncoding.EncodeToString(seal.NewKey()),
		archives: t.TempDir(), password: "two-processes-1"}

	// Both start at once on the empty schema: migrations, signing key,
	// client CA and bootstrap race, and must settle on one of each. A
	// short lease and poll let the takeover below finish in seconds.
	// Behind a load balancer every process has the balancer's URL as its
	// public URL, which is also the tokens' issuer.
	fast := []string{"-public-url", publicURL, "-export-lease", "3s", "-export-poll", "250ms"}
	a, readyA := e.launch(t, "A", e.masterKey, fast...)
	b, readyB := e.launch(t, "B", e.masterKey, fast...)
	a.await(t, readyA)
	b.await(t, readyB)
	procs := []*proc{a, b}

	st, err := postgres.Open(t.Context(), e.dsn, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// A concurrent first start makes one platform-jwt version (the
	// signing keys are vault keys, issue 34): both JWKS publish the same
	// single ES256 key.
	var es256 []string
	for _, p := range procs {
		r, _ := jsonCall(t, "GET", p.url+"/.well-known/jwks.json", "", nil)
		keys, _ := r.body["keys"].([]any)
		var kids []string
		for _, k := range keys {
			if m, _ := k.(map[string]any); m["alg"] == "ES256" {
				kids = append(kids, m["kid"].(string))
			}
		}
		if r.status != 200 || len(kids) != 1 || (es256 != nil && kids[0] != es256[0]) {
			t.Fatalf("%s's JWKS after a concurrent first start: %d, ES256 kids %v (first process: %v), want one, the same", p.name, r.status, kids, es256)
		}
		es256 = kids
	}

	// Setup through A: the admin logs in, creates an audit client.
	r, _ := jsonCall(t, "POST", a.url+"/api/v1/auth/tokens/", "", map[string]string{"name": "admin", "password": e.password, "auth_domain": "root"})
	if r.status != 200 {
		t.Fatalf("login on A: %d %s", r.status, r.raw)
	}
	adminJWT := r.body["jwt"].(string)
	tenant, _ := latchkeytest.UnverifiedClaims(t, adminJWT)["tid"].(string)
	if !identity.IsGUID(tenant) {
		t.Fatalf("admin token has no tenant: %v", latchkeytest.UnverifiedClaims(t, adminJWT))
	}
	r, _ = jsonCall(t, "POST", a.url+"/api/v1/admin/tenants/"+tenant+"/oauth-clients", adminJWT,
		map[string]any{"name": "exporter", "scopes": []string{"audit:export"}, "role": "tenant-admin"})
	if r.status != 201 {
		t.Fatalf("create OAuth client: %d %s", r.status, r.raw)
	}
	clientID, secret := r.body["client_id"].(string), r.body["client_secret"].(string)

	// Drive logins and token issuance through both processes at once.
	const workers, logins, tokens = 4, 4, 10
	var (
		mu     sync.Mutex
		traces []string
		jwts   = map[string][]string{} // process name -> access tokens it issued
		wg     sync.WaitGroup
	)
	for _, p := range procs {
		for range workers {
			wg.Go(func() {
				for i := range logins + tokens {
					var (
						r     reply
						trace string
					)
					if i < logins {
						r, trace = jsonCall(t, "POST", p.url+"/api/v1/auth/tokens/", "", map[string]string{"name": "admin", "password": e.password, "auth_domain": "root"})
					} else {
						r, trace = tokenCall(t, p.url, clientID, secret)
					}
					if r.status != 200 {
						t.Errorf("%s: request %d: %d %s", p.name, i, r.status, r.raw)
						return
					}
					mu.Lock()
					traces = append(traces, trace)
					if tok, ok := r.body["access_token"].(string); ok {
						jwts[p.name] = append(jwts[p.name], tok)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Every request is in the chain exactly once, and the chain is whole.
	recs := allRecords(t, st, tenant)
	storetest.CheckChain(t, recs)
	seen := map[string]int{}
	for _, rec := range recs {
		seen[rec.TraceID]++
	}
	for _, tr := range traces {
		if seen[tr] != 1 {
			t.Errorf("trace %s has %d audit records, want 1", tr, seen[tr])
		}
	}
	if want := 2 * workers * (logins + tokens); len(traces) != want {
		t.Errorf("%d requests succeeded, want %d", len(traces), want)
	}

	// Events posted through both processes at once land in one log.
	checkEventsThroughBoth(t, st, a, b, adminJWT)

	// Tokens issued by one process verify on the other: the admin's
	// platform JWT from A works on B, and below an access token of B
	// starts the export on A and one of A reads it on B.
	if r, _ := jsonCall(t, "GET", b.url+"/api/v1/admin/tenants/"+tenant, adminJWT, nil); r.status != 200 {
		t.Errorf("A's platform token on B: %d %s", r.status, r.raw)
	}

	// An export started through A runs exactly once (whichever process
	// claims it) and is readable and downloadable through B.
	r, _ = jsonCall(t, "POST", a.url+"/audit/v1/audit-log-exports", jwts["B"][0], map[string]string{
		"from": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "to": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	if r.status != 202 {
		t.Fatalf("start export on A: %d %s", r.status, r.raw)
	}
	jobID := r.body["jobId"].(string)
	job := waitJob(t, st, tenant, jobID)
	if job.State != audit.JobSucceeded || job.Attempts != 1 {
		t.Fatalf("export = %s after %d attempts, want SUCCEEDED after 1", job.State, job.Attempts)
	}
	r, _ = jsonCall(t, "GET", b.url+"/audit/v1/audit-log-exports/"+jobID, jwts["A"][0], nil)
	loc, _ := r.body["location"].(string)
	if r.status != 200 || loc == "" {
		t.Fatalf("job on B: %d %s", r.status, r.raw)
	}
	// The location is under the public URL; fetch it from B, whichever
	// process wrote the archive.
	dl := b.url + strings.TrimPrefix(loc, publicURL)
	if r, _ := doCall(t, "GET", dl, nil, nil); r.status != 200 || !bytes.HasPrefix(r.raw, []byte("PK")) {
		t.Errorf("download through B: %d, %d bytes", r.status, len(r.raw))
	}
	if n := countActions(allRecords(t, st, tenant), "export.complete", jobID); n != 1 {
		t.Errorf("%d export.complete records for the job, want 1", n)
	}

	// Takeover: A dies (SIGKILL) holding a job. The job row is written
	// directly, as A would have left it after its claim, so the moment of
	// death is deterministic; its lease lapses in 2 s, then B takes over.
	a.kill(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	orphan := audit.ExportJob{ID: identity.NewGUID(), TenantID: tenant, State: audit.JobActive, StartedAt: now,
		Request:  audit.ExportRequest{From: now.Add(-time.Hour), To: now.Add(time.Hour)},
		Attempts: 1, LeaseOwner: "killed-process-A", LeaseUntil: now.Add(2 * time.Second)}
	if err := st.CreateExportJob(t.Context(), orphan); err != nil {
		t.Fatal(err)
	}
	if err := st.Notify(t.Context(), "latchkey_export_jobs"); err != nil { // wake B early: it must still wait for the lease
		t.Fatal(err)
	}
	job = waitJob(t, st, tenant, orphan.ID)
	if job.State != audit.JobSucceeded || job.Attempts != 2 || job.EndedAt == nil || job.EndedAt.Before(orphan.LeaseUntil) {
		t.Fatalf("orphaned job = %s, attempts %d, ended %v; want SUCCEEDED by a second attempt after %v", job.State, job.Attempts, job.EndedAt, orphan.LeaseUntil)
	}
	storetest.CheckChain(t, allRecords(t, st, tenant))

	// A process with another master key refuses to start.
	c, readyC := e.launch(t, "C", base64.StdEncoding.EncodeToString(seal.NewKey()))
	select {
	case <-readyC:
		t.Error("a process with another master key started")
	case err := <-c.exited:
		c.exited <- err
		if err == nil || !strings.Contains(c.stderr.String(), "master key") {
			t.Errorf("wrong master key: exit %v, stderr:\n%s", err, c.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Error("a process with another master key neither started nor exited")
	}
}

// allRecords reads a tenant's whole audit chain.
func allRecords(t *testing.T, st *postgres.Store, tenant string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for {
		page, err := st.ListAuditRecords(t.Context(), tenant, int64(len(out)), 1000)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < 1000 {
			return out
		}
	}
}

func countActions(recs []audit.Record, action, jobID string) int {
	n := 0
	for _, r := range recs {
		if r.Action == action && fmt.Sprint(r.Meta["jobId"]) == jobID {
			n++
		}
	}
	return n
}

// waitJob polls the job until it leaves ACTIVE (30 s at most).
func waitJob(t *testing.T, st *postgres.Store, tenant, id string) audit.ExportJob {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := st.GetExportJob(t.Context(), tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != audit.JobActive || time.Now().After(deadline) {
			return j
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(50 * time.Millisecond): // polling a child process's progress
		}
	}
}

// checkEventsThroughBoth posts external events through both processes at
// once, from one producer client of a fresh tenant: single-event posts and
// posts of several events, some of which carry one event that is rejected
// (a native type id). Afterwards, read through the store, every accepted
// event id is in the tenant's log exactly once, nothing else is, and the
// seq numbers are 1..N with no gap and no duplicate: both processes
// appended under the tenant's head row lock. A consumer token then reads,
// through B, exactly the events posted through A.
func checkEventsThroughBoth(t *testing.T, st *postgres.Store, a, b *proc, adminJWT string) {
	t.Helper()
	r, _ := jsonCall(t, "POST", a.url+"/api/v1/admin/tenants", adminJWT, map[string]string{"name": "events-two-processes"})
	if r.status != 201 {
		t.Fatalf("create tenant: %d %s", r.status, r.raw)
	}
	tenant := r.body["id"].(string)
	client := func(p *proc, name, scope string) string {
		t.Helper()
		r, _ := jsonCall(t, "POST", p.url+"/api/v1/admin/tenants/"+tenant+"/oauth-clients", adminJWT,
			map[string]any{"name": name, "scopes": []string{scope}})
		if r.status != 201 {
			t.Fatalf("create %s client: %d %s", name, r.status, r.raw)
		}
		// The token comes from the other process: clients and signing key are shared.
		other := a
		if p == a {
			other = b
		}
		r, _ = tokenCall(t, other.url, r.body["client_id"].(string), r.body["client_secret"].(string))
		tok, _ := r.body["access_token"].(string)
		if r.status != 200 || tok == "" {
			t.Fatalf("%s token: %d %s", name, r.status, r.raw)
		}
		return tok
	}
	producer := client(a, "producer", "event:event:producer")
	consumer := client(b, "consumer", "event:event:consumer")

	// Each worker makes posts alternately of one event and of several
	// (every other one with a rejected event among them). An event's
	// count is unique over the test; end_user.id names the process it
	// was posted through.
	const workers, posts, several = 4, 8, 6
	var (
		mu       sync.Mutex
		accepted = map[string]int{}     // event id -> times returned as accepted
		viaCount = map[string][]int64{} // process name -> counts of its accepted events
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	for _, p := range []*proc{a, b} {
		for w := range workers {
			wg.Go(func() {
				for i := range posts {
					body := map[string]any{}
					counts := map[string]int64{}
					n := 1
					if i%2 == 1 {
						n = several
					}
					for k := range n {
						c := next.Add(1)
						name := "e" + strconv.Itoa(k)
						counts[name] = c
						body[name] = map[string]any{"event_type_id": strconv.Itoa(10000 + int(c%7)),
							"end_user": map[string]string{"id": "via-" + p.name}, "count": c}
					}
					if i%4 == 3 {
						body["native"] = map[string]any{"event_type_id": "507", "end_user": map[string]string{"id": "via-" + p.name}}
					}
					r, _ := jsonCall(t, "POST", p.url+"/events/v1/events", producer, body)
					if r.status != 200 {
						t.Errorf("%s worker %d post %d: %d %s", p.name, w, i, r.status, r.raw)
						return
					}
					var res map[string]events.PostResult
					if err := json.Unmarshal(r.raw, &res); err != nil || len(res) != len(body) {
						t.Errorf("%s post %d: %d results (%v), want %d: %s", p.name, i, len(res), err, len(body), r.raw)
						return
					}
					mu.Lock()
					for name, pr := range res {
						switch {
						case name == "native" && pr.Status != events.StatusRejected:
							t.Errorf("%s: a native type id was %s", p.name, pr.Status)
						case name != "native" && (pr.Status != events.StatusAccepted || pr.ID == ""):
							t.Errorf("%s: event %s was %s: %v", p.name, name, pr.Status, pr.Errors)
						case name != "native":
							accepted[pr.ID]++
							viaCount[p.name] = append(viaCount[p.name], counts[name])
						}
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	want := 2 * workers * (posts/2 + posts/2*several)
	if len(accepted) != want {
		t.Fatalf("%d distinct event ids accepted, want %d", len(accepted), want)
	}

	// The log, read through the store: seq 1..N, each accepted id once.
	var log []events.Event
	for {
		page, err := st.ListEventsAfter(t.Context(), tenant, int64(len(log)), nil, time.Time{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, page...)
		if len(page) < 1000 {
			break
		}
	}
	if len(log) != want {
		t.Errorf("%d events in the tenant's log, %d accepted", len(log), want)
	}
	stored := map[string]int{}
	for i, e := range log {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d of the log has seq %d: a gap or a duplicate", i+1, e.Seq)
		}
		stored[e.ID]++
	}
	for id, n := range accepted {
		if n != 1 || stored[id] != 1 {
			t.Errorf("event %s accepted %d times, stored %d times; want 1 and 1", id, n, stored[id])
		}
	}
	for id := range stored {
		if accepted[id] == 0 {
			t.Errorf("event %s stored but never accepted", id)
		}
	}

	// Through B, a consumer reads exactly the events posted through A.
	var got []int64
	for page := 1; ; page++ {
		r, _ := jsonCall(t, "GET", b.url+"/events/v1/events?user_id=via-A&size=100&page="+strconv.Itoa(page), consumer, nil)
		var res struct {
			Results []struct {
				Count int64 `json:"count"`
			} `json:"results"`
		}
		if r.status != 200 || json.Unmarshal(r.raw, &res) != nil {
			t.Fatalf("query through B: %d %s", r.status, r.raw)
		}
		for _, e := range res.Results {
			got = append(got, e.Count)
		}
		if len(res.Results) < 100 {
			break
		}
	}
	slices.Sort(got)
	slices.Sort(viaCount["A"])
	t.Logf("events: %d accepted through both processes, seq 1..%d; %d posted through A read through B", want, len(log), len(got))
	if !slices.Equal(got, viaCount["A"]) {
		t.Errorf("query through B returned the counts %v of events posted through A, want %v", got, viaCount["A"])
	}
}
