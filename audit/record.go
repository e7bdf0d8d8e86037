// Package audit records every action of every area of the platform, keeps
// per-tenant hash-chained logs, and exports them as signed ZIP archives.
//
// Areas do not import this package's services: they record through the small
// Sink interface, and read the request's trace id and actor from the context.
package audit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// Status values of a record.
const (
	StatusSuccess = "success"
	StatusFailed  = "failed"
)

// Service kinds: the `source` constant of each area's records and of its
// service instances.
const (
	SourcePlatform      = "latchkey-platform"
	SourceAudit         = "latchkey-audit"
	SourceAuthenticator = "latchkey-authenticator"
	SourceNotification  = "latchkey-notification"
	SourceEventStream   = "latchkey-eventstream"
	SourceEvents        = "latchkey-events"
	SourceProvisioning  = "latchkey-provisioning"
)

// Sources lists every service kind; each tenant has one service instance of each.
var Sources = []string{
	SourcePlatform, SourceAudit, SourceAuthenticator, SourceNotification,
	SourceEventStream, SourceEvents, SourceProvisioning,
}

// TimeFormat is how the spec writes a record's time in an export:
// YYYY-MM-DD hh:mm:ss.ffffff UTC, six fractional digits and the literal
// " UTC" (times are always in UTC).
const TimeFormat = "2006-01-02 15:04:05.000000 UTC"

// chainTimeFormat is the time inside the canonical JSON that ChainHash
// hashes: TimeFormat without its constant " UTC" suffix. It is kept as the
// chain was first defined so that the hashes of records already stored stay
// valid; a verifier drops the suffix (see EXPORT.md).
const chainTimeFormat = "2006-01-02 15:04:05.000000"

// Entry is what an area reports about one action.
type Entry struct {
	TenantID string         // tenant that owns the log (GUID)
	Source   string         // service kind, one of Sources
	Action   string         // e.g. "user.create", "token.issue"
	Err      error          // nil for success; its public message becomes meta.errorMessage
	ActorID  string         // overrides the context's actor when set
	Meta     map[string]any // details of users, resources and clients involved
}

// Sink records entries. Record returns once the record is durable, so an
// action is never answered before its audit record is stored.
type Sink interface {
	Record(ctx context.Context, e Entry) error
}

// Record is one stored audit log record. JSON field names are the spec's.
type Record struct {
	Seq        int64          `json:"-"` // per-tenant sequence, from 1
	Time       time.Time      `json:"-"`
	TenantID   string         `json:"tenantID"`
	TraceID    string         `json:"traceID"`
	Source     string         `json:"source"`
	ResourceID string         `json:"resourceid"`
	ActorID    string         `json:"actorid"`
	Action     string         `json:"action"`
	Status     string         `json:"status"`
	Meta       map[string]any `json:"meta"`
	PrevHash   []byte         `json:"-"` // Hash of the tenant's previous record; nil for the first
	Hash       []byte         `json:"-"` // ChainHash(PrevHash, record)
}

// MarshalJSON writes the record with the spec's time format.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	return json.Marshal(struct {
		Time string `json:"time"`
		plain
	}{r.Time.UTC().Format(TimeFormat), plain(r)})
}

// ChainHash computes a record's link in its tenant's hash chain:
// SHA-256(prev || canonical JSON of the record with its sequence number).
// Stores call it when they append, so the chain is built inside the same
// transaction that assigns the sequence.
//
// The canonical JSON is what a downloader can rebuild from an exported
// record: see canonicalRecordJSON. It includes Seq, so a record cannot be
// renumbered without breaking its hash.
func ChainHash(prev []byte, r Record) []byte {
	_, h, err := ChainLink(prev, r)
	if err != nil {
		// Meta holds only JSON-encodable values put there by this module.
		panic(err.Error())
	}
	return h
}

// ChainLink returns ChainHash(prev, r) and the canonical JSON it hashes,
// which a store may keep as the record's stored form: it holds every
// field but PrevHash and Hash (see DecodeCanonical). It fails when meta
// holds a value encoding/json cannot encode.
func ChainLink(prev []byte, r Record) (canonical, hash []byte, err error) {
	body, err := canonicalRecordJSON(r)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: record not encodable: %w", err)
	}
	h := sha256.New()
	h.Write(prev)
	h.Write(body)
	return body, h.Sum(nil), nil
}

