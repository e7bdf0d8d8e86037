package audit

import (
	"context"
	"iter"
	"time"
)

// States of an export job, as reported by
// GET {audit_url}/v1/audit-log-exports/{jobId}.
const (
	JobActive    = "ACTIVE"    // accepted; queued or being written
	JobSucceeded = "SUCCEEDED" // the archive is stored and downloadable
	JobFailed    = "FAILED"    // gave up; Error says why
)

// MaxExportAttempts is how many times a job is claimed before a worker
// fails it instead of retrying, so a job that crashes its worker cannot loop.
const MaxExportAttempts = 3

// ExportJob is one audit-log export of one tenant. A job is created ACTIVE,
// claimed by a background worker under a lease, and ends SUCCEEDED or FAILED;
// it never leaves a final state.
type ExportJob struct {
	ID        string        // the jobId, unique across tenants
	TenantID  string        // owner; every read is scoped by it
	Request   ExportRequest // validated by ParseExportRequest
	State     string        // JobActive, JobSucceeded or JobFailed
	StartedAt time.Time     // when the request was accepted
	EndedAt   *time.Time    // when it reached a final state; nil while ACTIVE
	Error     string        // public reason of a FAILED job; "" otherwise
	// TraceID is the trace id of the request that started the job; the
	// worker runs the job under it, so the job's own records (export.complete,
	// export.fail) are found by the trace id the client was given.
	TraceID string
	// TraceParent is the W3C traceparent of the span of the request that
	// started the job ("" when that request was not traced): the worker's
	// span links to it, in whichever process runs the job.
	TraceParent string

	// Archive is where the worker stored the ZIP, opaque to this package (a
	// file name, an object key). The client-facing location is not stored: it
	// is a signed URL made by URLSigner each time the job is read, so it never
	// outlives its 24 hours in the database.
	Archive string
	// ArchiveSize and Summary describe the stored archive; zero until SUCCEEDED.
	ArchiveSize int64
	Summary     Summary
	// ArchiveExpiresAt is when the archive may be deleted; set at completion.
	ArchiveExpiresAt time.Time

	// RecordsWritten is how many records the current attempt has written
	// so far, as of its last lease renewal (a third of the lease, 1 s by
	// default); the archive's count once SUCCEEDED.
	RecordsWritten int64

	Attempts   int       // claims so far, including the current one
	LeaseOwner string    // worker holding the job; "" when unclaimed
	LeaseUntil time.Time // the lease lapses at this time and another worker may take over
}

// ExportResult is what a worker records when it completes a job.
type ExportResult struct {
	Archive          string
	ArchiveSize      int64
	Summary          Summary
	ArchiveExpiresAt time.Time
}

// ExportStore is the storage an export needs: jobs with worker leases, and a
// streaming read of a tenant's audit log. It is a sketch of the methods the
// stores (memstore, sqlite, postgres) implement and the storetest suite
// checks; each method states the fault kind it returns. Times are passed in
// ("now"): stores never read the clock.
//
// Lease protocol: a worker calls ClaimExportJob, writes the archive while
// renewing its lease well before LeaseUntil, then calls CompleteExportJob or
// FailExportJob with its owner name. If the worker dies, the lease lapses and
// another worker's claim takes the job over (Attempts grows); the late worker's
// Complete or Fail then fails with fault.Conflict and it must discard its
// archive. Writing an archive is idempotent (same records, new signature), so
// a takeover is safe.
type ExportStore interface {
	// CreateExportJob stores a new ACTIVE job.
	// Returns fault.Conflict if a job with the same ID exists.
	CreateExportJob(ctx context.Context, job ExportJob) error

	// GetExportJob returns a tenant's job. Returns fault.NotFound if there is
	// none with that ID in that tenant, including when the ID belongs to
	// another tenant (which must not be distinguishable).
	GetExportJob(ctx context.Context, tenantID, id string) (ExportJob, error)

	// ClaimExportJob atomically takes the oldest (by StartedAt) ACTIVE job
	// whose lease is free or lapsed (LeaseUntil <= now), across all tenants:
	// it sets LeaseOwner = owner, LeaseUntil = now+leaseFor, increments
	// Attempts, and returns the updated job. Two concurrent claims, even from
	// different processes, never get the same job while a lease is live.
	// Returns fault.NotFound when there is nothing to claim.
	ClaimExportJob(ctx context.Context, owner string, now time.Time, leaseFor time.Duration) (ExportJob, error)

	// RenewExportLease extends the lease of a job owner still holds to
	// now+leaseFor. Returns fault.Conflict if the job is not ACTIVE, is held
	// by another owner, or the lease lapsed (LeaseUntil <= now); fault.NotFound
	// if there is no such job.
	RenewExportLease(ctx context.Context, tenantID, id, owner string, now time.Time, leaseFor time.Duration, recordsWritten int64) error

	// CompleteExportJob moves a job owner holds to SUCCEEDED with EndedAt =
	// now and the result's archive fields, clears the lease, and appends
	// recs (its audit records, built by a Builder; may be nil) to their
	// chains in the same transaction (LogStore.AppendAuditRecords' rules),
	// locking the job before the chain heads. Returns fault.Conflict under
	// the same conditions as RenewExportLease; fault.NotFound if there is no
	// such job; either way nothing is written, recs included.
	CompleteExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, res ExportResult, recs []*Record) error

	// FailExportJob moves a job owner holds to FAILED with EndedAt = now and
	// Error = reason (a public message), clears the lease and appends recs,
	// all as CompleteExportJob. Returns fault.Conflict and fault.NotFound
	// as CompleteExportJob.
	FailExportJob(ctx context.Context, tenantID, id, owner string, now time.Time, reason string, recs []*Record) error

	// ListExpiredArchives returns up to limit SUCCEEDED jobs, oldest first,
	// whose ArchiveExpiresAt <= now and whose Archive is not "", for the
	// clean-up worker to delete the files and then call ForgetExportArchive.
	ListExpiredArchives(ctx context.Context, now time.Time, limit int) ([]ExportJob, error)

	// ForgetExportArchive clears Archive of a job once its file is deleted,
	// and appends recs (may be nil) in the same transaction, as
	// CompleteExportJob; the job itself stays readable. Returns
	// fault.NotFound if there is no such job, and then writes nothing.
	ForgetExportArchive(ctx context.Context, tenantID, id string, recs []*Record) error

	// ScanAuditRecords streams the tenant's records matching req (see
	// ExportRequest.Matches) in increasing Seq order, with Seq, PrevHash and
	// Hash filled from the stored chain. It reads in pages or with a cursor,
	// never the whole result at once, and sees one consistent snapshot or
	// at least never yields a record twice or out of order. The iterator
	// yields a non-nil error (then stops) on failure: fault.Unavailable when
	// the database is unreachable, fault.Internal otherwise; stopping early
	// releases its resources. The context bounds the whole scan.
	//
	// For an unfiltered request to prove that no record of the range was
	// removed, records must be appended with Time non-decreasing in Seq
	// (the appender uses max(now, time of the previous record)); otherwise
	// a record whose time falls outside the range can sit between two that
	// fall inside, and a verifier reports the gap as a removed record.
	ScanAuditRecords(ctx context.Context, tenantID string, req ExportRequest) iter.Seq2[Record, error]
}
