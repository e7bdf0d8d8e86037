package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/tracing"
)

// Limits of the service. They are part of the API (docs/events.md).
const (
	// MaxPostEvents is the most events one post may carry.
	MaxPostEvents = 1000
	// MaxPostBytes is the largest accepted post body.
	MaxPostBytes = 5 << 20
	// DefaultPage and DefaultSize are the query's paging defaults;
	// MaxSize is the largest page.
	DefaultPage = 1
	DefaultSize = 20
	MaxSize     = 100
	// MaxPage bounds page so that the offset cannot overflow; the
	// specification sets no upper bound.
	MaxPage = 1_000_000
	// CountAhead is how far past the requested page the query counts
	// matching events: total is exact when fewer than
	// (page-1)*size + size + CountAhead events match, and equals that
	// bound otherwise ("at least"). Counting every match of a large log
	// on every page would cost more than the page itself.
	CountAhead = 100
	// DefaultRetention is how long events are kept by default.
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultCleanupEvery is how often the retention clean-up runs.
	DefaultCleanupEvery = time.Hour
	// maxUserIDLength matches the meta-schema's bound on ids.
	maxUserIDLength = 256
	// deleteChunk is how many events one retention transaction deletes.
	deleteChunk = 10000
)

// Audit actions of the events area (source latchkey-events).
const (
	ActionPost  = "events.post"
	ActionQuery = "events.query"
	ActionEmit  = "events.emit"
)

// Post statuses.
const (
	StatusAccepted = "accepted"
	StatusRejected = "rejected"
)

// Config configures a Service. Store, Audit and Clock are required.
type Config struct {
	Store  Store
	Audit  audit.Sink
	Clock  clock.Clock
	Logger *slog.Logger
	// Retention is how long an event is kept after it was received;
	// default DefaultRetention.
	Retention time.Duration
	// CleanupEvery is the period of the retention clean-up in Run;
	// default DefaultCleanupEvery.
	CleanupEvery time.Duration
	// Notify, when set, is called after appends are committed, to wake
	// readers in other processes sharing the store (the Platform sets it
	// when the store is a latchkey.Notifier; they then call Poke). Calls
	// never overlap, and the appends committed while one runs share the
	// next.
	Notify func(ctx context.Context) error
}

// Service is the events area: posting external events, emitting native
// ones, querying a tenant's log, and retention. Appends go through a
// group-commit ingester: concurrent posts share one store transaction, and
// each returns only once its events are durable.
//
// When the Store is an AuditedAppender and Audit an audit.Builder (the
// SQLite store, the memory store and audit.Recorder are), the audit record
// of a post that stores events is written in the transaction of its
// events: one commit, shared by the concurrent posts of the batch, makes
// both durable. Otherwise the record is written after the events, by
// Audit.Record; the post is answered only after both, in either case.
type Service struct {
	cfg     Config
	log     *slog.Logger
	in      *ingester
	builder audit.Builder // nil unless records can share the events' transaction

	wake       waiters
	notifyReq  chan struct{} // buffer of one: a cross-process signal is wanted
	notifyDone chan struct{}
}

// NewService returns a Service and starts its ingester; Close stops it.
func NewService(cfg Config) *Service {
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.CleanupEvery <= 0 {
		cfg.CleanupEvery = DefaultCleanupEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, log: cfg.Logger}
	s.in = newIngester(cfg.Store, cfg.Logger, s.committed)
	if cfg.Notify != nil {
		s.notifyReq = make(chan struct{}, 1)
		s.notifyDone = make(chan struct{})
		go s.notifyLoop()
	}
	if b, ok := cfg.Audit.(audit.Builder); ok && s.in.audited != nil {
		s.builder = b
	}
	return s
}

// IngestStats reports how the ingester has grouped appends so far.
func (s *Service) IngestStats() IngestStats { return s.in.stats() }

// Close stops the ingester after appending what is already queued; later
// posts fail with fault.Unavailable.
func (s *Service) Close() {
	s.in.close()
	if s.notifyReq != nil {
		close(s.notifyReq)
		<-s.notifyDone
	}
}

// PostResult is the outcome of one posted event.
type PostResult struct {
	Status string       `json:"status"`           // StatusAccepted or StatusRejected
	ID     string       `json:"id,omitempty"`     // the stored event's id, when accepted
	Errors []FieldError `json:"errors,omitempty"` // why, when rejected
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

// record writes the audit record of an action and returns err, or
// fault.Unavailable when the audit log cannot be written: no action is
// answered as done without its record.
func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	if tenantID == "" {
		return err
	}
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourceEvents, Action: action, Err: err, Meta: meta})
}

