package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/ids"
	"github.com/latchkey/latchkey/internal/tracing"
)

// Limits of the service. They are part of the API (docs/notifications.md).
const (
	// DefaultPageSize is notification_page_size when the create request
	// gives none; MaxPageSize the largest accepted.
	DefaultPageSize = 100
	MaxPageSize     = 100
	// MaxEventTypes is the most event_type_ids one subscription names.
	MaxEventTypes = 100
	// MaxIDLength bounds subscription and client ids.
	MaxIDLength = 256
	// MaxCreateBytes is the largest accepted create body.
	MaxCreateBytes = 64 << 10
	// MaxWait is the longest a retrieval waits for notifications.
	MaxWait = 30 * time.Second
	// RemainingCountLimit bounds number_of_remaining_notifications: the
	// count walks the (tenant, type, seq) index and stops there, so
	// reading a subscription never scans a large backlog. A value equal to
	// it means "at least that many".
	RemainingCountLimit = 10000
	// DefaultRetention is the retention of a tenant whose setting is
	// unset (0): the specification's 6 hours.
	DefaultRetention = 6 * time.Hour
	// maxTypeIDDigits matches the events API's bound on external ids.
	maxTypeIDDigits = 18
	// DefaultAckDeadline is ack_deadline_seconds when the create request
	// gives none; MinAckDeadline and MaxAckDeadline bound it.
	DefaultAckDeadline = 30 * time.Second
	MinAckDeadline     = time.Second
	MaxAckDeadline     = 600 * time.Second
	// MaxAckBytes is the largest accepted confirmation body.
	MaxAckBytes = 1 << 10
)

// Audit actions of the notification area (source latchkey-notification).
const (
	ActionCreate   = "notification.subscription.create"
	ActionGet      = "notification.subscription.get"
	ActionDelete   = "notification.subscription.delete"
	ActionRetrieve = "notification.retrieve"
	// ActionAck is a confirmation of a page of an acknowledged retrieval
	// (whose handing-out is an ActionRetrieve with Meta "ack" true).
	ActionAck = "notification.ack"
)

// Unsubscribed is the code of the unsubscribe response.
const Unsubscribed = "UNSUBSCRIBED"

// IDPattern is the pattern of subscription ids and client ids.
var IDPattern = regexp.MustCompile(`^[\p{L}0-9\._\-]+$`)

// Tenants looks up a tenant's settings (identity.Store implements it).
type Tenants interface {
	GetTenant(ctx context.Context, id string) (identity.Tenant, error)
}

// Waker hands out channels closed when a tenant's event log may have
// grown (events.Service implements it); long-polling retrievals wait on
// them.
type Waker interface {
	Appended(tenantID string) <-chan struct{}
}

// Config configures a Service. Store, Tenants, Audit and Clock are
// required; without Waker, retrievals never wait.
type Config struct {
	Store   Store
	Tenants Tenants
	Audit   audit.Sink
	Clock   clock.Clock
	Waker   Waker
	Logger  *slog.Logger
}

// Service is area D.
type Service struct {
	cfg      Config
	stop     chan struct{} // closed by StopWaiting
	stopOnce sync.Once

	waiting, retrievals, delivered atomic.Int64 // see Stats
	observer                       RetrievalObserver
}

// RetrievalObserver is told how many notifications each committed
// retrieval handed out (metrics.Notification implements it).
type RetrievalObserver interface {
	Retrieved(n int)
}

// ObserveRetrievals makes o see every committed retrieval from now on;
// call it before the service is used.
func (s *Service) ObserveRetrievals(o RetrievalObserver) { s.observer = o }

// Stats are counters of a Service since it was made, for metrics.
type Stats struct {
	Waiting    int64 // retrievals waiting now (long polling)
	Retrievals int64 // retrievals committed
	Delivered  int64 // notifications returned by them
}

// Stats returns the service's counters.
func (s *Service) Stats() Stats {
	return Stats{Waiting: s.waiting.Load(), Retrievals: s.retrievals.Load(), Delivered: s.delivered.Load()}
}

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, stop: make(chan struct{})}
}

// StopWaiting ends the waits of long-polling retrievals, now and from now
// on: each answers at once with what there is. A server calls it when it
// starts shutting down, so that waiting clients do not hold the shutdown
// for up to MaxWait.
func (s *Service) StopWaiting() { s.stopOnce.Do(func() { close(s.stop) }) }

