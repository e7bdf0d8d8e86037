package audit

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/ids"
	"github.com/latchkey/latchkey/internal/tracing"
)

// Authorization of the export API. They equal identity.ScopeAuditExport,
// identity.RoleTenantAdmin and identity.RoleApplicationOwner; this package
// cannot import identity (identity records through it), so the platform
// passes callers as Caller values.
const (
	ScopeExport          = "audit:export"
	RoleTenantAdmin      = "tenant-admin"
	RoleApplicationOwner = "application-owner"
)

// Defaults of ExporterConfig.
const (
	// DefaultLeaseFor and DefaultPollEvery are short so that a job of a
	// dead process moves to a live one within seconds: its lease lapses
	// at most DefaultLeaseFor after the death (the worker renews every
	// third of it) and idle workers look for lapsed jobs every
	// DefaultPollEvery. The poll is one indexed UPDATE a second per
	// process.
	DefaultLeaseFor     = 3 * time.Second
	DefaultPollEvery    = time.Second
	DefaultCleanupEvery = 10 * time.Minute
	// ArchiveTTL is how long an archive is kept after its job succeeds: the
	// life of a signed URL, so a link handed out at completion works to the end.
	ArchiveTTL = URLValidity
)

// Paging of ListServiceInstances.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Caller is the authenticated caller of an export operation, as the
// platform's identity layer established it.
type Caller struct {
	TenantID    string
	AccessToken bool // authenticated by an OAuth access token (client_credentials)
	Roles       []string
	Scopes      []string
}

// ExporterStore is the storage the Exporter needs.
type ExporterStore interface {
	LogStore
	ExportStore
}

// ExporterConfig configures NewExporter. Store, Sink, Signer and URLKey are required.
type ExporterConfig struct {
	Store  ExporterStore
	Sink   Sink // where the export API's own actions are recorded
	Clock  clock.Clock
	Logger *slog.Logger
	// Signer returns the key that signs archive digests: the platform's
	// current JWT signing key, so downloaders verify with the JWKS. It is
	// called per archive, so a key rotation is picked up.
	Signer func() (DigestSigner, error)
	// URLKey is the HMAC key of download links, at least 32 bytes
	// (seal.Sealer.SubKey("audit-url")); the same in every process.
	URLKey []byte
	// ArchiveDir holds the archives, their integrity files and the files
	// being written; it is created if missing. Several processes may share
	// it (it is then a shared volume); the store's leases keep them from
	// writing the same job.
	ArchiveDir string
	// Owner names this process's worker in leases; default random.
	Owner string
	// ProgressEvery is how many records pass between an export's progress
	// log lines; default 100 000.
	ProgressEvery int
	// LeaseFor is how long a claim holds a job without renewal; the worker
	// renews at a third of it. After a crash, another worker takes the job
	// over once it lapses. Default DefaultLeaseFor.
	LeaseFor time.Duration
	// PollEvery is how often an idle worker looks for jobs created by other
	// processes (jobs of this process wake it at once). Default DefaultPollEvery.
	PollEvery time.Duration
	// CleanupEvery is how often expired archives are removed. Default DefaultCleanupEvery.
	CleanupEvery time.Duration
	// Tracer, when set, makes a span of each job run (audit.export),
	// linked to the span of the request that created the job; nil makes
	// none.
	Tracer oteltrace.Tracer
}

// Exporter is the audit-export service (area B): it lists service
// instances, accepts export jobs, runs them in the background into signed
// archives, and serves the archives behind signed URLs.
//
// Authorization: every operation but OpenArchive needs a Caller holding an
// OAuth access token with scope audit:export and the role tenant-admin or
// application-owner (fault.Forbidden otherwise); a caller sees only its own
// tenant's jobs and instances (another tenant's job is fault.NotFound).
// Every operation is recorded in the caller's tenant with source
// latchkey-audit, failures with meta.errorMessage.
type Exporter struct {
	cfg  ExporterConfig
	urls *URLSigner
	log  *slog.Logger
	wake chan struct{}

	mu       sync.Mutex
	passDone chan struct{} // closed and replaced after each worker pass

	created, succeeded, failed, running atomic.Int64
}

// ExportStats counts the jobs this process created, completed and failed
// since it started, and the archives it is writing now, for metrics.
type ExportStats struct {
	Created, Succeeded, Failed, Running int64
}

