package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// registerEventStream adds area E (API.md "E. Event-stream configuration"):
// every route twice, with the tenant code in the path and without it (the
// tenant then comes from header acting-tenant-id, else tenant-id), plus the
// dead-letter extension routes.
func (s *Server) registerEventStream() {
	base := s.opts.EventStreamURL + "/v1"
	auth := s.oauthToken(styleProblem, identity.ScopeEventStreamAdmin)
	for _, prefix := range []string{base + "/tenants/{tenant}", base} {
		subs, one := prefix+"/subscriptions", prefix+"/subscriptions/{subscriptionId}"
		s.handle("POST", subs, auth.creating(), s.createStreamSub)
		s.handle("GET", subs, auth, s.listStreamSubs)
		s.handle("GET", one, auth, s.getStreamSub)
		s.handle("PATCH", one, auth, s.updateStreamSub)
		s.handle("DELETE", one, auth, s.deleteStreamSub)
		s.handle("GET", one+"/dead-letters", auth, s.listDeadLetters)
		s.handle("POST", one+"/dead-letters/redeliver", auth, s.redeliverDeadLetters)
		s.handle("POST", prefix+"/directory-sync", auth.creating(), s.createDirectorySync)
		s.handle("DELETE", prefix+"/directory-sync/{subscriptionId}", auth, s.deleteDirectorySync)
	}
}

// streamTenant checks the request's tenant code (path {tenant}, else
// header acting-tenant-id, else tenant-id) against the token's tenant. A
// tenant other than the token's is answered as not found, whether or not
// it exists.
func streamTenant(r *http.Request) error {
	code := r.PathValue("tenant")
	if code == "" {
		code = strings.TrimSpace(r.Header.Get("acting-tenant-id"))
	}
	if code == "" {
		code = strings.TrimSpace(r.Header.Get("tenant-id"))
	}
	if code == "" {
		return fault.E(fault.Invalid, fault.Field("tenant"), "the tenant code is required: in the path, or in header acting-tenant-id or tenant-id")
	}
	if p := principal(r); !strings.EqualFold(code, p.TenantCode) {
		return fault.E(fault.NotFound, "tenant "+truncateRunes(code, 40)+" not found")
	}
	return nil
}

func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// streamStatusJSON is a subscription's delivery status (extension).
type streamStatusJSON struct {
	Paused        bool       `json:"paused"`
	PausedAt      *time.Time `json:"pausedAt,omitempty"`
	Queued        int        `json:"queued"`
	Delivered     int64      `json:"delivered"`
	DeadLettered  int64      `json:"deadLettered"`
	LastSuccessAt *time.Time `json:"lastSuccessAt,omitempty"`
	LastErrorAt   *time.Time `json:"lastErrorAt,omitempty"`
	LastError     string     `json:"lastError,omitempty"`
	FailingSince  *time.Time `json:"failingSince,omitempty"`
}

type streamAuthJSON struct {
	Type     string `json:"type"`
	Username string `json:"username,omitempty"`
}

// streamConfigJSON is resource G's config object; secrets are never in it.
type streamConfigJSON struct {
	ID              string                     `json:"id"`
	Endpoint        string                     `json:"endpoint,omitempty"`
	EventTypes      []string                   `json:"eventTypes"`
	MaxPerSecond    int                        `json:"maxPerSecond"`
	NumberOfRetries int                        `json:"numberOfRetries"`
	Auth            *streamAuthJSON            `json:"auth,omitempty"`
	Connect         *eventstream.Connect       `json:"connect,omitempty"`
	GroupConfig     []eventstream.GroupMapping `json:"groupConfig,omitempty"`
	CreatedAt       time.Time                  `json:"createdAt"`
	UpdatedAt       time.Time                  `json:"updatedAt"`
	Status          streamStatusJSON           `json:"status"`
}