// View is a subscription with its dynamic status.
type View struct {
	Subscription
	// Remaining is number_of_remaining_notifications, counted up to
	// RemainingCountLimit.
	Remaining int
}

// Page is the result of one retrieval.
type Page struct {
	Page    int64          // the subscription's retrieval count, this one included
	Results []events.Event // oldest first; Size is len(Results)
}

// CreateRequest is the body of a create request.
type CreateRequest struct {
	EventTypeIDs []string `json:"event_type_ids"`
	ClientID     string   `json:"client_id"`
	// PageSize is notification_page_size, optional (beyond the
	// specification): 1..MaxPageSize, default DefaultPageSize.
	PageSize *int `json:"notification_page_size"`
	// AckDeadlineSeconds is ack_deadline_seconds, optional (beyond the
	// specification): how long a page of an acknowledged retrieval stays
	// leased, MinAckDeadline..MaxAckDeadline in seconds, default
	// DefaultAckDeadline.
	AckDeadlineSeconds *int `json:"ack_deadline_seconds"`
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourceNotification, Action: action, Err: err, Meta: meta})
}

func needScope(by identity.Principal, scope string) error {
	if !by.HasScope(scope) {
		return fault.E(fault.Forbidden, "the access token lacks scope "+scope)
	}
	return nil
}

// ParseCreate decodes and checks a create body: a JSON object with
// event_type_ids (required, 1..MaxEventTypes distinct event type ids: three
// digits, or an integer of events.MinExternalTypeID or more) and client_id
// (required, IDPattern, at most MaxIDLength bytes). Unknown members are
// ignored. Every failure is fault.Invalid naming its field.
func ParseCreate(body []byte) (CreateRequest, error) {
	var req CreateRequest
	if len(body) > MaxCreateBytes {
		return req, fault.E(fault.TooLarge, fault.Field("body"), fmt.Sprintf("the body is larger than %d bytes", MaxCreateBytes))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return req, fault.E(fault.Invalid, fault.Field("body"), "the body must be a JSON object")
	}
	types, ok := raw["event_type_ids"]
	if !ok || bytes.Equal(types, []byte("null")) {
		return req, fault.E(fault.Invalid, fault.Field("event_type_ids"), "event_type_ids is required")
	}
	if err := json.Unmarshal(types, &req.EventTypeIDs); err != nil {
		return req, fault.E(fault.Invalid, fault.Field("event_type_ids"), "event_type_ids must be an array of strings")
	}
	switch {
	case len(req.EventTypeIDs) == 0:
		return req, fault.E(fault.Invalid, fault.Field("event_type_ids"), "event_type_ids must not be empty")
	case len(req.EventTypeIDs) > MaxEventTypes:
		return req, fault.E(fault.Invalid, fault.Field("event_type_ids"), fmt.Sprintf("event_type_ids holds at most %d ids", MaxEventTypes))
	}
	seen := make(map[string]bool, len(req.EventTypeIDs))
	for _, t := range req.EventTypeIDs {
		if !validTypeID(t) {
			return req, fault.E(fault.Invalid, fault.Field("event_type_ids"), fmt.Sprintf("event_type_ids holds %q, which is not an event type id (a native type of the catalogue, or an integer of %d or more)", t, events.MinExternalTypeID))
		}
		if seen[t] {
			return req, fault.E(fault.Invalid, fault.Field("event_type_ids"), fmt.Sprintf("event_type_ids must be unique: %q is given twice", t))
		}
		seen[t] = true
	}
	cid, ok := raw["client_id"]
	if !ok || bytes.Equal(cid, []byte("null")) {
		return req, fault.E(fault.Invalid, fault.Field("client_id"), "client_id is required")
	}
	if err := json.Unmarshal(cid, &req.ClientID); err != nil {
		return req, fault.E(fault.Invalid, fault.Field("client_id"), "client_id must be a string")
	}
	if err := checkID("client_id", req.ClientID); err != nil {
		return req, err
	}
	if ps, ok := raw["notification_page_size"]; ok && !bytes.Equal(ps, []byte("null")) {
		var n int
		if err := json.Unmarshal(ps, &n); err != nil || n < 1 || n > MaxPageSize {
			return req, fault.E(fault.Invalid, fault.Field("notification_page_size"), fmt.Sprintf("notification_page_size must be an integer from 1 to %d", MaxPageSize))
		}
		req.PageSize = &n
	}
	if ad, ok := raw["ack_deadline_seconds"]; ok && !bytes.Equal(ad, []byte("null")) {
		var n int
		lo, hi := int(MinAckDeadline/time.Second), int(MaxAckDeadline/time.Second)
		if err := json.Unmarshal(ad, &n); err != nil || n < lo || n > hi {
			return req, fault.E(fault.Invalid, fault.Field("ack_deadline_seconds"), fmt.Sprintf("ack_deadline_seconds must be an integer from %d to %d", lo, hi))
		}
		req.AckDeadlineSeconds = &n
	}
	return req, nil
}