// Stats reports this process's export work.
func (e *Exporter) Stats() ExportStats {
	return ExportStats{Created: e.created.Load(), Succeeded: e.succeeded.Load(), Failed: e.failed.Load(), Running: e.running.Load()}
}

// NewExporter returns an Exporter; it starts nothing (see Run).
func NewExporter(cfg ExporterConfig) (*Exporter, error) {
	if cfg.Store == nil || cfg.Sink == nil || cfg.Signer == nil || cfg.ArchiveDir == "" {
		return nil, errors.New("audit: ExporterConfig needs Store, Sink, Signer and ArchiveDir")
	}
	if len(cfg.URLKey) < 32 {
		return nil, errors.New("audit: ExporterConfig.URLKey must be at least 32 bytes")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Owner == "" {
		host, _ := os.Hostname()
		var b [6]byte
		rand.Read(b[:])
		cfg.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 100_000
	}
	if cfg.LeaseFor <= 0 {
		cfg.LeaseFor = DefaultLeaseFor
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.CleanupEvery <= 0 {
		cfg.CleanupEvery = DefaultCleanupEvery
	}
	if err := os.MkdirAll(cfg.ArchiveDir, 0o700); err != nil {
		return nil, fmt.Errorf("audit: archive directory: %w", err)
	}
	return &Exporter{
		cfg: cfg, urls: NewURLSigner(cfg.URLKey, cfg.Clock), log: cfg.Logger,
		wake: make(chan struct{}, 1), passDone: make(chan struct{}),
	}, nil
}

// Owner returns the worker's lease owner name.
func (e *Exporter) Owner() string { return e.cfg.Owner }

func (e *Exporter) now() time.Time { return e.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

// authorize checks the caller and records a refusal in its tenant.
func (e *Exporter) authorize(ctx context.Context, c Caller, action string) error {
	var err error
	switch {
	case c.TenantID == "":
		return fault.E(fault.Unauthenticated, "no caller")
	case !c.AccessToken:
		err = fault.E(fault.Forbidden, "the audit export API needs an OAuth access token")
	case !slices.Contains(c.Scopes, ScopeExport):
		err = fault.E(fault.Forbidden, "the access token lacks scope "+ScopeExport)
	case !slices.Contains(c.Roles, RoleTenantAdmin) && !slices.Contains(c.Roles, RoleApplicationOwner):
		err = fault.E(fault.Forbidden, "the audit export API needs the tenant-admin or application-owner role")
	default:
		return nil
	}
	return e.record(ctx, c.TenantID, action, err, nil)
}

// record writes the audit record of one operation and returns err, or
// fault.Unavailable when the record cannot be written: an operation is never
// answered without its record.
func (e *Exporter) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	return Outcome(ctx, e.cfg.Sink, Entry{TenantID: tenantID, Source: SourceAudit, Action: action, Err: err, Meta: meta})
}

// InstancePage is one page of a tenant's service instances.
type InstancePage struct {
	Content       []ServiceInstance `json:"content"`
	TotalElements int               `json:"totalElements"`
	TotalPages    int               `json:"totalPages"`
}

// ListServiceInstances returns page (from 0) of size (1 to MaxPageSize)
// instances of the caller's tenant, in creation order; the HTTP layer
// applies the defaults 0 and DefaultPageSize. Bad paging is fault.Invalid.
func (e *Exporter) ListServiceInstances(ctx context.Context, c Caller, page, size int) (InstancePage, error) {
	const action = "serviceinstances.list"
	if err := e.authorize(ctx, c, action); err != nil {
		return InstancePage{}, err
	}
	meta := map[string]any{"page": page, "size": size}
	if page < 0 {
		return InstancePage{}, e.record(ctx, c.TenantID, action, fault.E(fault.Invalid, fault.Field("page"), "page must be greater than or equal to 0"), meta)
	}
	if size < 1 || size > MaxPageSize {
		return InstancePage{}, e.record(ctx, c.TenantID, action, fault.E(fault.Invalid, fault.Field("size"), "size must be between 1 and 100"), meta)
	}
	offset := page * size
	if page > math.MaxInt32 {
		offset = math.MaxInt32 // far past any tenant's instances: an empty page
	}
	list, total, err := e.cfg.Store.ListServiceInstances(ctx, c.TenantID, offset, size)
	if err != nil {
		return InstancePage{}, e.record(ctx, c.TenantID, action, err, meta)
	}
	if list == nil {
		list = []ServiceInstance{}
	}
	return InstancePage{Content: list, TotalElements: total, TotalPages: (total + size - 1) / size}, e.record(ctx, c.TenantID, action, nil, meta)
}

func requestMeta(jobID string, q ExportRequest) map[string]any {
	m := map[string]any{"jobId": jobID, "from": q.From.Format(DigestTimeFormat), "to": q.To.Format(DigestTimeFormat)}
	for k, v := range map[string]string{"resourceId": q.ResourceID, "source": q.Source, "actorId": q.ActorID, "action": q.Action, "status": q.Status} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// StartExport validates body (see ParseExportRequest) and queues an ACTIVE
// job for the caller's tenant; a worker of Run picks it up at once. Errors:
// fault.Forbidden, fault.Invalid (with the field), or the store's.
func (e *Exporter) StartExport(ctx context.Context, c Caller, body []byte) (ExportJob, error) {
	const action = "export.create"
	if err := e.authorize(ctx, c, action); err != nil {
		return ExportJob{}, err
	}
	now := e.now()
	req, err := ParseExportRequest(body, now)
	if err != nil {
		return ExportJob{}, e.record(ctx, c.TenantID, action, err, nil)
	}
	trace := TraceID(ctx)
	if trace == "" {
		trace = NewTraceID()
		ctx = WithTraceID(ctx, trace)
	}
	job := ExportJob{ID: ids.NewGUID(), TenantID: c.TenantID, Request: req, State: JobActive, StartedAt: now, TraceID: trace,
		TraceParent: tracing.TraceParent(ctx)}
	if err := e.cfg.Store.CreateExportJob(ctx, job); err != nil {
		return ExportJob{}, e.record(ctx, c.TenantID, action, err, requestMeta(job.ID, req))
	}
	e.created.Add(1)
	if err := e.record(ctx, c.TenantID, action, nil, requestMeta(job.ID, req)); err != nil {
		return ExportJob{}, err
	}
	e.Poke()
	return job, nil
}

// ExportStatus is a job as its owner sees it: Location is the signed
// download URL of the archive and DigestLocation that of its integrity file
// (both relative to the server, under the archive path given to GetExport)
// while the job is SUCCEEDED and its archive is kept, else "".
type ExportStatus struct {
	Job            ExportJob
	Location       string
	DigestLocation string
}

// GetExport returns a job of the caller's tenant with freshly signed
// locations when it has succeeded. archivePath is the route archives are
// served under (e.g. "/audit/v1/archives"; integrity files are under
// archivePath/{jobId}/integrity); the links expire 24 hours from now or
// when the archive is removed, whichever is first. Another tenant's
// job, or an unknown id, is fault.NotFound.
func (e *Exporter) GetExport(ctx context.Context, c Caller, jobID, archivePath string) (ExportStatus, error) {
	const action = "export.get"
	if err := e.authorize(ctx, c, action); err != nil {
		return ExportStatus{}, err
	}
	meta := map[string]any{"jobId": jobID}
	job, err := e.cfg.Store.GetExportJob(ctx, c.TenantID, jobID)
	if err != nil {
		if fault.Is(fault.NotFound, err) {
			err = fault.E(fault.NotFound, "export job not found", err)
		}
		return ExportStatus{}, e.record(ctx, c.TenantID, action, err, meta)
	}
	st := ExportStatus{Job: job}
	now := e.cfg.Clock.Now()
	if job.State == JobSucceeded && job.Archive != "" && job.ArchiveExpiresAt.After(now) {
		exp := now.Add(URLValidity)
		if job.ArchiveExpiresAt.Before(exp) {
			exp = job.ArchiveExpiresAt
		}
		st.Location = e.urls.Sign(archivePath, job.ID, job.TenantID, exp)
		st.DigestLocation = e.urls.SignIntegrity(archivePath, job.ID, job.TenantID, exp)
	}
	meta["state"] = job.State
	return st, e.record(ctx, c.TenantID, action, nil, meta)
}

// Archive is an open download (an archive or its integrity file); the
// caller must Close it.
type Archive struct {
	io.ReadSeekCloser
	Size  int64
	JobID string
	// ModTime is when the job completed.
	ModTime time.Time
}

// IntegrityName is the name of the integrity file stored beside archive
// (the ExportJob.Archive name): "<job>-<attempt>.zip" has
// "<job>-<attempt>.integrity.zip".
func IntegrityName(archive string) string {
	return strings.TrimSuffix(archive, ".zip") + ".integrity.zip"
}

// OpenArchive opens the archive of jobID for a download through a signed
// URL whose query parameters are query (no bearer: the URL is the
// credential). An altered or malformed link is fault.Forbidden, an expired
// one fault.Expired (both 403 over HTTP), an archive that is gone
// fault.NotFound. Downloads with an authentic link are recorded in the
// job's tenant (action export.download); forged links name no trustworthy
// tenant and are only logged.
func (e *Exporter) OpenArchive(ctx context.Context, jobID string, query url.Values) (*Archive, error) {
	return e.open(ctx, jobID, query, false)
}

// OpenIntegrity is OpenArchive for the job's integrity file (hash chain and
// signed digest) through a link made for it (digestLocation); the download
// is recorded as export.integrity.download.
func (e *Exporter) OpenIntegrity(ctx context.Context, jobID string, query url.Values) (*Archive, error) {
	return e.open(ctx, jobID, query, true)
}

func (e *Exporter) open(ctx context.Context, jobID string, query url.Values, integrity bool) (*Archive, error) {
	action, verify := "export.download", e.urls.VerifyQuery
	if integrity {
		action, verify = "export.integrity.download", e.urls.VerifyIntegrityQuery
	}
	if err := verify(jobID, query); err != nil {
		if !fault.Is(fault.Expired, err) {
			e.log.Warn("audit: rejected archive link", "job", jobID, "integrity", integrity, "err", err)
			return nil, err
		}
		return nil, e.record(ctx, query.Get("tenant"), action, err, map[string]any{"jobId": jobID})
	}
	tenant := query.Get("tenant")
	meta := map[string]any{"jobId": jobID}
	job, err := e.cfg.Store.GetExportJob(ctx, tenant, jobID)
	if err == nil && (job.State != JobSucceeded || job.Archive == "") {
		err = fault.E(fault.NotFound, "the archive is no longer available")
	}
	if err != nil {
		return nil, e.record(ctx, tenant, action, err, meta)
	}
	name := job.Archive
	if integrity {
		name = IntegrityName(name)
	}
	f, err := os.Open(filepath.Join(e.cfg.ArchiveDir, name))
	var size int64
	if err == nil {
		size = job.ArchiveSize
		if integrity {
			var st os.FileInfo
			if st, err = f.Stat(); err == nil {
				size = st.Size()
			} else {
				f.Close()
			}
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		err = fault.E(fault.NotFound, "the archive is no longer available", err)
	}
	if err != nil {
		return nil, e.record(ctx, tenant, action, err, meta)
	}
	meta["size"] = size
	if err := e.record(ctx, tenant, action, nil, meta); err != nil {
		f.Close()
		return nil, err
	}
	var mod time.Time
	if job.EndedAt != nil {
		mod = *job.EndedAt
	}
	return &Archive{ReadSeekCloser: f, Size: size, JobID: job.ID, ModTime: mod}, nil
}

// Poke wakes the worker to look for jobs now. It never blocks; pokes while
// the worker is busy coalesce into one more pass.
func (e *Exporter) Poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// AfterPass returns a channel closed when the next worker pass (of Run or
// RunPending) completes. Tests wait on it instead of sleeping: read the
// job state, and if not yet final wait for the next pass.
func (e *Exporter) AfterPass() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.passDone
}

func (e *Exporter) passFinished() {
	e.mu.Lock()
	close(e.passDone)
	e.passDone = make(chan struct{})
	e.mu.Unlock()
}

// Run runs the export worker and the archive clean-up until ctx ends. The
// worker runs every job it can claim, then waits for a Poke or PollEvery
// on the clock; the clean-up runs every CleanupEvery. Several processes
// may run it against one store.
func (e *Exporter) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if _, err := e.RunPending(ctx); err != nil && ctx.Err() == nil {
				e.log.Error("audit: export pass failed", "err", err)
			}
			t := e.cfg.Clock.NewTimer(e.cfg.PollEvery)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-e.wake:
			case <-t.C():
			}
			t.Stop()
		}
	})
	wg.Go(func() {
		for {
			if _, err := e.CleanupExpired(ctx); err != nil && ctx.Err() == nil {
				e.log.Error("audit: archive clean-up failed", "err", err)
			}
			if !clock.Sleep(e.cfg.Clock, e.cfg.CleanupEvery, ctx.Done()) {
				return
			}
		}
	})
	wg.Wait()
	return nil
}