func optTimeJSON(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func streamConfig(v eventstream.View) streamConfigJSON {
	st := v.Status
	c := streamConfigJSON{
		ID: v.ID, EventTypes: v.EventTypes, MaxPerSecond: v.MaxPerSecond, NumberOfRetries: v.NumberOfRetries,
		CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
		Status: streamStatusJSON{Paused: st.Paused, PausedAt: optTimeJSON(st.PausedAt), Queued: v.Queued, Delivered: st.Delivered,
			DeadLettered: st.DeadLettered, LastSuccessAt: optTimeJSON(st.LastSuccessAt), LastErrorAt: optTimeJSON(st.LastErrorAt),
			LastError: st.LastError, FailingSince: optTimeJSON(st.FailingSince)},
	}
	if v.Kind == eventstream.KindDirectorySync {
		c.Connect, c.GroupConfig = v.Connect, v.GroupConfig
	} else {
		c.Endpoint, c.Auth = v.Endpoint, &streamAuthJSON{Type: v.Auth.Type, Username: v.Auth.Username}
	}
	return c
}

// streamEnvelope is the response envelope of area E.
type streamEnvelope struct {
	Resources []string          `json:"resources"`
	Links     map[string]string `json:"links"`
	Config    any               `json:"config"`
	Cursor    string            `json:"cursor"`
}

func (s *Server) streamOne(w http.ResponseWriter, r *http.Request, status int, v eventstream.View) {
	self := r.URL.Path
	if r.Method == "POST" {
		self += "/" + v.ID
	}
	writeJSON(w, status, streamEnvelope{Resources: []string{v.ID}, Links: map[string]string{"self": self}, Config: streamConfig(v)})
}

func (s *Server) createStreamSub(w http.ResponseWriter, r *http.Request) error {
	if err := streamTenant(r); err != nil {
		return err
	}
	var in eventstream.Input
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	v, err := s.p.EventStream.Create(r.Context(), principal(r), in)
	if err != nil {
		return err
	}
	s.streamOne(w, r, http.StatusCreated, v)
	return nil
}

func (s *Server) listStreamSubs(w http.ResponseWriter, r *http.Request) error {
	if err := streamTenant(r); err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", eventstream.DefaultPageSize)
	if err != nil {
		return err
	}
	cursor := r.URL.Query().Get("cursor")
	page, err := s.p.EventStream.List(r.Context(), principal(r), cursor, limit)
	if err != nil {
		return err
	}
	env := streamEnvelope{Resources: []string{}, Links: map[string]string{"self": r.URL.RequestURI()}, Cursor: page.Next}
	configs := make([]streamConfigJSON, 0, len(page.Items))
	for _, v := range page.Items {
		env.Resources = append(env.Resources, v.ID)
		configs = append(configs, streamConfig(v))
	}
	env.Config = configs
	if page.Next != "" {
		env.Links["next"] = r.URL.Path + "?" + url.Values{"cursor": {page.Next}, "limit": {itoa(int64(limit))}}.Encode()
	}
	writeJSON(w, http.StatusOK, env)
	return nil
}

func (s *Server) getStreamSub(w http.ResponseWriter, r *http.Request) error {
	if err := streamTenant(r); err != nil {
		return err
	}
	v, err := s.p.EventStream.Get(r.Context(), principal(r), r.PathValue("subscriptionId"))
	if err != nil {
		return err
	}
	s.streamOne(w, r, http.StatusOK, v)
	return nil
}

func (s *Server) updateStreamSub(w http.ResponseWriter, r *http.Request) error {
	if err := streamTenant(r); err != nil {
		return err
	}
	// Decoded through a pointer so that a body of null, which would leave
	// a value untouched, is refused rather than taken as an empty update.
	var in *eventstream.Input
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if in == nil {
		return fault.E(fault.Invalid, fault.Field("body"), "field body must be of type object")
	}
	v, err := s.p.EventStream.Update(r.Context(), principal(r), r.PathValue("subscriptionId"), *in)
	if err != nil {
		return err
	}
	s.streamOne(w, r, http.StatusOK, v)
	return nil
}

func (s *Server) deleteStreamSub(w http.ResponseWriter, r *http.Request) error {
	if err := streamTenant(r); err != nil {
		return err
	}
	if err := s.p.EventStream.Delete(r.Context(), principal(r), r.PathValue("subscriptionId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) createDirectorySync(w http.ResponseWriter, r *http.Request) error {
	if err := streamTenant(r); err != nil {
		return err
	}
	var in eventstream.DirectorySyncInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	v, err := s.p.EventStream.CreateDirectorySync(r.Context(), principal(r), in)
	if err != nil {
		return err
	}
	s.streamOne(w, r, http.StatusCreated, v)
	return nil
}

func (s *Server) deleteDirectorySync(w http.ResponseWriter, r *http.Request) error {
	if err := streamTenant(r); err != nil {
		return err
	}
	if err := s.p.EventStream.DeleteDirectorySync(r.Context(), principal(r), r.PathValue("subscriptionId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deadLetterJSON is a dead letter on the wire; event is the CloudEvent as
// it was POSTed.
type deadLetterJSON struct {
	ID        string          `json:"id"`
	EventSeq  int64           `json:"eventSequence"`
	EventType string          `json:"eventType"`
	Attempts  int             `json:"attempts"`
	LastError string          `json:"lastError"`
	CreatedAt time.Time       `json:"createdAt"`
	Requeued  bool            `json:"requeued"`
	Event     json.RawMessage `json:"event"`
}

func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) error {
	if err := streamTenant(r); err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", eventstream.DefaultPageSize)
	if err != nil {
		return err
	}
	page, err := s.p.EventStream.ListDeadLetters(r.Context(), principal(r), r.PathValue("subscriptionId"), r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return err
	}
	out := struct {
		DeadLetters []deadLetterJSON `json:"deadLetters"`
		Cursor      string           `json:"cursor"`
	}{DeadLetters: make([]deadLetterJSON, 0, len(page.Items)), Cursor: page.Next}
	for _, d := range page.Items {
		out.DeadLetters = append(out.DeadLetters, deadLetterJSON{ID: d.ID, EventSeq: d.EventSeq, EventType: d.EventType, Attempts: d.Attempts,
			LastError: d.LastError, CreatedAt: d.CreatedAt, Requeued: d.Requeued, Event: d.Body})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) redeliverDeadLetters(w http.ResponseWriter, r *http.Request) error {
	if err := streamTenant(r); err != nil {
		return err
	}
	var in struct {
		IDs []string `json:"ids"`
	}
	if r.ContentLength != 0 {
		b, err := readJSONBody(r)
		if err != nil {
			return err
		}
		if len(strings.TrimSpace(string(b))) > 0 {
			if err := unmarshalJSON(b, &in); err != nil {
				return err
			}
			// The store reads no ids as every letter; an explicit empty
			// list names none, so it is refused rather than widened.
			if in.IDs != nil && len(in.IDs) == 0 {
				return fault.E(fault.Invalid, fault.Field("ids"), "ids must hold at least one dead letter id; send no ids to redeliver every letter")
			}
		}
	}
	n, err := s.p.EventStream.Redeliver(r.Context(), principal(r), r.PathValue("subscriptionId"), in.IDs)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"requeued": n})
	return nil
}
