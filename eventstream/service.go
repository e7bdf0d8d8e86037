package eventstream

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/ids"
)

// Audit actions of the event-stream area (source latchkey-eventstream).
const (
	ActionCreate              = "eventstream.subscription.create"
	ActionList                = "eventstream.subscription.list"
	ActionGet                 = "eventstream.subscription.get"
	ActionUpdate              = "eventstream.subscription.update"
	ActionDelete              = "eventstream.subscription.delete"
	ActionDirectorySyncCreate = "eventstream.directorysync.create"
	ActionDirectorySyncDelete = "eventstream.directorysync.delete"
	ActionDeadLetters         = "eventstream.deadletters.list"
	ActionRedeliver           = "eventstream.deadletters.redeliver"
	ActionDeadLetter          = "eventstream.delivery.deadletter"
	ActionPause               = "eventstream.delivery.pause"
)

// MaxQueuedCount bounds the count of undelivered events shown in a
// subscription: counting further would read the whole backlog on every
// GET. A value equal to it means "at least".
const MaxQueuedCount = 1000

// EventLog is the part of the event log (events.Store) the area reads.
type EventLog interface {
	ListEventsAfter(ctx context.Context, tenantID string, afterSeq int64, typeIDs []string, notBefore time.Time, limit int) ([]events.Event, error)
	QueryEvents(ctx context.Context, tenantID string, q events.Query) ([]events.Event, int, error)
}

// Sealer seals secrets at rest (seal.Sealer).
type Sealer interface {
	Seal(purpose string, plaintext []byte) []byte
	Open(purpose string, sealed []byte) ([]byte, error)
}

// Config configures a Service. Store, Events, Sealer, Audit and Clock are
// required.
type Config struct {
	Store  Store
	Events EventLog
	Sealer Sealer
	Audit  audit.Sink
	Clock  clock.Clock
	Logger *slog.Logger
	// Guard refuses endpoints on private addresses; the zero value
	// refuses them and resolves names with the system resolver.
	Guard Guard
}

// Service manages subscriptions.
type Service struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	changed chan struct{} // closed by notifyChange; see changes
}

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: cfg.Logger}
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	if tenantID == "" {
		return err
	}
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourceEventStream, Action: action, Err: err, Meta: meta})
}

func checkScope(by identity.Principal) error {
	if !by.HasScope(identity.ScopeEventStreamAdmin) {
		return fault.E(fault.Forbidden, "the access token lacks scope "+identity.ScopeEventStreamAdmin)
	}
	return nil
}

// sealPurpose binds a sealed secret to its subscription, so a sealed value
// copied to another row does not open.
func sealPurpose(tenantID, id string) string { return "eventstream-auth:" + tenantID + "/" + id }

// View is a subscription as shown to its tenant: no secret.
type View struct {
	Subscription
	// Queued counts matching events not yet delivered plus requeued dead
	// letters, up to MaxQueuedCount.
	Queued int
}

// Page is a page of a listing; Next is the cursor of the next page, "" at
// the end.
type Page struct {
	Items []View
	Next  string
}

// Create adds a push subscription to the caller's tenant.
func (s *Service) Create(ctx context.Context, by identity.Principal, in Input) (View, error) {
	meta := map[string]any{}
	sub, err := s.create(ctx, by, in, meta)
	if err == nil {
		s.notifyChange()
	}
	if err := s.record(ctx, by.TenantID, ActionCreate, err, meta); err != nil {
		return View{}, err
	}
	return s.view(ctx, sub)
}

func (s *Service) create(ctx context.Context, by identity.Principal, in Input, meta map[string]any) (Subscription, error) {
	if err := checkScope(by); err != nil {
		return Subscription{}, err
	}
	if in.Endpoint == nil {
		return Subscription{}, invalid("endpoint", "endpoint is required")
	}
	meta["endpoint"] = truncate(*in.Endpoint, 200)
	if err := s.cfg.Guard.CheckEndpoint(ctx, "endpoint", *in.Endpoint); err != nil {
		return Subscription{}, err
	}
	types, err := checkEventTypes(in.EventTypes)
	if err != nil {
		return Subscription{}, err
	}
	now := s.now()
	sub := Subscription{
		TenantID: by.TenantID, ID: ids.NewGUID(), Kind: KindStream, Endpoint: *in.Endpoint, EventTypes: types,
		MaxPerSecond: DefaultMaxPerSecond, NumberOfRetries: DefaultNumberOfRetries, CreatedAt: now, UpdatedAt: now,
	}
	if in.ID != nil || in.SubscriptionID != nil {
		return Subscription{}, invalid("id", "the id is assigned by the service")
	}
	if err := applyLimits(&sub, in); err != nil {
		return Subscription{}, err
	}
	if err := s.applyAuth(&sub, in.Auth); err != nil {
		return Subscription{}, err
	}
	if sub.Cursor, sub.CursorAt, err = s.tail(ctx, by.TenantID); err != nil {
		return Subscription{}, err
	}
	meta["id"] = sub.ID
	meta["eventTypes"] = types
	return sub, s.cfg.Store.CreateSubscription(ctx, sub)
}

