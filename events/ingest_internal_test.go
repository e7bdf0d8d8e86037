package events

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

// gatedStore is an audited events store whose appends wait for the test to
// open a gate, and that records each batch's events and records.
type gatedStore struct {
	Store    // nil: only the append methods are used
	entered  chan int
	gate     chan struct{}
	fail     error
	mu       sync.Mutex
	batches  []int // events per transaction
	recCount []int // audit records per transaction
}

func (g *gatedStore) AppendEventsAudited(_ context.Context, evs []*Event, recs []*audit.Record) error {
	g.entered <- len(evs)
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	g.batches = append(g.batches, len(evs))
	g.recCount = append(g.recCount, len(recs))
	return g.fail
}

func (g *gatedStore) AppendEvents(ctx context.Context, evs []*Event) error {
	return g.AppendEventsAudited(ctx, evs, nil)
}

func waitQueued(t *testing.T, in *ingester, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(in.queue) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d appends queued, want %d", len(in.queue), n)
		}
		runtime.Gosched()
	}
}

// Posts that arrive while a batch is being written share the next
// transaction with their audit records, and nobody returns before their own
// batch is stored.
func TestIngesterGroupCommitsWithRecords(t *testing.T) {
	st := &gatedStore{gate: make(chan struct{}), entered: make(chan int, 2)}
	in := newIngester(st, nil, nil)
	defer in.close()
	if in.audited == nil {
		t.Fatal("an AuditedAppender store must be used as one")
	}
	post := func() error {
		return in.append(context.Background(), []*Event{{TenantID: "t"}}, &audit.Record{TenantID: "t"})
	}
	first := make(chan error, 1)
	go func() { first <- post() }()
	if n := <-st.entered; n != 1 {
		t.Fatalf("first batch has %d events", n)
	}
	const more = 10
	results := make(chan error, more)
	for range more {
		go func() { results <- post() }()
	}
	waitQueued(t, in, more)
	select {
	case err := <-first:
		t.Fatalf("append returned before its batch was stored: %v", err)
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
	<-st.entered // the second batch entered (buffered)
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.batches) != 2 || st.batches[1] != more || st.recCount[1] != more {
		t.Fatalf("batches = %v, records = %v, want [1 %d] for both: concurrent posts must share one transaction", st.batches, st.recCount, more)
	}
	if s := in.stats(); s.Batches != 2 || s.Requests != more+1 || s.Events != more+1 {
		t.Errorf("stats = %+v", s)
	}
}

// A failed transaction fails every request of the batch (each is retried
// alone first, so the store sees 1 + n + n transactions).
func TestIngesterReportsStoreFailure(t *testing.T) {
	boom := errors.New("disk full")
	gate := make(chan struct{})
	close(gate)
	st := &gatedStore{gate: gate, entered: make(chan int, 100), fail: boom}
	in := newIngester(st, nil, nil)
	defer in.close()
	err := in.append(context.Background(), []*Event{{TenantID: "t"}}, &audit.Record{TenantID: "t"})
	if !errors.Is(err, boom) {
		t.Fatalf("append = %v, want the store's error", err)
	}
	if s := in.stats(); s.Batches != 0 {
		t.Errorf("a failed batch was counted: %+v", s)
	}
	in.close()
	if err := in.append(context.Background(), []*Event{{TenantID: "t"}}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close = %v, want ErrClosed", err)
	}
}

// A batch whose transaction fails for any reason but a refusal of its
// content (fault.Invalid) is not retried request by request: its commit
// may have happened (the connection died during it), and a retry would
// store its events twice. A refused batch is retried alone.
func TestIngesterRetriesOnlyRefusedBatches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  error
		batch []int // events per transaction the store saw
	}{
		{"unknown outcome", fault.E(fault.Unavailable, "database unavailable; try again", io.ErrUnexpectedEOF), []int{1, 3}},
		{"refused", fault.E(fault.Invalid, "text contains a character that cannot be stored"), []int{1, 3, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &gatedStore{gate: make(chan struct{}), entered: make(chan int, 10), fail: tc.fail}
			in := newIngester(st, nil, nil)
			defer in.close()
			post := func() error {
				return in.append(context.Background(), []*Event{{TenantID: "t"}}, &audit.Record{TenantID: "t"})
			}
			results := make(chan error, 4)
			go func() { results <- post() }()
			<-st.entered
			for range 3 {
				go func() { results <- post() }()
			}
			waitQueued(t, in, 3)
			close(st.gate)
			for range 4 {
				if err := <-results; fault.KindOf(err) != fault.KindOf(tc.fail) {
					t.Errorf("append = %v, want the store's error", err)
				}
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			if fmt.Sprint(st.batches) != fmt.Sprint(tc.batch) {
				t.Errorf("transactions of %v events, want %v", st.batches, tc.batch)
			}
		})
	}
}
