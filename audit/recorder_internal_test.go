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
	st := &gatedStore{gate: make(chan struct{}), entered: make(chan int, 64)}
	r := NewRecorder(st, clocktest.New(time.Unix(0, 0)), nil)
	defer r.Close()
	defer close(st.gate) // lets a failed test close the recorder

	first := recordAsync(r, 1)
	// The first record is taken off the queue and its append waits at the gate.
	if n := nextStep(t, nil, st); n != 1 {
		t.Fatalf("first batch has %d records", n)
	}
	const more = 10
	results := recordAsync(r, more)
	waitQueued(t, r, more)
	select {
	case err := <-first:
		t.Fatalf("Record returned before its batch was stored: %v", err)
	default:
	}
	st.gate <- struct{}{}
	wantOK(t, first, 1)
	if n := nextStep(t, nil, st); n != more {
		t.Fatalf("second batch has %d records, want %d: concurrent records must share one append", n, more)
	}
	st.gate <- struct{}{}
	wantOK(t, results, more)
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

// saturated is a backlog count far above any threshold.
const saturated = 1 << 20

// gathererFor returns a Gatherer whose backlog count is backlog and whose
// pause is p's (nil: a pause fails the test).
func gathererFor(t *testing.T, backlog int, p *pauser) *gather.Gatherer {
	pause := func() { t.Error("the writer paused") }
	if p != nil {
		pause = p.pause
	}
	// A clock that stands still: gather.MaxWait never ends the wait here.
	return gather.NewForTest(func() int { return backlog }, pause, func() time.Time { return time.Unix(0, 0) })
}

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
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Record did not return")
		}
	}
}

// paused is nextStep's answer when the writer pauses.
const paused = -1

// nextStep waits for the writer's next step: a pause, or a commit (its
// size).
func nextStep(t *testing.T, p *pauser, st *gatedStore) int {
	t.Helper()
	var pc chan struct{}
	if p != nil {
		pc = p.paused
	}
	select {
	case <-pc:
		return paused
	case n := <-st.entered:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("the writer neither paused nor committed")
		return 0
	}
}

// While the processors are saturated, the writer pauses before committing
// and takes the records that arrived meanwhile into the same commit; a pause
// that brings nothing ends the wait.
func TestRecorderGathersWhileProcessorsAreBusy(t *testing.T) {
	open := make(chan struct{})
	close(open)
	st := &gatedStore{gate: open, entered: make(chan int, 64)}
	p := newPauser()
	r := newRecorder(st, clocktest.New(time.Unix(0, 0)), nil, gathererFor(t, saturated, p))
	defer r.Close()
	defer p.release()

	first := recordAsync(r, 1)
	if n := nextStep(t, p, st); n != paused {
		t.Fatalf("commit of %d records; want a pause for more", n)
	}
	later := recordAsync(r, 2)
	waitQueued(t, r, 2)
	p.resume <- struct{}{}
	if n := nextStep(t, p, st); n != paused { // two arrived: it waits once more
		t.Fatalf("commit of %d records; want another pause", n)
	}
	p.resume <- struct{}{}
	if n := nextStep(t, p, st); n != 3 {
		t.Fatalf("step %d, want a commit of the 3 records that arrived before a pause brought nothing", n)
	}
	wantOK(t, first, 1)
	wantOK(t, later, 2)
}

// When the processors are not saturated, the writer commits what is queued
// at once: a pause would leave the cores idle while the clients wait.
func TestRecorderCommitsAtOnceWhenProcessorsAreIdle(t *testing.T) {
	st := &gatedStore{gate: make(chan struct{}), entered: make(chan int, 64)}
	r := newRecorder(st, clocktest.New(time.Unix(0, 0)), nil, gathererFor(t, 0, nil))
	defer r.Close()
	defer close(st.gate) // lets a failed test close the recorder
	first := recordAsync(r, 1)
	if n := nextStep(t, nil, st); n != 1 {
		t.Fatalf("commit of %d records, want 1", n)
	}
	// What queues during a commit is the next commit, whole.
	more := recordAsync(r, 5)
	waitQueued(t, r, 5)
	st.gate <- struct{}{}
	if n := nextStep(t, nil, st); n != 5 {
		t.Fatalf("commit of %d records, want the 5 queued", n)
	}
	st.gate <- struct{}{}
	wantOK(t, first, 1)
	wantOK(t, more, 5)
}

// The callers a commit has just answered are runnable when the next commit
// gathers; they are not a backlog, so they do not make the writer pause.
func TestRecorderDiscountsTheCallersItWoke(t *testing.T) {
	st := &gatedStore{gate: make(chan struct{}), entered: make(chan int, 64)}
	p := newPauser()
	// A backlog of the threshold plus 3: enough to pause, unless the 4
	// callers of the previous commit are set aside.
	limit := 4 * runtime.GOMAXPROCS(0)
	r := newRecorder(st, clocktest.New(time.Unix(0, 0)), nil, gathererFor(t, limit+3, p))
	defer r.Close()
	defer p.release()
	defer close(st.gate)

	first := recordAsync(r, 1)
	if n := nextStep(t, p, st); n != paused {
		t.Fatalf("commit of %d records; want a pause (the writer woke nobody yet)", n)
	}
	more := recordAsync(r, 3)
	waitQueued(t, r, 3)
	p.resume <- struct{}{}
	if n := nextStep(t, p, st); n != paused {
		t.Fatalf("commit of %d records; want another pause", n)
	}
	p.resume <- struct{}{}
	if n := nextStep(t, p, st); n != 4 {
		t.Fatalf("step %d, want a commit of 4", n)
	}
	last := recordAsync(r, 1) // queued while the commit of 4 is held
	waitQueued(t, r, 1)
	st.gate <- struct{}{}
	if n := nextStep(t, p, st); n != 1 {
		t.Fatalf("step %d, want a commit of 1 at once: the 4 callers just answered are no backlog", n)
	}
	st.gate <- struct{}{}
	wantOK(t, first, 1)
	wantOK(t, more, 3)
	wantOK(t, last, 1)
}