func applyLimits(sub *Subscription, in Input) error {
	if in.MaxPerSecond != nil {
		if err := checkRange("maxPerSecond", *in.MaxPerSecond, MinMaxPerSecond, MaxMaxPerSecond); err != nil {
			return err
		}
		sub.MaxPerSecond = *in.MaxPerSecond
	}
	if in.NumberOfRetries != nil {
		if err := checkRange("numberOfRetries", *in.NumberOfRetries, MinNumberOfRetries, MaxNumberOfRetries); err != nil {
			return err
		}
		sub.NumberOfRetries = *in.NumberOfRetries
	}
	return nil
}

func (s *Service) applyAuth(sub *Subscription, a *AuthInput) error {
	typ, user, secret, err := checkAuth(a)
	if err != nil {
		return err
	}
	sub.Auth = Auth{Type: typ, Username: user}
	if secret != nil {
		sub.Auth.Sealed = s.cfg.Sealer.Seal(sealPurpose(sub.TenantID, sub.ID), secret)
	}
	return nil
}

// tail returns the Seq and ReceivedAt of the tenant's newest event (0 and
// the zero time when it has none): a new subscription delivers the events
// appended after it was created. The ReceivedAt is the new cursor's
// CursorAt: every event appended later is raised to at least the
// tenant's last ReceivedAt, which is at or after this one's.
func (s *Service) tail(ctx context.Context, tenantID string) (int64, time.Time, error) {
	evs, _, err := s.cfg.Events.QueryEvents(ctx, tenantID, events.Query{Limit: 1})
	if err != nil || len(evs) == 0 {
		return 0, time.Time{}, err
	}
	return evs[0].Seq, evs[0].ReceivedAt, nil
}

// view adds the queued count.
func (s *Service) view(ctx context.Context, sub Subscription) (View, error) {
	v := View{Subscription: sub}
	if sub.ID == "" {
		return v, nil
	}
	evs, err := s.cfg.Events.ListEventsAfter(ctx, sub.TenantID, sub.Cursor, sub.EventTypes, sub.CursorAt, MaxQueuedCount)
	if err != nil {
		return View{}, err
	}
	v.Queued = len(evs)
	if v.Queued < MaxQueuedCount {
		dl, err := s.cfg.Store.ListDeadLetters(ctx, sub.TenantID, sub.ID, "", true, MaxQueuedCount-v.Queued)
		if err != nil {
			return View{}, err
		}
		v.Queued += len(dl)
	}
	return v, nil
}

// Get returns a subscription of the caller's tenant.
func (s *Service) Get(ctx context.Context, by identity.Principal, id string) (View, error) {
	meta := map[string]any{"id": id}
	var v View
	err := checkScope(by)
	if err == nil {
		var sub Subscription
		if sub, err = s.get(ctx, by.TenantID, KindStream, id); err == nil {
			v, err = s.view(ctx, sub)
		}
	}
	if err := s.record(ctx, by.TenantID, ActionGet, err, meta); err != nil {
		return View{}, err
	}
	return v, nil
}

func (s *Service) get(ctx context.Context, tenantID, kind, id string) (Subscription, error) {
	sub, err := s.cfg.Store.GetSubscription(ctx, tenantID, id)
	if err == nil && sub.Kind != kind {
		err = fault.E(fault.NotFound, "subscription not found")
	}
	return sub, err
}

// List returns a page of the caller's push subscriptions in id order.
// cursor is the Next of the previous page ("" for the first).
func (s *Service) List(ctx context.Context, by identity.Principal, cursor string, limit int) (Page, error) {
	meta := map[string]any{"limit": limit}
	var p Page
	err := checkScope(by)
	if err == nil {
		p, err = s.list(ctx, by.TenantID, cursor, limit)
	}
	if err == nil {
		meta["results"] = len(p.Items)
	}
	if err := s.record(ctx, by.TenantID, ActionList, err, meta); err != nil {
		return Page{}, err
	}
	return p, nil
}