// RunPending claims and runs jobs until none is claimable, and returns how
// many it ran to an end (succeeded or failed). A job whose run fails below
// MaxExportAttempts is left to its lease, to be retried when it lapses.
func (e *Exporter) RunPending(ctx context.Context) (int, error) {
	defer e.passFinished()
	n := 0
	for ctx.Err() == nil {
		job, err := e.cfg.Store.ClaimExportJob(ctx, e.cfg.Owner, e.now(), e.cfg.LeaseFor)
		if fault.Is(fault.NotFound, err) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if e.runJob(ctx, job) {
			n++
		}
	}
	return n, ctx.Err()
}

// runJob runs one claimed job and reports whether it reached a final state.
func (e *Exporter) runJob(ctx context.Context, job ExportJob) bool {
	ctx = WithActor(ctx, "system:"+e.cfg.Owner, "")
	trace := job.TraceID
	if trace == "" { // a job stored before jobs kept their trace id
		trace = NewTraceID()
	}
	ctx = WithTraceID(ctx, trace)
	var span oteltrace.Span
	ctx, span = e.startJobSpan(ctx, job)
	defer span.End()
	meta := requestMeta(job.ID, job.Request)
	meta["attempt"] = job.Attempts
	if job.Attempts > MaxExportAttempts {
		reason := fmt.Sprintf("the export failed %d times", MaxExportAttempts)
		span.SetStatus(codes.Error, reason)
		return e.fail(ctx, job, reason, meta)
	}
	workCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	var written atomic.Int64
	wg.Go(func() { e.keepLease(workCtx, cancel, job, &written) })

	e.log.InfoContext(ctx, "audit: export started", "job", job.ID, "tenant", job.TenantID, "attempt", job.Attempts, "trace", trace)
	started := time.Now() // wall time for the log, not a business time
	e.running.Add(1)
	res, err := e.writeArchive(workCtx, job, &written)
	e.running.Add(-1)
	cancel()
	wg.Wait()
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "the archive was not written")
	} else if span.IsRecording() {
		span.SetAttributes(attribute.Int64("latchkey.export.records", int64(res.Summary.Count)), attribute.Int64("latchkey.export.bytes", res.ArchiveSize))
	}
	if err == nil {
		e.log.InfoContext(ctx, "audit: export written", "job", job.ID, "records", res.Summary.Count,
			"bytes", res.ArchiveSize, "took", time.Since(started).Round(time.Millisecond))
	}
	if err != nil {
		e.log.ErrorContext(ctx, "audit: export failed", "job", job.ID, "attempt", job.Attempts, "err", err)
		if ctx.Err() != nil {
			return false // shutting down: another pass or process takes it over
		}
		if job.Attempts >= MaxExportAttempts {
			reason := fmt.Sprintf("the export failed %d times", MaxExportAttempts)
			span.SetStatus(codes.Error, reason)
			return e.fail(ctx, job, reason, meta)
		}
		return false
	}
	meta["count"], meta["size"] = res.Summary.Count, res.ArchiveSize
	done := Entry{TenantID: job.TenantID, Source: SourceAudit, Action: "export.complete", Meta: meta}
	err = e.finalWrite(ctx, done, func(ctx context.Context, recs []*Record) error {
		return e.cfg.Store.CompleteExportJob(ctx, job.TenantID, job.ID, e.cfg.Owner, e.now(), res, recs)
	})
	if err != nil {
		// Lost the lease (Conflict): another worker owns the job now. Or
		// the store failed: the job stays ACTIVE and is run again once
		// the lease lapses.
		os.Remove(filepath.Join(e.cfg.ArchiveDir, res.Archive))
		os.Remove(filepath.Join(e.cfg.ArchiveDir, IntegrityName(res.Archive)))
		e.log.WarnContext(ctx, "audit: export not completed", "job", job.ID, "err", err)
		return false
	}
	e.succeeded.Add(1)
	return true
}

