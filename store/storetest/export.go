package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// NewExportJob returns an ACTIVE, unclaimed job of tenant for tests,
// started at Epoch plus offset, over the whole day around Epoch.
func NewExportJob(tenantID string, offset time.Duration) audit.ExportJob {
	return audit.ExportJob{
		ID: identity.NewGUID(), TenantID: tenantID, State: audit.JobActive, StartedAt: Epoch.Add(offset),
		Request: audit.ExportRequest{From: Epoch.Add(-12 * time.Hour), To: Epoch.Add(12 * time.Hour)},
	}
}

func mustCreateJob(t *testing.T, ctx context.Context, s Store, j audit.ExportJob) audit.ExportJob {
	t.Helper()
	if err := s.CreateExportJob(ctx, j); err != nil {
		t.Fatalf("CreateExportJob: %v", err)
	}
	return j
}

func seqsOf(t *testing.T, s Store, ctx context.Context, tenantID string, req audit.ExportRequest) []int64 {
	t.Helper()
	var out []int64
	for r, err := range s.ScanAuditRecords(ctx, tenantID, req) {
		if err != nil {
			t.Fatalf("ScanAuditRecords: %v", err)
		}
		if r.TenantID != tenantID || len(r.Hash) == 0 {
			t.Fatalf("scan yielded %+v", r)
		}
		out = append(out, r.Seq)
	}
	return out
}

