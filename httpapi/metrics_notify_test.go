package httpapi_test

import (
	"testing"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

func TestNotificationMetrics(t *testing.T) {
	e := latchkeytest.New(t)
	acme := e.NewTenant("Acme")
	admin := bearer(e.AuditClient(acme, "", identity.ScopeNotificationAdmin, identity.ScopeEventProducer))
	id, secret := e.OAuthClient(acme, "", identity.ScopeNotificationConsumer)
	reader := bearer(e.AccessToken(id, secret))
	r := e.Do("POST", "/notification/v1/subscriptions", map[string]any{"event_type_ids": []string{"10001"}, "client_id": id}, admin)
	if r.Status != 201 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	sub := r.JSON()["id"].(string)
	e.Do("POST", "/events/v1/events", map[string]any{"a": map[string]any{"event_type_id": "10001"}, "b": map[string]any{"event_type_id": "10001"}}, admin)
	for range 2 {
		if r := e.Do("GET", "/notification/v1/subscriptions/"+sub+"/notifications", nil, reader); r.Status != 200 {
			t.Fatalf("retrieve: %d %s", r.Status, r.Body)
		}
	}
	text := scrape(t, e)
	for series, want := range map[string]string{
		"latchkey_notifications_retrieved_total":   "2",
		"latchkey_notification_retrievals_total":   "2",
		"latchkey_notification_waiting_retrievals": "0",
	} {
		if got := sample(text, series); got != want {
			t.Errorf("%s = %q, want %q", series, got, want)
		}
	}
}