// finalWriteTimeout bounds a final write that outlives Run's context, so
// that a stop waits for it but never hangs on an unreachable store.
const finalWriteTimeout = 10 * time.Second

// finalWrite stores a change that no worker retries (a job's final state,
// a forgotten archive) together with its audit record entry: write gets
// the record to append in its transaction. Written after the change, the
// record would be lost for good by a process killed between the two, as
// the job is never claimed again and the archive never listed again.
//
// The write outlives ctx (Run's, cancelled at Close, up to
// finalWriteTimeout): a stop must not leave a finished archive
// uncompleted, or a change committed without its record.
//
// A sink that cannot build records (a test's) gets entry recorded after
// the write, as before; a failure to record it is only logged, since the
// change is stored.
func (e *Exporter) finalWrite(ctx context.Context, entry Entry, write func(context.Context, []*Record) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalWriteTimeout)
	defer cancel()
	b, ok := e.cfg.Sink.(Builder)
	if !ok {
		if err := write(ctx, nil); err != nil {
			return err
		}
		if err := e.cfg.Sink.Record(ctx, entry); err != nil {
			e.log.ErrorContext(ctx, "audit: cannot record an export change", "action", entry.Action, "tenant", entry.TenantID, "err", err)
		}
		return nil
	}
	rec, err := b.Build(ctx, entry)
	if err != nil {
		return Unavailable(err)
	}
	return write(ctx, []*Record{rec})
}