// validTypeID accepts the event type ids the log can hold: a native type
// of the catalogue (three digits, not the meta-schema's 000) or an
// external id without leading zeros, at least events.MinExternalTypeID.
// Event-stream subscriptions check their eventTypes the same way.
func validTypeID(t string) bool {
	if t == "" || len(t) > maxTypeIDDigits {
		return false
	}
	for _, c := range []byte(t) {
		if c < '0' || c > '9' {
			return false
		}
	}
	if len(t) == 3 {
		_, ok := events.LookupType(t)
		return ok
	}
	n, err := strconv.ParseInt(t, 10, 64)
	return err == nil && t[0] != '0' && n >= events.MinExternalTypeID
}

// checkID checks a subscription or client id: IDPattern, at most
// MaxIDLength bytes (fault.Invalid for field).
func checkID(field, v string) error {
	switch {
	case v == "":
		return fault.E(fault.Invalid, fault.Field(field), field+" is required")
	case len(v) > MaxIDLength:
		return fault.E(fault.Invalid, fault.Field(field), fmt.Sprintf("%s is longer than %d bytes", field, MaxIDLength))
	case !IDPattern.MatchString(v):
		return fault.E(fault.Invalid, fault.Field(field), field+` must match ^[\p{L}0-9\._\-]+$`)
	}
	return nil
}

// Create creates a subscription in the caller's tenant from a create body
// (see ParseCreate). The caller needs scope
// notification:consent:administrator (fault.Forbidden). The subscription
// sees the events appended after Create returns, never earlier ones.
func (s *Service) Create(ctx context.Context, by identity.Principal, body []byte) (View, error) {
	if err := needScope(by, identity.ScopeNotificationAdmin); err != nil {
		return View{}, s.record(ctx, by.TenantID, ActionCreate, err, nil)
	}
	req, err := ParseCreate(body)
	if err != nil {
		return View{}, s.record(ctx, by.TenantID, ActionCreate, err, nil)
	}
	sub := Subscription{
		ID: ids.NewGUID(), TenantID: by.TenantID, ClientID: req.ClientID, EventTypeIDs: req.EventTypeIDs,
		SubscribedBy: subscriber(by), Created: s.now(), PageSize: DefaultPageSize, AckDeadline: DefaultAckDeadline,
	}
	if req.PageSize != nil {
		sub.PageSize = *req.PageSize
	}
	if req.AckDeadlineSeconds != nil {
		sub.AckDeadline = time.Duration(*req.AckDeadlineSeconds) * time.Second
	}
	meta := map[string]any{"subscription_id": sub.ID, "client_id": sub.ClientID, "event_type_ids": sub.EventTypeIDs}
	if err := s.cfg.Store.CreateNotifySubscription(ctx, &sub); err != nil {
		return View{}, s.record(ctx, by.TenantID, ActionCreate, err, meta)
	}
	if err := s.record(ctx, by.TenantID, ActionCreate, nil, meta); err != nil {
		return View{}, err
	}
	return View{Subscription: sub}, nil
}

// subscriber names who created a subscription: the client, else the user.
func subscriber(by identity.Principal) string {
	if by.ClientID != "" {
		return by.ClientID
	}
	return by.UserID
}

// Get returns a subscription of the caller's tenant with its status. The
// caller needs scope notification:consent:consumer and must be the
// subscription's client (fault.Forbidden for either); an id that does not
// match IDPattern is fault.Invalid, an unknown one fault.NotFound.
func (s *Service) Get(ctx context.Context, by identity.Principal, id string) (View, error) {
	meta := map[string]any{"subscription_id": auditID(id)}
	v, err := s.get(ctx, by, id)
	return v, s.record(ctx, by.TenantID, ActionGet, err, meta)
}