func (s *Service) list(ctx context.Context, tenantID, cursor string, limit int) (Page, error) {
	if limit < 1 || limit > MaxPageSize {
		return Page{}, invalid("limit", fmt.Sprintf("limit must be between 1 and %d", MaxPageSize))
	}
	after := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(b) == 0 || len(b) > 64 {
			return Page{}, invalid("cursor", "cursor is not one this service returned")
		}
		after = string(b)
	}
	subs, err := s.cfg.Store.ListSubscriptions(ctx, tenantID, KindStream, after, limit+1)
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: []View{}}
	if len(subs) > limit {
		subs = subs[:limit]
		p.Next = base64.RawURLEncoding.EncodeToString([]byte(subs[limit-1].ID))
	}
	for _, sub := range subs {
		v, err := s.view(ctx, sub)
		if err != nil {
			return Page{}, err
		}
		p.Items = append(p.Items, v)
	}
	return p, nil
}

// Update changes a subscription's eventTypes, maxPerSecond,
// numberOfRetries or auth; endpoint and id cannot change (fault.Invalid
// when given with another value). An update resumes a paused subscription.
func (s *Service) Update(ctx context.Context, by identity.Principal, id string, in Input) (View, error) {
	meta := map[string]any{"id": id}
	sub, err := s.update(ctx, by, id, in, meta)
	if err == nil {
		s.notifyChange()
	}
	if err := s.record(ctx, by.TenantID, ActionUpdate, err, meta); err != nil {
		return View{}, err
	}
	return s.view(ctx, sub)
}

func (s *Service) update(ctx context.Context, by identity.Principal, id string, in Input, meta map[string]any) (Subscription, error) {
	if err := checkScope(by); err != nil {
		return Subscription{}, err
	}
	sub, err := s.get(ctx, by.TenantID, KindStream, id)
	if err != nil {
		return Subscription{}, err
	}
	if in.Endpoint != nil && *in.Endpoint != sub.Endpoint {
		return Subscription{}, invalid("endpoint", "endpoint cannot be updated; create a new subscription")
	}
	if in.ID != nil && *in.ID != sub.ID {
		return Subscription{}, invalid("id", "id cannot be updated")
	}
	if in.SubscriptionID != nil && *in.SubscriptionID != sub.ID {
		return Subscription{}, invalid("subscriptionId", "subscriptionId cannot be updated")
	}
	if in.EventTypes != nil {
		if sub.EventTypes, err = checkEventTypes(in.EventTypes); err != nil {
			return Subscription{}, err
		}
		meta["eventTypes"] = sub.EventTypes
	}
	if err := applyLimits(&sub, in); err != nil {
		return Subscription{}, err
	}
	if in.Auth != nil {
		if err := s.applyAuth(&sub, in.Auth); err != nil {
			return Subscription{}, err
		}
		meta["authType"] = sub.Auth.Type
	}
	sub.UpdatedAt = s.now()
	if err := s.cfg.Store.UpdateSubscription(ctx, sub, true); err != nil {
		return Subscription{}, err
	}
	if sub.Status.Paused {
		sub.Status.Paused, sub.Status.PausedAt, sub.Status.FailingSince = false, time.Time{}, time.Time{}
		meta["resumed"] = true
	}
	return sub, nil
}

// Delete deletes a push subscription and its dead letters.
func (s *Service) Delete(ctx context.Context, by identity.Principal, id string) error {
	return s.delete(ctx, by, KindStream, ActionDelete, id)
}

func (s *Service) delete(ctx context.Context, by identity.Principal, kind, action, id string) error {
	err := checkScope(by)
	if err == nil {
		err = s.cfg.Store.DeleteSubscription(ctx, by.TenantID, kind, id)
	}
	return s.record(ctx, by.TenantID, action, err, map[string]any{"id": id})
}

// CreateDirectorySync adds a directory-sync subscription: the tenant's user
// and group changes selected by the mappings are pushed to connect.idpUri.
func (s *Service) CreateDirectorySync(ctx context.Context, by identity.Principal, in DirectorySyncInput) (View, error) {
	meta := map[string]any{}
	sub, err := s.createDirectorySync(ctx, by, in, meta)
	if err == nil {
		s.notifyChange()
	}
	if err := s.record(ctx, by.TenantID, ActionDirectorySyncCreate, err, meta); err != nil {
		return View{}, err
	}
	return View{Subscription: sub}, nil
}

