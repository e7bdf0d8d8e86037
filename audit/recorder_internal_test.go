package audit

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/internal/gather"
)

// gatedStore is a LogStore whose appends wait for the test to open a gate,
// and that records the size of every batch.
type gatedStore struct {
	entered chan int // receives each batch's size as its append starts
	gate    chan struct{}
	fail    error
	mu      sync.Mutex
	batches []int
}

func (g *gatedStore) AppendAuditRecords(ctx context.Context, recs []*Record) error {
	if g.entered != nil {
		g.entered <- len(recs)
	}
	<-g.gate
	g.mu.Lock()
	g.batches = append(g.batches, len(recs))
	g.mu.Unlock()
	return g.fail
}
func (g *gatedStore) ListAuditRecords(context.Context, string, int64, int) ([]Record, error) {
	return nil, nil
}
func (g *gatedStore) EnsureServiceInstance(_ context.Context, c ServiceInstance) (ServiceInstance, error) {
	return c, nil
}
func (g *gatedStore) ListServiceInstances(context.Context, string, int, int) ([]ServiceInstance, int, error) {
	return nil, 0, nil
}

func waitQueued(t *testing.T, r *Recorder, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(r.queue) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d records queued, want %d", len(r.queue), n)
		}
		runtime.Gosched()
	}
}

// Records that arrive while a batch is being written share the next
// transaction, and nobody returns before their own batch is stored.
func TestRecorderGroupCommits(t *testing.T) {
	st := &gatedStore{gate: make(chan struct{}), entered: make(chan int, 2)}
	r := NewRecorder(st, clocktest.New(time.Unix(0, 0)), nil)
	defer r.Close()
	entry := Entry{TenantID: "t", Source: SourcePlatform, Action: "a"}

	first := make(chan error, 1)
	go func() { first <- r.Record(context.Background(), entry) }()
	// The first record is taken off the queue and its append waits at the gate.
	if n := <-st.entered; n != 1 {
		t.Fatalf("first batch has %d records", n)
	}
	const more = 10
	results := make(chan error, more)
	for range more {
		go func() { results <- r.Record(context.Background(), entry) }()
	}
	waitQueued(t, r, more)
	select {
	case err := <-first:
		t.Fatalf("Record returned before its batch was stored: %v", err)
	default:
	}
	close(st.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range more {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.batches) != 2 || st.batches[0] != 1 || st.batches[1] != more {
		t.Fatalf("batches = %v, want [1 %d]: concurrent records must share one append", st.batches, more)
	}
}

// When the store fails, every caller of the failed batch gets the error, so
// no action is reported as done without its record.
func TestRecorderReportsStoreFailure(t *testing.T) {
	boom := errors.New("disk full")
	gate := make(chan struct{})
	close(gate)
	r := NewRecorder(&gatedStore{gate: gate, fail: boom}, clocktest.New(time.Unix(0, 0)), nil)
	defer r.Close()
	err := r.Record(context.Background(), Entry{TenantID: "t", Source: SourcePlatform, Action: "a"})
	if !errors.Is(err, boom) {
		t.Fatalf("Record = %v, want the store's error", err)
	}
	r.Close()
	if err := r.Record(context.Background(), Entry{TenantID: "t", Source: SourcePlatform, Action: "a"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Record after Close = %v, want ErrClosed", err)
	}
}

// TestBuildAssignsTraceID checks that a record built without a trace id in
// its context gets a fresh one (every exported record has a traceID), and
// that a context's trace id is kept.
func TestBuildAssignsTraceID(t *testing.T) {
	r := &Recorder{store: &gatedStore{}, clock: clocktest.New(time.Unix(0, 0)), instances: map[instanceKey]string{}}
	e := Entry{TenantID: "t", Source: SourceAudit, Action: "a"}
	seen := map[string]bool{}
	for range 2 {
		rec, err := r.Build(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.TraceID) != 32 || seen[rec.TraceID] {
			t.Errorf("trace id %q, want a fresh 32-digit id", rec.TraceID)
		}
		seen[rec.TraceID] = true
	}
	rec, err := r.Build(WithTraceID(context.Background(), "from-request"), e)
	if err != nil || rec.TraceID != "from-request" {
		t.Errorf("Build = %+v, %v; want the context's trace id", rec, err)
	}
}

// pauser stands in for the writer's pause in its gather: each pause waits
// for the test, which queues records (or not) and then resumes it. After
// release, pauses return at once, so a failed test can close the recorder.
type pauser struct{ paused, resume, released chan struct{} }

func newPauser() *pauser {
	return &pauser{paused: make(chan struct{}), resume: make(chan struct{}), released: make(chan struct{})}
}

func (p *pauser) pause() {
	select {
	case p.paused <- struct{}{}:
	case <-p.released:
		return
	}
	select {
	case <-p.resume:
	case <-p.released:
	}
}

func (p *pauser) release() { close(p.released) }

// recordAsync starts n Record calls; their results arrive on the returned
// channel.
func recordAsync(r *Recorder, n int) <-chan error {
	errs := make(chan error, n)
	for range n {
		go func() {
			errs <- r.Record(context.Background(), Entry{TenantID: "t", Source: SourcePlatform, Action: "a"})
		}()
	}
	return errs
}

func wantOK(t *testing.T, errs <-chan error, n int) {
	t.Helper()
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// While the processors are saturated, the writer pauses before committing
// and takes the records that arrived meanwhile into the same commit; a pause
// that brings nothing ends the wait.
func TestRecorderGathersWhileProcessorsAreBusy(t *testing.T) {
	open := make(chan struct{})
	close(open)
	st := &gatedStore{gate: open, entered: make(chan int, 1)}
	p := newPauser()
	r := newRecorder(st, clocktest.New(time.Unix(0, 0)), nil, gather.NewForTest(func() bool { return true }, p.pause))
	defer r.Close()
	defer p.release()

	first := recordAsync(r, 1)
	if n := nextStep(p, st); n != paused {
		t.Fatalf("commit of %d records; want a pause for more", n)
	}
	later := recordAsync(r, 2)
	waitQueued(t, r, 2)
	p.resume <- struct{}{}
	if n := nextStep(p, st); n != paused { // two arrived: it waits once more
		t.Fatalf("commit of %d records; want another pause", n)
	}
	p.resume <- struct{}{}
	if n := nextStep(p, st); n != 3 {
		t.Fatalf("step %d, want a commit of the 3 records that arrived before a pause brought nothing", n)
	}
	wantOK(t, first, 1)
	wantOK(t, later, 2)
}

// paused is nextStep's answer when the writer pauses.
const paused = -1

// nextStep waits for the writer's next step: a pause, or a commit (its
// size).
func nextStep(p *pauser, st *gatedStore) int {
	select {
	case <-p.paused:
		return paused
	case n := <-st.entered:
		return n
	}
}

// When the processors are not saturated, the writer commits what is queued
// at once: a pause would leave the cores idle while the clients wait.
func TestRecorderCommitsAtOnceWhenProcessorsAreIdle(t *testing.T) {
	open := make(chan struct{})
	close(open)
	st := &gatedStore{gate: open, entered: make(chan int, 1)}
	r := newRecorder(st, clocktest.New(time.Unix(0, 0)), nil, gather.NewForTest(func() bool { return false }, func() { t.Error("the writer paused with idle processors") }))
	defer r.Close()
	errs := recordAsync(r, 1)
	if n := <-st.entered; n != 1 {
		t.Fatalf("commit of %d records, want 1", n)
	}
	wantOK(t, errs, 1)
}