func (s *Service) get(ctx context.Context, by identity.Principal, id string) (View, error) {
	if err := needScope(by, identity.ScopeNotificationConsumer); err != nil {
		return View{}, err
	}
	if err := checkID("id", id); err != nil {
		return View{}, err
	}
	sub, err := s.cfg.Store.GetNotifySubscription(ctx, by.TenantID, id)
	if err != nil {
		return View{}, notFound(err)
	}
	if err := sameClient(by, sub); err != nil {
		return View{}, err
	}
	notBefore, err := s.notBefore(ctx, by.TenantID)
	if err != nil {
		return View{}, err
	}
	// A lapsed page's notifications count: the next retrieval hands them
	// out again.
	n, err := s.cfg.Store.CountNotifications(ctx, sub, notBefore, s.now(), RemainingCountLimit)
	if err != nil {
		return View{}, err
	}
	return View{Subscription: sub, Remaining: n}, nil
}

// auditID is an id as the audit record keeps it: cut to MaxIDLength
// bytes, so a refused over-long id cannot swell the audit log.
func auditID(id string) string {
	if len(id) > MaxIDLength {
		return id[:MaxIDLength]
	}
	return id
}

const msgOtherClient = "the access token's client_id is not the subscription's client_id"

func sameClient(by identity.Principal, sub Subscription) error {
	if by.ClientID != sub.ClientID {
		return fault.E(fault.Forbidden, msgOtherClient)
	}
	return nil
}

// notFound gives the store's NotFound and Forbidden the service's messages.
func notFound(err error) error {
	switch fault.KindOf(err) {
	case fault.NotFound:
		return fault.E(fault.NotFound, "the subscription was not found", err)
	case fault.Forbidden:
		return fault.E(fault.Forbidden, msgOtherClient, err)
	}
	return err
}

// Delete deletes (unsubscribes) a subscription of the caller's tenant. The
// caller needs scope notification:consent:administrator (fault.Forbidden);
// a bad id is fault.Invalid, an unknown one fault.NotFound.
func (s *Service) Delete(ctx context.Context, by identity.Principal, id string) error {
	meta := map[string]any{"subscription_id": auditID(id)}
	err := needScope(by, identity.ScopeNotificationAdmin)
	if err == nil {
		err = checkID("id", id)
	}
	if err == nil {
		err = notFound(s.cfg.Store.DeleteNotifySubscription(ctx, by.TenantID, id))
	}
	return s.record(ctx, by.TenantID, ActionDelete, err, meta)
}

// notBefore is the oldest ReceivedAt the tenant's retention keeps.
func (s *Service) notBefore(ctx context.Context, tenantID string) (time.Time, error) {
	t, err := s.cfg.Tenants.GetTenant(ctx, tenantID)
	if err != nil {
		return time.Time{}, err
	}
	ret := DefaultRetention
	if r := t.Settings.NotificationRetentionSeconds; r > 0 {
		ret = time.Duration(r) * time.Second
	}
	return s.now().Add(-ret), nil
}

// Retrieve returns the next page of a subscription's notifications and
// consumes them: they are never returned again, to any poller. The next
// page is a page of RetrieveAcked whose lease lapsed, when there is one
// (with its page number and results; it is then consumed, its lease
// ended), else the next notifications. The caller
// needs scope notification:consent:consumer and must be the subscription's
// client (fault.Forbidden); a bad id is fault.Invalid, an unknown one
// fault.NotFound; wait must be 0..MaxWait (fault.Invalid).
//
// With wait > 0 and nothing to return, Retrieve waits up to wait for
// matching events (woken by the Waker, so without spinning), then consumes
// once: a retrieval that waited counts as one. It may still return an
// empty page when another poller took the events first.
//
// The audit record of a successful retrieval is written in the
// retrieval's transaction when the Audit sink is an audit.Builder (the
// platform's is): one commit makes both durable, and a crash between the
// commit and the answer, the only moment a page can be lost (see
// docs/notifications.md), is as short as it can be.
func (s *Service) Retrieve(ctx context.Context, by identity.Principal, id string, wait time.Duration) (Page, error) {
	return s.retrieveRecorded(ctx, by, id, wait, false)
}

