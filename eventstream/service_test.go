package eventstream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

func TestCreateValidation(t *testing.T) {
	f := newFixture(t, local)
	ok := func() eventstream.Input {
		return eventstream.Input{Endpoint: ptr("https://hooks.example.com/x"), EventTypes: []string{"401", "10001"}}
	}
	cases := []struct {
		name  string
		edit  func(*eventstream.Input)
		field string
	}{
		{"no endpoint", func(in *eventstream.Input) { in.Endpoint = nil }, "endpoint"},
		{"relative endpoint", func(in *eventstream.Input) { in.Endpoint = ptr("/hook") }, "endpoint"},
		{"ftp endpoint", func(in *eventstream.Input) { in.Endpoint = ptr("ftp://x.example.com/") }, "endpoint"},
		{"credentials in URL", func(in *eventstream.Input) { in.Endpoint = ptr("https://u:p@x.example.com/") }, "endpoint"},
		{"no event types", func(in *eventstream.Input) { in.EventTypes = nil }, "eventTypes"},
		{"unknown native type", func(in *eventstream.Input) { in.EventTypes = []string{"999"} }, "eventTypes"},
		{"external below 10000", func(in *eventstream.Input) { in.EventTypes = []string{"9999"} }, "eventTypes"},
		{"not a number", func(in *eventstream.Input) { in.EventTypes = []string{"abc"} }, "eventTypes"},
		{"maxPerSecond 0", func(in *eventstream.Input) { in.MaxPerSecond = ptr(0) }, "maxPerSecond"},
		{"maxPerSecond too high", func(in *eventstream.Input) { in.MaxPerSecond = ptr(1001) }, "maxPerSecond"},
		{"retries negative", func(in *eventstream.Input) { in.NumberOfRetries = ptr(-1) }, "numberOfRetries"},
		{"retries too many", func(in *eventstream.Input) { in.NumberOfRetries = ptr(11) }, "numberOfRetries"},
		{"unknown auth type", func(in *eventstream.Input) { in.Auth = &eventstream.AuthInput{Type: "digest"} }, "auth.type"},
		{"bearer without token", func(in *eventstream.Input) { in.Auth = &eventstream.AuthInput{Type: "bearer"} }, "auth.token"},
		{"basic without password", func(in *eventstream.Input) { in.Auth = &eventstream.AuthInput{Type: "basic", Username: "u"} }, "auth"},
		{"hmac short", func(in *eventstream.Input) { in.Auth = &eventstream.AuthInput{Type: "hmac", Secret: "short"} }, "auth.secret"},
		{"hmac bad whsec", func(in *eventstream.Input) { in.Auth = &eventstream.AuthInput{Type: "hmac", Secret: "whsec_!!!"} }, "auth.secret"},
		{"id given", func(in *eventstream.Input) { in.ID = ptr("mine") }, "id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := ok()
			c.edit(&in)
			_, err := f.svc.Create(context.Background(), admin(tenantA), in)
			if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != c.field {
				t.Errorf("err %v (field %q), want Invalid for %q", err, fault.FieldOf(err), c.field)
			}
		})
	}
	v, err := f.svc.Create(context.Background(), admin(tenantA), ok())
	if err != nil {
		t.Fatal(err)
	}
	if v.MaxPerSecond != eventstream.DefaultMaxPerSecond || v.NumberOfRetries != eventstream.DefaultNumberOfRetries || v.Auth.Type != "none" {
		t.Errorf("defaults: %+v", v.Subscription)
	}
	noScope := identity.Principal{TenantID: tenantA, Scopes: []string{identity.ScopeEventProducer}}
	if _, err := f.svc.Create(context.Background(), noScope, ok()); !fault.Is(fault.Forbidden, err) {
		t.Errorf("without scope: %v", err)
	}
	if _, err := (newFixture(t, eventstream.Guard{})).svc.Create(context.Background(), admin(tenantA), eventstream.Input{Endpoint: ptr("http://127.0.0.1/x"), EventTypes: []string{"401"}}); !fault.Is(fault.Invalid, err) {
		t.Errorf("loopback endpoint without AllowPrivate: %v", err)
	}
}