// startJobSpan starts the span of one run of job (a no-op span without a
// Tracer): the root of a trace of its own, since no request waits for it,
// linked to the span of the request that created the job.
func (e *Exporter) startJobSpan(ctx context.Context, job ExportJob) (context.Context, oteltrace.Span) {
	if e.cfg.Tracer == nil {
		return tracing.Root(ctx, nil, "audit.export")
	}
	opts := []oteltrace.SpanStartOption{oteltrace.WithAttributes(
		attribute.String("latchkey.tenant.id", job.TenantID),
		attribute.String("latchkey.export.job_id", job.ID),
		attribute.Int("latchkey.export.attempt", job.Attempts),
		// The trace id of the job's audit records, which are the
		// creating request's even when that request was not traced.
		attribute.String("latchkey.audit.trace_id", TraceID(ctx)),
	)}
	if sc, ok := tracing.ParseTraceParent(job.TraceParent); ok {
		opts = append(opts, oteltrace.WithLinks(oteltrace.Link{SpanContext: sc}))
	}
	return tracing.Root(ctx, e.cfg.Tracer, "audit.export", opts...)
}

func (e *Exporter) fail(ctx context.Context, job ExportJob, reason string, meta map[string]any) bool {
	entry := Entry{TenantID: job.TenantID, Source: SourceAudit, Action: "export.fail", Err: fault.E(fault.Unavailable, fault.Msg(reason)), Meta: meta}
	err := e.finalWrite(ctx, entry, func(ctx context.Context, recs []*Record) error {
		return e.cfg.Store.FailExportJob(ctx, job.TenantID, job.ID, e.cfg.Owner, e.now(), reason, recs)
	})
	if err != nil {
		e.log.WarnContext(ctx, "audit: export not failed", "job", job.ID, "err", err)
		return false
	}
	e.failed.Add(1)
	return true
}