type ctxKey int

const (
	traceKey ctxKey = iota
	actorKey
	clientKey
	markKey
)

// WithMark returns a context that notes whether a record was made under
// it (Outcome, or a Recorder's Record or Build), and the note: the HTTP
// layer audits a refusal that no area did.
func WithMark(ctx context.Context) (context.Context, *atomic.Bool) {
	m := new(atomic.Bool)
	return context.WithValue(ctx, markKey, m), m
}

// mark notes on ctx's mark, if any, that a record was made.
func mark(ctx context.Context) {
	if m, ok := ctx.Value(markKey).(*atomic.Bool); ok {
		m.Store(true)
	}
}

// WithTraceID returns a context carrying the request's trace id.
func WithTraceID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, traceKey, id)
}

// TraceID returns the context's trace id, or "".
func TraceID(ctx context.Context) string {
	s, _ := ctx.Value(traceKey).(string)
	return s
}

// NewTraceID returns a fresh trace id: 32 lower-case hex digits, the form
// of a W3C traceparent trace id. Background work that no request started
// runs under one, so that every record carries a trace id.
func NewTraceID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WithActor returns a context naming the user (or client) acting.
func WithActor(ctx context.Context, actorID, clientID string) context.Context {
	ctx = context.WithValue(ctx, actorKey, actorID)
	if clientID != "" {
		ctx = context.WithValue(ctx, clientKey, clientID)
	}
	return ctx
}

// WithSystemActor returns a context naming actorID, the platform itself,
// as the actor and no client: what the platform does by itself while it
// serves a request (a key's date that came, stored by the request's write)
// keeps the request's trace id but is not the client's action.
func WithSystemActor(ctx context.Context, actorID string) context.Context {
	return context.WithValue(context.WithValue(ctx, actorKey, actorID), clientKey, "")
}

// Actor returns the acting user's id and the client's id, if any.
func Actor(ctx context.Context) (actorID, clientID string) {
	actorID, _ = ctx.Value(actorKey).(string)
	clientID, _ = ctx.Value(clientKey).(string)
	return actorID, clientID
}

// Outcome records e, whose Err is the action's outcome, and returns e.Err:
// the action's own result. When the record cannot be stored it returns
// Unavailable instead, since no action may be answered without its record.
// Every area records its actions through it.
func Outcome(ctx context.Context, s Sink, e Entry) error {
	mark(ctx)
	if err := s.Record(ctx, e); err != nil {
		return Unavailable(err)
	}
	return e.Err
}

// Unavailable is the error of an action whose audit record cannot be
// written (fault.Unavailable: the client may retry).
func Unavailable(cause error) error {
	return fault.E(fault.Unavailable, "the audit log is unavailable; try again", cause)
}

// BuildRecords builds the records of entries with sink, when it is a
// Builder, to be written in the transaction of the change they record (a
// store method taking []*Record); a sink that cannot build records (a
// test's fake) gets the entries back as late, to record after the change
// with RecordLate. A record that cannot be built is Unavailable: the
// change must then not be written either.
func BuildRecords(ctx context.Context, sink Sink, entries []Entry) (recs []*Record, late []Entry, err error) {
	b, ok := sink.(Builder)
	if !ok {
		return nil, entries, nil
	}
	for _, e := range entries {
		rec, err := b.Build(ctx, e)
		if err != nil {
			return nil, nil, Unavailable(err)
		}
		recs = append(recs, rec)
	}
	return recs, nil, nil
}

// RecordLate records entries that BuildRecords gave back, after their
// change is stored; a failure is logged, since the change stands.
func RecordLate(ctx context.Context, sink Sink, log *slog.Logger, entries []Entry) {
	for _, e := range entries {
		if err := Outcome(ctx, sink, e); err != nil {
			log.ErrorContext(ctx, "audit: cannot record a change after it was stored", "tenant", e.TenantID, "action", e.Action, "err", err)
		}
	}
}