func TestCRUDAndImmutableFields(t *testing.T) {
	f := newFixture(t, local)
	ctx := context.Background()
	f.post(tenantA, "10001", 3) // a new subscription starts after these
	v := f.subscribe(tenantA, eventstream.Input{Endpoint: ptr("https://hooks.example.com/x"), EventTypes: []string{"10001"}, Auth: &eventstream.AuthInput{Type: "bearer", Token: "sekrit"}})
	if v.Cursor != 3 || v.Queued != 0 {
		t.Errorf("new subscription cursor %d queued %d, want 3 and 0", v.Cursor, v.Queued)
	}
	if slices.Contains(v.Auth.Sealed, 's') && string(v.Auth.Sealed) == "sekrit" {
		t.Error("the token is stored in clear")
	}
	f.post(tenantA, "10001", 2)
	got, err := f.svc.Get(ctx, admin(tenantA), v.ID)
	if err != nil || got.Queued != 2 {
		t.Fatalf("Get: %+v %v", got, err)
	}
	if _, err := f.svc.Get(ctx, admin(tenantB), v.ID); !fault.Is(fault.NotFound, err) {
		t.Errorf("tenant B gets A's subscription: %v", err)
	}
	for _, in := range []eventstream.Input{{Endpoint: ptr("https://other.example.com/")}, {ID: ptr("x")}, {SubscriptionID: ptr("x")}} {
		if _, err := f.svc.Update(ctx, admin(tenantA), v.ID, in); !fault.Is(fault.Invalid, err) {
			t.Errorf("update %+v: %v, want Invalid", in, err)
		}
	}
	up, err := f.svc.Update(ctx, admin(tenantA), v.ID, eventstream.Input{Endpoint: ptr(v.Endpoint), ID: ptr(v.ID), EventTypes: []string{"10002"}, MaxPerSecond: ptr(5)})
	if err != nil || up.MaxPerSecond != 5 || !cmp.Equal(up.EventTypes, []string{"10002"}) || up.NumberOfRetries != 3 || up.Auth.Type != "bearer" {
		t.Fatalf("Update: %+v %v", up, err)
	}
	if _, err := f.svc.Update(ctx, admin(tenantB), v.ID, eventstream.Input{MaxPerSecond: ptr(1)}); !fault.Is(fault.NotFound, err) {
		t.Errorf("tenant B updates A's: %v", err)
	}
	for range 4 {
		f.subscribe(tenantA, eventstream.Input{Endpoint: ptr("https://hooks.example.com/y"), EventTypes: []string{"401"}})
	}
	var ids []string
	cursor := ""
	for {
		p, err := f.svc.List(ctx, admin(tenantA), cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if len(ids) != 5 || !slices.IsSorted(ids) {
		t.Errorf("listing: %v", ids)
	}
	if p, _ := f.svc.List(ctx, admin(tenantB), "", 20); len(p.Items) != 0 {
		t.Errorf("tenant B lists %d", len(p.Items))
	}
	if _, err := f.svc.List(ctx, admin(tenantA), "%%%", 20); !fault.Is(fault.Invalid, err) {
		t.Errorf("bad cursor: %v", err)
	}
	if err := f.svc.Delete(ctx, admin(tenantB), v.ID); !fault.Is(fault.NotFound, err) {
		t.Errorf("tenant B deletes A's: %v", err)
	}
	if err := f.svc.Delete(ctx, admin(tenantA), v.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, admin(tenantA), v.ID); !fault.Is(fault.NotFound, err) {
		t.Errorf("after delete: %v", err)
	}
	want := []string{eventstream.ActionCreate, eventstream.ActionGet, eventstream.ActionUpdate, eventstream.ActionList, eventstream.ActionDelete}
	acts := f.sink.actions()
	for _, a := range want {
		if !slices.Contains(acts, a) {
			t.Errorf("no audit record for %s", a)
		}
	}
}

func TestDirectorySync(t *testing.T) {
	f := newFixture(t, local)
	ctx := context.Background()
	rcv := newReceiver(t, f.clock, func(int, http.ResponseWriter) int { return http.StatusOK })
	bad := []struct {
		name  string
		in    eventstream.DirectorySyncInput
		field string
	}{
		{"no connect", eventstream.DirectorySyncInput{GroupConfig: []eventstream.GroupMapping{{"user", "member"}}}, "connect"},
		{"no groupConfig", eventstream.DirectorySyncInput{Connect: &eventstream.Connect{IdpURI: rcv.URL, ClientID: "c"}}, "groupConfig"},
		{"no clientId", eventstream.DirectorySyncInput{Connect: &eventstream.Connect{IdpURI: rcv.URL}, GroupConfig: []eventstream.GroupMapping{{"user", "member"}}}, "connect.clientId"},
		{"bad idpUri", eventstream.DirectorySyncInput{Connect: &eventstream.Connect{IdpURI: "idp", ClientID: "c"}, GroupConfig: []eventstream.GroupMapping{{"user", "member"}}}, "connect.idpUri"},
		{"duplicate mapping", eventstream.DirectorySyncInput{Connect: &eventstream.Connect{IdpURI: rcv.URL, ClientID: "c"}, GroupConfig: []eventstream.GroupMapping{{"user", "member"}, {"group", "member"}, {"user", "member"}}}, "groupConfig[2]"},
		{"unknown nodeType", eventstream.DirectorySyncInput{Connect: &eventstream.Connect{IdpURI: rcv.URL, ClientID: "c"}, GroupConfig: []eventstream.GroupMapping{{"device", "member"}}}, "groupConfig[0].nodeType"},
	}
	for _, c := range bad {
		if _, err := f.svc.CreateDirectorySync(ctx, admin(tenantA), c.in); !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != c.field {
			t.Errorf("%s: %v (field %q), want Invalid for %q", c.name, err, fault.FieldOf(err), c.field)
		}
	}
	v, err := f.svc.CreateDirectorySync(ctx, admin(tenantA), eventstream.DirectorySyncInput{
		Connect: &eventstream.Connect{IdpURI: rcv.URL + "/scim", ClientID: "idp-client"}, GroupConfig: []eventstream.GroupMapping{{"user", "member"}}})
	if err != nil {
		t.Fatal(err)
	}
	// A directory-sync subscription is not a push subscription.
	if _, err := f.svc.Get(ctx, admin(tenantA), v.ID); !fault.Is(fault.NotFound, err) {
		t.Errorf("Get of a directory sync: %v", err)
	}
	f.engine(eventstream.EngineConfig{})
	// 405 (group membership) is not mapped; 401 (user created) is.
	if _, err := f.events.EmitNative(ctx, tenantA, json.RawMessage(`{"event_type_id":"405"}`)); err != nil {
		t.Fatal(err)
	}
	created, err := f.events.EmitNative(ctx, tenantA, json.RawMessage(`{"event_type_id":"401","username":"alice"}`))
	if err != nil {
		t.Fatal(err)
	}
	f.drive(2, 10*time.Millisecond, func() bool { return rcv.count() >= 1 })
	d := rcv.all()[0]
	data, _ := d.Event["data"].(map[string]any)
	if d.EventID != created.ID || d.Event["type"] != "com.latchkey.directory.401" || data["clientId"] != "idp-client" {
		t.Errorf("pushed %v", d.Event)
	}
	if err := f.svc.DeleteDirectorySync(ctx, admin(tenantB), v.ID); !fault.Is(fault.NotFound, err) {
		t.Errorf("tenant B deletes A's directory sync: %v", err)
	}
	if err := f.svc.DeleteDirectorySync(ctx, admin(tenantA), v.ID); err != nil {
		t.Fatal(err)
	}
}
