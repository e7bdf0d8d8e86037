package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/notify"
)

// registerNotify adds area D (API.md "D. Notifications").
func (s *Server) registerNotify() {
	base := s.opts.NotificationURL + "/v1/subscriptions"
	admin := s.oauthToken(styleNotification, identity.ScopeNotificationAdmin)
	consumer := s.oauthToken(styleNotification, identity.ScopeNotificationConsumer)
	admin.limit = notify.MaxCreateBytes
	s.handle("POST", base, admin.creating(), s.createSubscription)
	s.handle("GET", base+"/{id}", consumer, s.getSubscription)
	s.handle("DELETE", base+"/{id}", admin, s.deleteSubscription)
	s.handle("GET", base+"/{id}/notifications", consumer, s.retrieveNotifications)
	ack := s.oauthToken(styleNotification, identity.ScopeNotificationConsumer)
	ack.limit = notify.MaxAckBytes
	s.handle("POST", base+"/{id}/notifications/ack", ack, s.ackNotifications)
}

// subscriptionJSON is resource F of the specification on the wire.
type subscriptionJSON struct {
	ID           string                 `json:"id"`
	Subscription subscriptionBodyJSON   `json:"subscription"`
	Status       subscriptionStatusJSON `json:"subscription_status"`
}

type subscriptionBodyJSON struct {
	ClientID         string    `json:"client_id"`
	EventTypeIDs     []string  `json:"event_type_ids"`
	SubscribedBy     string    `json:"subscribed_by"`
	SubscriptionDate time.Time `json:"subscription_date"`
	NotificationURL  string    `json:"notification_url"`
	PageSize         int       `json:"notification_page_size"`
	// AckDeadline is ack_deadline_seconds (beyond the specification).
	AckDeadline int64 `json:"ack_deadline_seconds"`
}

type subscriptionStatusJSON struct {
	// LastRequestDate is left out until the first retrieval.
	LastRequestDate *time.Time `json:"last_request_date,omitempty"`
	Remaining       int        `json:"number_of_remaining_notifications"`
}

func (s *Server) subscriptionJSON(v notify.View) subscriptionJSON {
	out := subscriptionJSON{
		ID: v.ID,
		Subscription: subscriptionBodyJSON{
			ClientID: v.ClientID, EventTypeIDs: v.EventTypeIDs, SubscribedBy: v.SubscribedBy, SubscriptionDate: v.Created,
			NotificationURL: s.opts.PublicURL + s.opts.NotificationURL + "/v1/subscriptions/" + url.PathEscape(v.ID) + "/notifications",
			PageSize:        v.PageSize,
			AckDeadline:     int64(v.AckDeadline / time.Second),
		},
		Status: subscriptionStatusJSON{Remaining: v.Remaining},
	}
	if !v.LastRequest.IsZero() {
		t := v.LastRequest
		out.Status.LastRequestDate = &t
	}
	return out
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	v, err := s.p.CreateNotifySubscription(r.Context(), principal(r), body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.subscriptionJSON(v))
	return nil
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) error {
	v, err := s.p.GetNotifySubscription(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.subscriptionJSON(v))
	return nil
}

func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.p.DeleteNotifySubscription(r.Context(), principal(r), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"code": notify.Unsubscribed, "description": "The subscription " + id + " was deleted."})
	return nil
}

// notificationPageJSON is a retrieval on the wire: page counts the
// subscription's retrievals, size the results of this one, and each result
// is the event as stored (resource H), oldest first.
type notificationPageJSON struct {
	Page    int64             `json:"page"`
	Size    int               `json:"size"`
	Results []json.RawMessage `json:"results"`
}

func (s *Server) retrieveNotifications(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodHead {
		// HEAD is served by GET routes, and must be safe: it checks the
		// request as a retrieval would but consumes nothing.
		if _, err := s.p.GetNotifySubscription(r.Context(), principal(r), r.PathValue("id")); err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	wait, err := queryInt(r, "wait", 0)
	if err != nil {
		return err
	}
	if wait < 0 || wait > int(notify.MaxWait/time.Second) {
		wait = -1 // refused by the service with the field named
	}
	ack, err := queryAck(r)
	if err != nil {
		return err
	}
	retrieve := s.p.RetrieveNotifications
	if ack {
		retrieve = s.p.RetrieveNotificationsAcked
	}
	p, err := retrieve(r.Context(), principal(r), r.PathValue("id"), time.Duration(wait)*time.Second)
	if err != nil {
		return err
	}
	out := notificationPageJSON{Page: p.Page, Size: len(p.Results), Results: make([]json.RawMessage, len(p.Results))}
	for i, e := range p.Results {
		out.Results[i] = e.Body
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// queryAck reads the ack query parameter of a retrieval: "true" or
// "false" (absent is false); anything else is refused rather than read as
// a plain retrieval, which would consume the page.
func queryAck(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get("ack"); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fault.E(fault.Invalid, fault.Field("ack"), "ack must be true or false")
}

// ackNotifications confirms a page of an acknowledged retrieval: 204.
func (s *Server) ackNotifications(w http.ResponseWriter, r *http.Request) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	page, err := notify.ParseAck(body)
	if err == nil {
		err = s.p.AckNotifications(r.Context(), principal(r), r.PathValue("id"), page)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