// RetrieveAcked is an acknowledged retrieval (beyond the specification):
// as Retrieve, but the page is leased to the caller rather than consumed.
// Unless confirmed with Ack within the subscription's AckDeadline, it is
// handed out again, with the same Page and Results, to the next retrieval
// of any poller, acknowledged (leased again) or not (consumed); a lapsed
// page goes out before new notifications. A page with no results needs no
// confirmation. A long-polling retrieval of either kind also returns when
// a leased page lapses.
//
// A client that loses an answer (its connection, or the server, died after
// the commit) gets the page again once the deadline passes: no
// notification is lost, and one may be seen twice.
func (s *Service) RetrieveAcked(ctx context.Context, by identity.Principal, id string, wait time.Duration) (Page, error) {
	return s.retrieveRecorded(ctx, by, id, wait, true)
}

func (s *Service) retrieveRecorded(ctx context.Context, by identity.Principal, id string, wait time.Duration, ack bool) (Page, error) {
	meta := map[string]any{"subscription_id": auditID(id)}
	p, recorded, err := s.retrieve(ctx, by, id, wait, ack, meta)
	if recorded {
		return p, nil
	}
	if err == nil {
		meta["results"] = len(p.Results)
		meta["page"] = p.Page
		if ack {
			meta["ack"] = true
		}
	}
	return p, s.record(ctx, by.TenantID, ActionRetrieve, err, meta)
}

// Ack confirms page of an acknowledged retrieval: it is never handed out
// again. The caller needs scope notification:consent:consumer and must be
// the subscription's client (fault.Forbidden); a bad id is fault.Invalid,
// an unknown subscription or a page it never handed out fault.NotFound
// (page must be 1 or more: fault.Invalid). Confirming a page again, a page
// without results, or one handed out by Retrieve is nil. A page whose
// lease lapsed is fault.Conflict: it may be on its way to another poller.
func (s *Service) Ack(ctx context.Context, by identity.Principal, id string, page int64) error {
	meta := map[string]any{"subscription_id": auditID(id), "page": page}
	err := needScope(by, identity.ScopeNotificationConsumer)
	if err == nil {
		err = checkID("id", id)
	}
	if err == nil && page < 1 {
		err = fault.E(fault.Invalid, fault.Field("page"), "page must be an integer of 1 or more")
	}
	if err == nil {
		err = s.cfg.Store.AckNotifications(ctx, by.TenantID, id, by.ClientID, page, s.now())
		switch fault.KindOf(err) {
		case fault.Conflict:
			err = fault.E(fault.Conflict, "the page's lease lapsed before this confirmation; it is handed out again", err)
		case fault.NotFound:
			if fe := (*fault.Error)(nil); errors.As(err, &fe) && fe.Field == "page" {
				err = fault.E(fault.NotFound, fault.Field("page"), fmt.Sprintf("the subscription has not handed out page %d", page), err)
			} else {
				err = notFound(err)
			}
		default:
			err = notFound(err)
		}
	}
	return s.record(ctx, by.TenantID, ActionAck, err, meta)
}

// ParseAck decodes a confirmation body: a JSON object whose page is an
// integer of 1 or more. Unknown members are ignored; every failure is
// fault.Invalid (fault.TooLarge past MaxAckBytes).
func ParseAck(body []byte) (int64, error) {
	if len(body) > MaxAckBytes {
		return 0, fault.E(fault.TooLarge, fault.Field("body"), fmt.Sprintf("the body is larger than %d bytes", MaxAckBytes))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return 0, fault.E(fault.Invalid, fault.Field("body"), "the body must be a JSON object")
	}
	p, ok := raw["page"]
	if !ok || bytes.Equal(p, []byte("null")) {
		return 0, fault.E(fault.Invalid, fault.Field("page"), "page is required")
	}
	var n int64
	if err := json.Unmarshal(p, &n); err != nil || n < 1 {
		return 0, fault.E(fault.Invalid, fault.Field("page"), "page must be an integer of 1 or more")
	}
	return n, nil
}