var exportTests = []test{
	{"ExportJobLifecycle", func(t *testing.T, ctx context.Context, s Store) {
		j := NewExportJob(identity.NewGUID(), 0)
		j.Request.ActorID, j.Request.Status = "alice", audit.StatusFailed
		j.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		j.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		mustCreateJob(t, ctx, s, j)
		if err := s.CreateExportJob(ctx, j); !fault.Is(fault.Conflict, err) {
			t.Errorf("duplicate CreateExportJob = %v, want Conflict", err)
		}
		got, err := s.GetExportJob(ctx, j.TenantID, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(j, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
		now := Epoch.Add(time.Second)
		claimed, err := s.ClaimExportJob(ctx, "w1", now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if claimed.ID != j.ID || claimed.LeaseOwner != "w1" || !claimed.LeaseUntil.Equal(now.Add(time.Minute)) || claimed.Attempts != 1 {
			t.Errorf("claimed = %+v", claimed)
		}
		if _, err := s.ClaimExportJob(ctx, "w2", now, time.Minute); !fault.Is(fault.NotFound, err) {
			t.Errorf("second claim while leased = %v, want NotFound", err)
		}
		if err := s.RenewExportLease(ctx, j.TenantID, j.ID, "w2", now, time.Minute, 0); !fault.Is(fault.Conflict, err) {
			t.Errorf("renew by another owner = %v, want Conflict", err)
		}
		if err := s.RenewExportLease(ctx, j.TenantID, "nope", "w1", now, time.Minute, 0); !fault.Is(fault.NotFound, err) {
			t.Errorf("renew of a missing job = %v, want NotFound", err)
		}
		if err := s.RenewExportLease(ctx, j.TenantID, j.ID, "w1", now.Add(30*time.Second), time.Minute, 4242); err != nil {
			t.Errorf("renew: %v", err)
		}
		if got, _ := s.GetExportJob(ctx, j.TenantID, j.ID); got.RecordsWritten != 4242 {
			t.Errorf("recordsWritten after a renewal = %d, want 4242", got.RecordsWritten)
		}
		end := now.Add(50 * time.Second)
		res := audit.ExportResult{Archive: j.ID + ".zip", ArchiveSize: 123, Summary: audit.Summary{Count: 2, FirstSeq: 1, LastSeq: 2, Runs: 1, KeyID: "k"},
			ArchiveExpiresAt: end.Add(24 * time.Hour)}
		if err := s.CompleteExportJob(ctx, j.TenantID, j.ID, "w2", end, res, nil); !fault.Is(fault.Conflict, err) {
			t.Errorf("complete by another owner = %v, want Conflict", err)
		}
		if err := s.CompleteExportJob(ctx, j.TenantID, j.ID, "w1", end, res, nil); err != nil {
			t.Fatal(err)
		}
		got, _ = s.GetExportJob(ctx, j.TenantID, j.ID)
		want := j
		want.State, want.EndedAt, want.Attempts = audit.JobSucceeded, &end, 1
		want.Archive, want.ArchiveSize, want.Summary, want.ArchiveExpiresAt = res.Archive, res.ArchiveSize, res.Summary, res.ArchiveExpiresAt
		want.RecordsWritten = res.Summary.Count
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("completed job (-want +got):\n%s", d)
		}
		if err := s.FailExportJob(ctx, j.TenantID, j.ID, "w1", end, "late", nil); !fault.Is(fault.Conflict, err) {
			t.Errorf("fail after completion = %v, want Conflict (final states are final)", err)
		}
		if _, err := s.ClaimExportJob(ctx, "w3", end.Add(time.Hour), time.Minute); !fault.Is(fault.NotFound, err) {
			t.Errorf("claim of a finished job = %v, want NotFound", err)
		}

		f := mustCreateJob(t, ctx, s, NewExportJob(j.TenantID, time.Minute))
		if _, err := s.ClaimExportJob(ctx, "w1", now, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.FailExportJob(ctx, f.TenantID, f.ID, "w1", now, "too big", nil); err != nil {
			t.Fatal(err)
		}
		got, _ = s.GetExportJob(ctx, f.TenantID, f.ID)
		if got.State != audit.JobFailed || got.Error != "too big" || got.EndedAt == nil || !got.EndedAt.Equal(now) || got.LeaseOwner != "" {
			t.Errorf("failed job = %+v", got)
		}
		if err := s.FailExportJob(ctx, f.TenantID, "missing", "w1", now, "x", nil); !fault.Is(fault.NotFound, err) {
			t.Errorf("fail of a missing job = %v, want NotFound", err)
		}
	}},
	{"ExportFinalStatesAudited", func(t *testing.T, ctx context.Context, s Store) {
		// A job's final state and a forgotten archive are stored with
		// their audit records, so that a crash between two writes cannot
		// keep the change and lose the record; a refused change (another
		// owner, a lapsed lease, another tenant) appends none of them.
		a := identity.NewGUID()
		if err := s.AppendAuditRecords(ctx, []*audit.Record{NewRecord(a, 1)}); err != nil {
			t.Fatal(err)
		}
		done := mustCreateJob(t, ctx, s, NewExportJob(a, 0))
		failed := mustCreateJob(t, ctx, s, NewExportJob(a, time.Second))
		for range 2 {
			if _, err := s.ClaimExportJob(ctx, "w1", Epoch, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		res := audit.ExportResult{Archive: done.ID + ".zip", ArchiveSize: 10, ArchiveExpiresAt: Epoch.Add(time.Hour)}
		one := func(i int) []*audit.Record { return []*audit.Record{NewRecord(a, i)} }
		wantKind(t, "complete by another owner", s.CompleteExportJob(ctx, a, done.ID, "w2", Epoch, res, one(2)), fault.Conflict)
		wantKind(t, "complete after the lease lapsed", s.CompleteExportJob(ctx, a, done.ID, "w1", Epoch.Add(time.Minute), res, one(3)), fault.Conflict)
		if err := s.CompleteExportJob(ctx, a, done.ID, "w1", Epoch, res, one(4)); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "fail by another owner", s.FailExportJob(ctx, a, failed.ID, "w2", Epoch, "x", one(5)), fault.Conflict)
		wantKind(t, "fail of a completed job", s.FailExportJob(ctx, a, done.ID, "w1", Epoch, "x", one(6)), fault.Conflict)
		if err := s.FailExportJob(ctx, a, failed.ID, "w1", Epoch, "too big", one(7)); err != nil {
			t.Fatal(err)
		}
		wantKind(t, "forget from another tenant", s.ForgetExportArchive(ctx, identity.NewGUID(), done.ID, one(8)), fault.NotFound)
		wantKind(t, "forget of a missing job", s.ForgetExportArchive(ctx, a, "missing", one(9)), fault.NotFound)
		if err := s.ForgetExportArchive(ctx, a, done.ID, one(10)); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"trace-1", "trace-4", "trace-7", "trace-10"}, ChainTraces(t, ctx, s, a)); d != "" {
			t.Errorf("records (-want +got):\n%s", d)
		}
		if j, _ := s.GetExportJob(ctx, a, done.ID); j.State != audit.JobSucceeded || j.Archive != "" {
			t.Errorf("completed job after forgetting = %+v", j)
		}
		if j, _ := s.GetExportJob(ctx, a, failed.ID); j.State != audit.JobFailed || j.Error != "too big" {
			t.Errorf("failed job = %+v", j)
		}
	}},
	{"ExportJobTenantIsolation", func(t *testing.T, ctx context.Context, s Store) {
		j := mustCreateJob(t, ctx, s, NewExportJob(identity.NewGUID(), 0))
		other := identity.NewGUID()
		if _, err := s.GetExportJob(ctx, other, j.ID); !fault.Is(fault.NotFound, err) {
			t.Errorf("GetExportJob from another tenant = %v, want NotFound", err)
		}
		if err := s.ForgetExportArchive(ctx, other, j.ID, nil); !fault.Is(fault.NotFound, err) {
			t.Errorf("ForgetExportArchive from another tenant = %v, want NotFound", err)
		}
		c, err := s.ClaimExportJob(ctx, "w", Epoch, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for name, err := range map[string]error{
			"renew":    s.RenewExportLease(ctx, other, j.ID, "w", Epoch, time.Minute, 0),
			"complete": s.CompleteExportJob(ctx, other, j.ID, "w", Epoch, audit.ExportResult{}, nil),
			"fail":     s.FailExportJob(ctx, other, j.ID, "w", Epoch, "x", nil),
		} {
			if !fault.Is(fault.NotFound, err) {
				t.Errorf("%s from another tenant = %v, want NotFound", name, err)
			}
		}
		if c.ID != j.ID {
			t.Errorf("claimed %s, want %s", c.ID, j.ID)
		}
	}},
	{"ExportClaimOrderAndLeaseExpiry", func(t *testing.T, ctx context.Context, s Store) {
		tn := identity.NewGUID()
		late := mustCreateJob(t, ctx, s, NewExportJob(tn, time.Minute))
		early := mustCreateJob(t, ctx, s, NewExportJob(identity.NewGUID(), 0))
		first, err := s.ClaimExportJob(ctx, "dead", Epoch, time.Minute)
		if err != nil || first.ID != early.ID {
			t.Fatalf("first claim = %s, %v; want the oldest job %s", first.ID, err, early.ID)
		}
		second, err := s.ClaimExportJob(ctx, "w2", Epoch, time.Minute)
		if err != nil || second.ID != late.ID {
			t.Fatalf("second claim = %s, %v; want %s", second.ID, err, late.ID)
		}
		// "dead" never renews: at LeaseUntil its lease has lapsed and another
		// worker takes the job over.
		if _, err := s.ClaimExportJob(ctx, "w3", Epoch.Add(time.Minute-time.Microsecond), time.Minute); !fault.Is(fault.NotFound, err) {
			t.Errorf("claim before the lease lapsed = %v, want NotFound", err)
		}
		at := Epoch.Add(time.Minute)
		took, err := s.ClaimExportJob(ctx, "w3", at, time.Minute)
		if err != nil || took.ID != early.ID || took.LeaseOwner != "w3" || took.Attempts != 2 {
			t.Fatalf("takeover = %+v, %v", took, err)
		}
		if err := s.RenewExportLease(ctx, early.TenantID, early.ID, "dead", at, time.Minute, 0); !fault.Is(fault.Conflict, err) {
			t.Errorf("renew by the previous owner = %v, want Conflict", err)
		}
		if err := s.CompleteExportJob(ctx, early.TenantID, early.ID, "dead", at, audit.ExportResult{}, nil); !fault.Is(fault.Conflict, err) {
			t.Errorf("complete by the previous owner = %v, want Conflict", err)
		}
		// A lapsed lease cannot be renewed or completed by its own owner either.
		if err := s.CompleteExportJob(ctx, tn, late.ID, "w2", at.Add(time.Second), audit.ExportResult{}, nil); !fault.Is(fault.Conflict, err) {
			t.Errorf("complete after the lease lapsed = %v, want Conflict", err)
		}
	}},
	{"ExportClaimIsExclusive", func(t *testing.T, ctx context.Context, s Store) {
		j := mustCreateJob(t, ctx, s, NewExportJob(identity.NewGUID(), 0))
		const workers = 8
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins []string
		)
		for w := range workers {
			wg.Go(func() {
				owner := "w" + string(rune('a'+w))
				c, err := s.ClaimExportJob(ctx, owner, Epoch, time.Minute)
				if fault.Is(fault.NotFound, err) {
					return
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				mu.Lock()
				wins = append(wins, owner)
				mu.Unlock()
				if c.ID != j.ID {
					t.Errorf("claimed %s", c.ID)
				}
			})
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("%d claims won (%v), want exactly 1", len(wins), wins)
		}
		got, _ := s.GetExportJob(ctx, j.TenantID, j.ID)
		if got.LeaseOwner != wins[0] || got.Attempts != 1 {
			t.Errorf("job after the race = owner %q attempts %d, want %q 1", got.LeaseOwner, got.Attempts, wins[0])
		}
	}},
	{"ExpiredArchives", func(t *testing.T, ctx context.Context, s Store) {
		tn := identity.NewGUID()
		var ids []string
		for i, exp := range []time.Duration{2 * time.Hour, time.Hour, 3 * time.Hour} {
			j := mustCreateJob(t, ctx, s, NewExportJob(tn, time.Duration(i)*time.Second))
			if _, err := s.ClaimExportJob(ctx, "w", Epoch, time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := s.CompleteExportJob(ctx, tn, j.ID, "w", Epoch, audit.ExportResult{Archive: j.ID + ".zip", ArchiveExpiresAt: Epoch.Add(exp)}, nil); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, j.ID)
		}
		mustCreateJob(t, ctx, s, NewExportJob(tn, time.Hour)) // ACTIVE: never listed
		list := func(now time.Time, limit int) []string {
			jobs, err := s.ListExpiredArchives(ctx, now, limit)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, j := range jobs {
				out = append(out, j.ID)
			}
			return out
		}
		if got := list(Epoch.Add(time.Hour-time.Microsecond), 10); len(got) != 0 {
			t.Errorf("expired before any expiry = %v", got)
		}
		if d := cmp.Diff([]string{ids[1], ids[0]}, list(Epoch.Add(2*time.Hour), 10)); d != "" {
			t.Errorf("expired at +2h, oldest first (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{ids[1]}, list(Epoch.Add(5*time.Hour), 1)); d != "" {
			t.Errorf("limit 1 (-want +got):\n%s", d)
		}
		if err := s.ForgetExportArchive(ctx, tn, ids[1], nil); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{ids[0], ids[2]}, list(Epoch.Add(5*time.Hour), 10)); d != "" {
			t.Errorf("after forgetting one (-want +got):\n%s", d)
		}
		got, err := s.GetExportJob(ctx, tn, ids[1])
		if err != nil || got.Archive != "" || got.State != audit.JobSucceeded {
			t.Errorf("forgotten job = %+v, %v; want it readable with no archive", got, err)
		}
		if err := s.ForgetExportArchive(ctx, tn, "missing", nil); !fault.Is(fault.NotFound, err) {
			t.Errorf("forget missing = %v, want NotFound", err)
		}
	}},
	{"ScanAuditRecordsFiltersAndOrder", func(t *testing.T, ctx context.Context, s Store) {
		tn, other := identity.NewGUID(), identity.NewGUID()
		// 2500 records, more than two pages of any store's chunking, one ms
		// apart; actor, source, resource, action and status vary with i.
		var batch []*audit.Record
		for i := 1; i <= 2500; i++ {
			r := NewRecord(tn, i)
			r.ActorID = []string{"alice", "bob", "carol"}[i%3]
			if i%5 == 0 {
				r.Source, r.ResourceID = audit.SourceEvents, "res-events"
			}
			if i%7 == 0 {
				r.Action = "token.issue"
			}
			if i%11 == 0 {
				r.Status = audit.StatusFailed
			}
			batch = append(batch, r)
			if len(batch) == 500 {
				if err := s.AppendAuditRecords(ctx, batch); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if err := s.AppendAuditRecords(ctx, []*audit.Record{NewRecord(other, 10)}); err != nil {
			t.Fatal(err)
		}
		all := audit.ExportRequest{From: Epoch, To: Epoch.Add(time.Hour)}
		want := func(keep func(i int) bool) []int64 {
			var out []int64
			for i := 1; i <= 2500; i++ {
				if keep(i) {
					out = append(out, int64(i))
				}
			}
			return out
		}
		with := func(f func(q *audit.ExportRequest)) audit.ExportRequest {
			q := all
			f(&q)
			return q
		}
		ms := func(i int) time.Time { return Epoch.Add(time.Duration(i) * time.Millisecond) }
		tests := []struct {
			name string
			req  audit.ExportRequest
			want []int64
		}{
			{"everything", all, want(func(int) bool { return true })},
			{"inclusive range", with(func(q *audit.ExportRequest) { q.From, q.To = ms(1000), ms(2200) }), want(func(i int) bool { return i >= 1000 && i <= 2200 })},
			{"one instant", with(func(q *audit.ExportRequest) { q.From, q.To = ms(7), ms(7) }), []int64{7}},
			{"empty range before", with(func(q *audit.ExportRequest) { q.From, q.To = Epoch.Add(-time.Hour), Epoch }), nil},
			{"empty range after", with(func(q *audit.ExportRequest) { q.From, q.To = ms(2501), Epoch.Add(time.Hour) }), nil},
			{"huge range", with(func(q *audit.ExportRequest) { q.From, q.To = Epoch.AddDate(-50, 0, 0), Epoch.AddDate(50, 0, 0) }), want(func(int) bool { return true })},
			{"actor", with(func(q *audit.ExportRequest) { q.ActorID = "bob" }), want(func(i int) bool { return i%3 == 1 })},
			{"source", with(func(q *audit.ExportRequest) { q.Source = audit.SourceEvents }), want(func(i int) bool { return i%5 == 0 })},
			{"resource", with(func(q *audit.ExportRequest) { q.ResourceID = "res-1" }), want(func(i int) bool { return i%5 != 0 })},
			{"action", with(func(q *audit.ExportRequest) { q.Action = "token.issue" }), want(func(i int) bool { return i%7 == 0 })},
			{"status", with(func(q *audit.ExportRequest) { q.Status = audit.StatusFailed }), want(func(i int) bool { return i%11 == 0 })},
			{"all filters and range", with(func(q *audit.ExportRequest) {
				q.From, q.ActorID, q.Source, q.Action, q.Status = ms(500), "carol", audit.SourceEvents, "token.issue", audit.StatusFailed
			}), want(func(i int) bool { return i >= 500 && i%3 == 2 && i%5 == 0 && i%7 == 0 && i%11 == 0 })},
			{"no match", with(func(q *audit.ExportRequest) { q.ActorID = "nobody" }), nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if d := cmp.Diff(tt.want, seqsOf(t, s, ctx, tn, tt.req), cmpopts.EquateEmpty()); d != "" {
					t.Errorf("seqs (-want +got):\n%s", d)
				}
			})
		}
		if got := seqsOf(t, s, ctx, identity.NewGUID(), all); len(got) != 0 {
			t.Errorf("unknown tenant yielded %v", got)
		}
		// The yielded records are the stored chain.
		var recs []audit.Record
		for r, err := range s.ScanAuditRecords(ctx, tn, with(func(q *audit.ExportRequest) { q.To = ms(1500) })) {
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
		CheckChain(t, recs)
		// Stopping early is allowed and releases the scan.
		n := 0
		for _, err := range s.ScanAuditRecords(ctx, tn, all) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 3 {
				break
			}
		}
	}},
	{"AuditTimesNeverDecrease", func(t *testing.T, ctx context.Context, s Store) {
		tn := identity.NewGUID()
		a, b := NewRecord(tn, 10), NewRecord(tn, 5) // b is stamped earlier but appended later
		if err := s.AppendAuditRecords(ctx, []*audit.Record{a}); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendAuditRecords(ctx, []*audit.Record{b}); err != nil {
			t.Fatal(err)
		}
		got, _ := s.ListAuditRecords(ctx, tn, 0, 10)
		if len(got) != 2 || !got[1].Time.Equal(got[0].Time) {
			t.Fatalf("times = %v, want the second clamped to the first", got)
		}
		CheckChain(t, got)
	}},
}