// keepLease renews the job's lease every third of LeaseFor until ctx ends,
// with the records written so far (the job's recordsWritten, which the
// command's progress bar shows), and cancels the work when the lease is
// lost.
func (e *Exporter) keepLease(ctx context.Context, cancel context.CancelFunc, job ExportJob, written *atomic.Int64) {
	for clock.Sleep(e.cfg.Clock, e.cfg.LeaseFor/3, ctx.Done()) {
		err := e.cfg.Store.RenewExportLease(ctx, job.TenantID, job.ID, e.cfg.Owner, e.now(), e.cfg.LeaseFor, written.Load())
		if err != nil && ctx.Err() == nil {
			e.log.Warn("audit: export lease lost", "job", job.ID, "err", err)
			cancel()
			return
		}
	}
}

// writeArchive streams the job's records into <jobID>-<attempt>.zip and
// its integrity file <jobID>-<attempt>.integrity.zip in the archive
// directory, each through a temporary file renamed at the end (the
// integrity file first, so an archive in place always has its integrity
// file beside it).
func (e *Exporter) writeArchive(ctx context.Context, job ExportJob, written *atomic.Int64) (ExportResult, error) {
	signer, err := e.cfg.Signer()
	if err != nil {
		return ExportResult{}, err
	}
	dir := e.cfg.ArchiveDir
	name := fmt.Sprintf("%s-%d.zip", job.ID, job.Attempts)
	archive, err := newTempOutput(dir, name)
	if err != nil {
		return ExportResult{}, err
	}
	defer archive.discard()
	integrity, err := newTempOutput(dir, IntegrityName(name))
	if err != nil {
		return ExportResult{}, err
	}
	defer integrity.discard()
	meta := ArchiveMeta{JobID: job.ID, TenantID: job.TenantID, Request: job.Request, CreatedAt: e.now()}
	sum, err := WriteArchive(archive.w, integrity.w, meta, e.withProgress(job.ID, written, e.cfg.Store.ScanAuditRecords(ctx, job.TenantID, job.Request)), signer)
	if err != nil {
		return ExportResult{}, err
	}
	if _, err := integrity.commit(); err != nil {
		return ExportResult{}, err
	}
	size, err := archive.commit()
	if err != nil {
		os.Remove(filepath.Join(dir, IntegrityName(name)))
		return ExportResult{}, err
	}
	return ExportResult{Archive: name, ArchiveSize: size, Summary: sum, ArchiveExpiresAt: e.now().Add(ArchiveTTL)}, nil
}