// retrieve does Retrieve and RetrieveAcked; recorded reports that its
// audit record was stored with it.
func (s *Service) retrieve(ctx context.Context, by identity.Principal, id string, wait time.Duration, ack bool, meta map[string]any) (p Page, recorded bool, err error) {
	if err := needScope(by, identity.ScopeNotificationConsumer); err != nil {
		return Page{}, false, err
	}
	if err := checkID("id", id); err != nil {
		return Page{}, false, err
	}
	if wait < 0 || wait > MaxWait {
		return Page{}, false, fault.E(fault.Invalid, fault.Field("wait"), fmt.Sprintf("wait must be from 0 to %d seconds", int(MaxWait/time.Second)))
	}
	if wait > 0 && s.cfg.Waker != nil {
		if err := s.await(ctx, by, id, wait); err != nil {
			return Page{}, false, err
		}
	}
	notBefore, err := s.notBefore(ctx, by.TenantID)
	if err != nil {
		return Page{}, false, err
	}
	var rec *audit.Record
	if b, ok := s.cfg.Audit.(audit.Builder); ok && by.TenantID != "" {
		if rec, err = b.Build(ctx, audit.Entry{TenantID: by.TenantID, Source: audit.SourceNotification, Action: ActionRetrieve, Meta: meta}); err != nil {
			return Page{}, false, audit.Unavailable(err)
		}
	}
	var (
		page int64
		evs  []events.Event
	)
	if ack {
		_, page, evs, err = s.cfg.Store.LeaseNotifications(ctx, by.TenantID, id, by.ClientID, notBefore, s.now(), rec)
	} else {
		_, page, evs, err = s.cfg.Store.ConsumeNotifications(ctx, by.TenantID, id, by.ClientID, notBefore, s.now(), rec)
	}
	if err != nil {
		return Page{}, false, notFound(err)
	}
	if evs == nil {
		evs = []events.Event{}
	}
	s.retrievals.Add(1)
	s.delivered.Add(int64(len(evs)))
	if s.observer != nil {
		s.observer.Retrieved(len(evs))
	}
	return Page{Page: page, Results: evs}, rec != nil, nil
}

// await returns once the subscription has a notification (a new one, or
// one of a leased page that lapsed: every retrieval takes those), wait
// has passed
// on the clock (fault.Unavailable when ctx ends first). It reads the
// subscription without consuming; the wake-up channel is taken before
// each look, so an append between the look and the wait is not missed.
//
// Under a recording span the wait is a span (notify.wait) whose
// latchkey.notify.outcome says how it ended (found, timeout, stopped,
// cancelled, error) and whose events mark each wake-up.
func (s *Service) await(ctx context.Context, by identity.Principal, id string, wait time.Duration) error {
	ctx, span := tracing.Start(ctx, "notify.wait")
	defer span.End()
	outcome := func(o string) {
		if span.IsRecording() {
			span.SetAttributes(attribute.String("latchkey.notify.outcome", o))
		}
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.Float64("latchkey.notify.wait_seconds", wait.Seconds()))
	}
	timer := s.cfg.Clock.NewTimer(wait)
	defer timer.Stop()
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	for {
		woken := s.cfg.Waker.Appended(by.TenantID)
		sub, err := s.cfg.Store.GetNotifySubscription(ctx, by.TenantID, id)
		if err != nil {
			return notFound(err)
		}
		if err := sameClient(by, sub); err != nil {
			return err
		}
		notBefore, err := s.notBefore(ctx, by.TenantID)
		if err != nil {
			return err
		}
		n, err := s.cfg.Store.CountNotifications(ctx, sub, notBefore, s.now(), 1)
		if err != nil {
			outcome("error")
			return err
		}
		if n > 0 {
			outcome("found")
			return nil
		}
		// A lease that lapses during the wait makes its page due to this
		// retrieval, whichever its kind: no append wakes the wait then, a
		// timer does.
		var (
			lapse     <-chan time.Time
			stopLapse = func() bool { return false }
		)
		until, err := s.cfg.Store.NextNotifyLapse(ctx, by.TenantID, id)
		if err != nil {
			outcome("error")
			return err
		}
		if !until.IsZero() {
			if !until.After(s.now()) {
				outcome("found")
				return nil
			}
			lt := s.cfg.Clock.NewTimer(until.Sub(s.now()))
			lapse, stopLapse = lt.C(), lt.Stop
		}
		end, err := true, error(nil)
		select {
		case <-woken:
			span.AddEvent("woken")
			end = false
		case <-lapse:
			span.AddEvent("lapsed")
			outcome("found")
		case <-timer.C():
			outcome("timeout")
		case <-s.stop:
			outcome("stopped")
		case <-ctx.Done():
			// The client is gone: consuming now would lose the page.
			outcome("cancelled")
			err = fault.E(fault.Unavailable, "request cancelled", ctx.Err())
		}
		stopLapse()
		if end {
			return err
		}
	}
}