// PostExternal posts the events of body, a JSON object mapping names chosen
// by the caller to events, into the caller's tenant log. The caller needs
// scope event:event:producer (else fault.Forbidden). The body must be an
// object holding 1 to MaxPostEvents members (else fault.Invalid) and at
// most MaxPostBytes long (else fault.TooLarge). Each event is then judged
// on its own by ValidateExternal: one rejected event never stops the
// others. Accepted events are appended in name order and are durable when
// PostExternal returns. A name given twice keeps its last event.
//
// One audit record covers the whole post, with the counts of accepted and
// rejected events. When the post stores events and the store can (see
// Service), a success record is committed in the same transaction as the
// events; if that transaction fails, neither is stored, a failure record is
// written on its own and the post fails. Either way no event is accepted
// without its post's record being durable.
func (s *Service) PostExternal(ctx context.Context, by identity.Principal, body []byte) (map[string]PostResult, error) {
	if !by.HasScope(identity.ScopeEventProducer) {
		return nil, s.record(ctx, by.TenantID, ActionPost, fault.E(fault.Forbidden, "the access token lacks scope "+identity.ScopeEventProducer), nil)
	}
	named, err := parsePost(body)
	if err != nil {
		return nil, s.record(ctx, by.TenantID, ActionPost, err, nil)
	}
	now := s.now()
	names := make([]string, 0, len(named))
	for name := range named {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make(map[string]PostResult, len(named))
	origin := tracing.TraceParent(ctx)
	accepted := make([]*Event, 0, len(named))
	acceptedNames := make([]string, 0, len(named))
	for _, name := range names {
		ev, errs := ValidateExternal(named[name], now)
		if len(errs) > 0 {
			out[name] = PostResult{Status: StatusRejected, Errors: errs}
			continue
		}
		ev.TenantID, ev.TraceParent = by.TenantID, origin
		accepted = append(accepted, &ev)
		acceptedNames = append(acceptedNames, name)
	}
	meta := map[string]any{"accepted": len(accepted), "rejected": len(named) - len(accepted)}
	recorded := false
	if len(accepted) > 0 {
		var rec *audit.Record
		if s.builder != nil {
			r, err := s.builder.Build(ctx, audit.Entry{TenantID: by.TenantID, Source: audit.SourceEvents, Action: ActionPost, Meta: meta})
			if err != nil {
				return nil, audit.Unavailable(err)
			}
			rec = r
		}
		// A post sent with an Idempotency-Key keeps its answer in the
		// events' own transaction (the store renders it once the ids are
		// assigned), so a retry after a crash between the commit and the
		// answer is given the answer rather than refused.
		idempotency.PrepareAnswer(ctx, func() any { return postResults(out, accepted, acceptedNames) })
		if err := s.in.append(ctx, accepted, rec); err != nil {
			return nil, s.record(ctx, by.TenantID, ActionPost, err, meta)
		}
		recorded = rec != nil
	}
	out = postResults(out, accepted, acceptedNames)
	if !recorded {
		if err := s.record(ctx, by.TenantID, ActionPost, nil, meta); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// postResults is a post's answer: the rejected events' results in
// rejected, and each accepted event's id (set once the store appended it).
func postResults(rejected map[string]PostResult, accepted []*Event, names []string) map[string]PostResult {
	out := make(map[string]PostResult, len(rejected)+len(accepted))
	for name, r := range rejected {
		out[name] = r
	}
	for i, ev := range accepted {
		out[names[i]] = PostResult{Status: StatusAccepted, ID: ev.ID}
	}
	return out
}

// parsePost splits a post body into its named events.
func parsePost(body []byte) (map[string]json.RawMessage, error) {
	if len(body) > MaxPostBytes {
		return nil, fault.E(fault.TooLarge, fault.Field("body"), fmt.Sprintf("the body is larger than %d bytes", MaxPostBytes))
	}
	var named map[string]json.RawMessage
	if err := json.Unmarshal(body, &named); err != nil || named == nil {
		return nil, fault.E(fault.Invalid, fault.Field("body"), "the body must be a JSON object mapping names to events", err)
	}
	switch {
	case len(named) == 0:
		return nil, fault.E(fault.Invalid, fault.Field("body"), "the body holds no event")
	case len(named) > MaxPostEvents:
		return nil, fault.E(fault.Invalid, fault.Field("body"), fmt.Sprintf("a post holds at most %d events", MaxPostEvents))
	}
	return named, nil
}

// QueryRequest is a query of the caller's tenant log.
type QueryRequest struct {
	UserID string // keeps the events of this user (end_user.id or authenticated_user.id)
	Filter string // SCIM filter, see package filter; "" keeps every event
	Page   int    // from 1
	Size   int    // 1..MaxSize
}

// QueryPage is one page of a query, newest event first.
type QueryPage struct {
	Page, Size int
	// Total counts the matching events, exactly when fewer than
	// Page*Size + CountAhead match, else it is that bound.
	Total   int
	Results []Event
}

// Query returns a page of the caller's tenant events, newest first. The
// caller needs scope event:event:consumer (fault.Forbidden) and may read
// any user's events. Page must be 1..MaxPage and Size 1..MaxSize; a filter
// that does not parse is fault.Invalid for field "filter" whose message
// gives the position of the error (see filter.SyntaxError); each of these
// names its field (fault.FieldOf).
func (s *Service) Query(ctx context.Context, by identity.Principal, q QueryRequest) (QueryPage, error) {
	meta := map[string]any{"page": q.Page, "size": q.Size}
	if q.UserID != "" {
		meta["user_id"] = q.UserID
	}
	if q.Filter != "" {
		meta["filter"] = q.Filter
	}
	if !by.HasScope(identity.ScopeEventConsumer) {
		return QueryPage{}, s.record(ctx, by.TenantID, ActionQuery, fault.E(fault.Forbidden, "the access token lacks scope "+identity.ScopeEventConsumer), meta)
	}
	sq, err := q.compile()
	if err != nil {
		return QueryPage{}, s.record(ctx, by.TenantID, ActionQuery, err, meta)
	}
	evs, total, err := s.cfg.Store.QueryEvents(ctx, by.TenantID, sq)
	if err != nil {
		return QueryPage{}, s.record(ctx, by.TenantID, ActionQuery, err, meta)
	}
	meta["results"] = len(evs)
	if err := s.record(ctx, by.TenantID, ActionQuery, nil, meta); err != nil {
		return QueryPage{}, err
	}
	if evs == nil {
		evs = []Event{}
	}
	return QueryPage{Page: q.Page, Size: q.Size, Total: total, Results: evs}, nil
}

// compile checks the request's limits and parses its filter.
func (q QueryRequest) compile() (Query, error) {
	switch {
	case q.Page < 1:
		return Query{}, fault.E(fault.Invalid, fault.Field("page"), "page must be 1 or more")
	case q.Page > MaxPage:
		return Query{}, fault.E(fault.Invalid, fault.Field("page"), fmt.Sprintf("page must be at most %d", MaxPage))
	case q.Size < 1 || q.Size > MaxSize:
		return Query{}, fault.E(fault.Invalid, fault.Field("size"), fmt.Sprintf("size must be between 1 and %d", MaxSize))
	case len(q.UserID) > maxUserIDLength:
		return Query{}, fault.E(fault.Invalid, fault.Field("user_id"), fmt.Sprintf("user_id is longer than %d bytes", maxUserIDLength))
	}
	sq := Query{UserID: q.UserID, Offset: (q.Page - 1) * q.Size, Limit: q.Size}
	sq.CountLimit = sq.Offset + sq.Limit + CountAhead
	if q.Filter != "" {
		e, err := filter.Parse(q.Filter)
		if err != nil {
			return Query{}, err
		}
		sq.Filter = e
	}
	return sq, nil
}

// EmitNative appends a native event emitted by the host to a tenant's log
// and returns it as stored. raw must pass ValidateNative (else
// fault.Invalid whose cause is the FieldErrors); the tenant is trusted to
// exist — callers acting for a principal check that first.
func (s *Service) EmitNative(ctx context.Context, tenantID string, raw json.RawMessage) (Event, error) {
	if tenantID == "" {
		return Event{}, fault.E(fault.Invalid, fault.Field("tenantId"), "a tenant is required")
	}
	ev, errs := ValidateNative(raw, s.now())
	meta := map[string]any{}
	if len(errs) > 0 {
		return Event{}, s.record(ctx, tenantID, ActionEmit, FieldErrors(errs).Err(), meta)
	}
	meta["event_type_id"] = ev.TypeID
	ev.TenantID, ev.TraceParent = tenantID, tracing.TraceParent(ctx)
	if err := s.in.append(ctx, []*Event{&ev}, nil); err != nil {
		return Event{}, s.record(ctx, tenantID, ActionEmit, err, meta)
	}
	meta["id"] = ev.ID
	if err := s.record(ctx, tenantID, ActionEmit, nil, meta); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// DeleteExpired deletes every event received more than Retention ago, in
// chunks, and returns how many it deleted. On a Partitioner store it
// maintains the partitions instead: those wholly older than Retention are
// dropped, new ones created ahead.
func (s *Service) DeleteExpired(ctx context.Context) (int, error) {
	now := s.now()
	cutoff := now.Add(-s.cfg.Retention)
	if p, ok := s.cfg.Store.(Partitioner); ok {
		n, err := p.MaintainPartitions(ctx, now, cutoff)
		return int(n), err
	}
	total := 0
	for {
		n, err := s.cfg.Store.DeleteEventsBefore(ctx, "", cutoff, deleteChunk)
		total += n
		if err != nil || n < deleteChunk {
			return total, err
		}
	}
}

// Run runs the retention clean-up every CleanupEvery (on the configured
// clock) until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	for {
		n, err := s.DeleteExpired(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Error("events: retention clean-up failed", "err", err)
		case n > 0:
			s.log.Info("events: retention clean-up", "deleted", n)
		}
		if !clock.Sleep(s.cfg.Clock, s.cfg.CleanupEvery, ctx.Done()) {
			return nil
		}
	}
}

// ErrClosed is the cause of the fault.Unavailable error of an append after
// Close.
var ErrClosed = errors.New("events: service closed")