// tempOutput is a file written through a buffer under a temporary name and
// renamed to its final name by commit; discard removes it unless committed.
type tempOutput struct {
	f     *os.File
	w     *bufio.Writer
	final string
	done  bool
}

func newTempOutput(dir, name string) (*tempOutput, error) {
	f, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &tempOutput{f: f, w: bufio.NewWriterSize(f, 256<<10), final: filepath.Join(dir, name)}, nil
}

// commit flushes, syncs and closes the file, renames it to its final name
// and returns its size.
func (t *tempOutput) commit() (int64, error) {
	if err := t.w.Flush(); err != nil {
		return 0, err
	}
	if err := t.f.Sync(); err != nil {
		return 0, err
	}
	size, err := t.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	if err := t.f.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(t.f.Name(), t.final); err != nil {
		return 0, err
	}
	t.done = true
	return size, nil
}

func (t *tempOutput) discard() {
	if !t.done {
		t.f.Close()
		os.Remove(t.f.Name())
	}
}

// CleanupExpired deletes the archives whose time is up and clears them from
// their jobs (which stay readable, with no location), recording
// export.archive.delete in each tenant. It returns how many it removed.
func (e *Exporter) CleanupExpired(ctx context.Context) (int, error) {
	ctx = WithActor(ctx, "system:"+e.cfg.Owner, "")
	ctx = WithTraceID(ctx, NewTraceID()) // one trace per clean-up pass
	n := 0
	for {
		jobs, err := e.cfg.Store.ListExpiredArchives(ctx, e.now(), 100)
		if err != nil || len(jobs) == 0 {
			return n, err
		}
		for _, j := range jobs {
			for _, name := range []string{j.Archive, IntegrityName(j.Archive)} {
				if err := os.Remove(filepath.Join(e.cfg.ArchiveDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return n, err
				}
			}
			entry := Entry{TenantID: j.TenantID, Source: SourceAudit, Action: "export.archive.delete", Meta: map[string]any{"jobId": j.ID}}
			if err := e.finalWrite(ctx, entry, func(ctx context.Context, recs []*Record) error {
				return e.cfg.Store.ForgetExportArchive(ctx, j.TenantID, j.ID, recs)
			}); err != nil {
				return n, err
			}
			n++
		}
	}
}

// withProgress counts the records that recs yields into written (nil:
// not counted) and logs every ProgressEvery of them, so an operator can
// follow a long export.
func (e *Exporter) withProgress(jobID string, written *atomic.Int64, recs iter.Seq2[Record, error]) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		n := 0
		for r, err := range recs {
			if err == nil {
				if written != nil {
					written.Add(1)
				}
				if n++; n%e.cfg.ProgressEvery == 0 {
					e.log.Info("audit: export progress", "job", jobID, "records", n)
				}
			}
			if !yield(r, err) {
				return
			}
		}
	}
}