func (s *Service) createDirectorySync(ctx context.Context, by identity.Principal, in DirectorySyncInput, meta map[string]any) (Subscription, error) {
	if err := checkScope(by); err != nil {
		return Subscription{}, err
	}
	types, err := checkGroupConfig(in)
	if err != nil {
		return Subscription{}, err
	}
	meta["idpUri"] = truncate(in.Connect.IdpURI, 200)
	if err := s.cfg.Guard.CheckEndpoint(ctx, "connect.idpUri", in.Connect.IdpURI); err != nil {
		return Subscription{}, err
	}
	now := s.now()
	conn := *in.Connect
	sub := Subscription{
		TenantID: by.TenantID, ID: ids.NewGUID(), Kind: KindDirectorySync, Endpoint: conn.IdpURI, EventTypes: types,
		MaxPerSecond: DefaultMaxPerSecond, NumberOfRetries: DefaultNumberOfRetries, Auth: Auth{Type: AuthNone},
		Connect: &conn, GroupConfig: append([]GroupMapping(nil), in.GroupConfig...), CreatedAt: now, UpdatedAt: now,
	}
	if sub.Cursor, sub.CursorAt, err = s.tail(ctx, by.TenantID); err != nil {
		return Subscription{}, err
	}
	meta["id"] = sub.ID
	return sub, s.cfg.Store.CreateSubscription(ctx, sub)
}

// DeleteDirectorySync deletes a directory-sync subscription.
func (s *Service) DeleteDirectorySync(ctx context.Context, by identity.Principal, id string) error {
	return s.delete(ctx, by, KindDirectorySync, ActionDirectorySyncDelete, id)
}

// DeadLetterPage is a page of dead letters.
type DeadLetterPage struct {
	Items []DeadLetter
	Next  string
}

// ListDeadLetters returns a page of a push subscription's dead letters.
func (s *Service) ListDeadLetters(ctx context.Context, by identity.Principal, id, cursor string, limit int) (DeadLetterPage, error) {
	meta := map[string]any{"id": id}
	var p DeadLetterPage
	err := checkScope(by)
	if err == nil {
		_, err = s.get(ctx, by.TenantID, KindStream, id)
	}
	if err == nil && (limit < 1 || limit > MaxPageSize) {
		err = invalid("limit", fmt.Sprintf("limit must be between 1 and %d", MaxPageSize))
	}
	after := ""
	if err == nil && cursor != "" {
		b, derr := base64.RawURLEncoding.DecodeString(cursor)
		if derr != nil || len(b) == 0 || len(b) > 64 {
			err = invalid("cursor", "cursor is not one this service returned")
		}
		after = string(b)
	}
	if err == nil {
		p.Items, err = s.cfg.Store.ListDeadLetters(ctx, by.TenantID, id, after, false, limit+1)
		if len(p.Items) > limit {
			p.Items = p.Items[:limit]
			p.Next = base64.RawURLEncoding.EncodeToString([]byte(p.Items[limit-1].ID))
		}
		if p.Items == nil {
			p.Items = []DeadLetter{}
		}
	}
	if err := s.record(ctx, by.TenantID, ActionDeadLetters, err, meta); err != nil {
		return DeadLetterPage{}, err
	}
	return p, nil
}

// Redeliver queues dead letters of a push subscription for another
// delivery (all of them when ids is empty), resumes the subscription when
// paused, and returns how many were queued. A redelivered letter that
// fails again stays a dead letter.
func (s *Service) Redeliver(ctx context.Context, by identity.Principal, id string, letterIDs []string) (int, error) {
	meta := map[string]any{"id": id}
	n, err := 0, checkScope(by)
	var sub Subscription
	if err == nil {
		sub, err = s.get(ctx, by.TenantID, KindStream, id)
	}
	if err == nil && len(letterIDs) > MaxPageSize {
		err = invalid("ids", fmt.Sprintf("ids holds at most %d dead letter ids", MaxPageSize))
	}
	if err == nil {
		n, err = s.cfg.Store.RequeueDeadLetters(ctx, by.TenantID, id, letterIDs)
	}
	if err == nil && sub.Status.Paused {
		sub.UpdatedAt = s.now()
		err = s.cfg.Store.UpdateSubscription(ctx, sub, true)
		meta["resumed"] = true
	}
	meta["requeued"] = n
	if err == nil {
		s.notifyChange()
	}
	return n, s.record(ctx, by.TenantID, ActionRedeliver, err, meta)
}

// secret opens a subscription's sealed secret.
func (s *Service) secret(sub Subscription) ([]byte, error) {
	if len(sub.Auth.Sealed) == 0 {
		return nil, nil
	}
	return s.cfg.Sealer.Open(sealPurpose(sub.TenantID, sub.ID), sub.Auth.Sealed)
}
