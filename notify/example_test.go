package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/notify"
	"github.com/latchkey/latchkey/store/memstore"
)

// A subscription sees the events of its types appended after it was
// created, and each retrieval consumes what it returns.
func ExampleService_Retrieve() {
	ctx := context.Background()
	st := memstore.New()
	clk := clocktest.New(latchkeytest.Start)
	rec := audit.NewRecorder(st, clk, nil)
	defer rec.Close()
	tenant := identity.Tenant{ID: identity.NewGUID(), Code: "ACME000001", Name: "Acme", Settings: identity.DefaultSettings(), CreatedAt: clk.Now()}
	if err := st.CreateTenant(ctx, tenant); err != nil {
		fmt.Println(err)
		return
	}
	log := events.NewService(events.Config{Store: st, Audit: rec, Clock: clk})
	defer log.Close()
	svc := notify.NewService(notify.Config{Store: st, Tenants: st, Audit: rec, Clock: clk, Waker: log})

	admin := identity.Principal{Kind: identity.KindClient, TenantID: tenant.ID, ClientID: "admin-app", Scopes: []string{identity.ScopeNotificationAdmin}}
	reader := identity.Principal{Kind: identity.KindClient, TenantID: tenant.ID, ClientID: "reader-app", Scopes: []string{identity.ScopeNotificationConsumer}}

	log.EmitNative(ctx, tenant.ID, json.RawMessage(`{"event_type_id":"401"}`)) // before the subscription
	sub, err := svc.Create(ctx, admin, []byte(`{"event_type_ids":["401"],"client_id":"reader-app"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	log.EmitNative(ctx, tenant.ID, json.RawMessage(`{"event_type_id":"401","end_user":{"id":"u-1"}}`))
	log.EmitNative(ctx, tenant.ID, json.RawMessage(`{"event_type_id":"402"}`)) // not subscribed

	for range 2 {
		p, err := svc.Retrieve(ctx, reader, sub.ID, 0)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("page", p.Page, "results", len(p.Results))
		for _, e := range p.Results {
			fmt.Println(e.TypeID, e.UserIDs)
		}
	}
	_, err = svc.Retrieve(ctx, identity.Principal{TenantID: tenant.ID, ClientID: "someone-else", Scopes: reader.Scopes}, sub.ID, 0)
	fmt.Println(fault.KindOf(err), "-", fault.MessageOf(err))
	// Output:
	// page 1 results 1
	// 401 [u-1]
	// page 2 results 0
	// forbidden - the access token's client_id is not the subscription's client_id
}

// An acknowledged retrieval leases its page: unless confirmed within the
// subscription's ack deadline it is handed out again, to any poller.
func ExampleService_RetrieveAcked() {
	ctx := context.Background()
	st := memstore.New()
	clk := clocktest.New(latchkeytest.Start)
	rec := audit.NewRecorder(st, clk, nil)
	defer rec.Close()
	tenant := identity.Tenant{ID: identity.NewGUID(), Code: "ACME000001", Name: "Acme", Settings: identity.DefaultSettings(), CreatedAt: clk.Now()}
	if err := st.CreateTenant(ctx, tenant); err != nil {
		fmt.Println(err)
		return
	}
	log := events.NewService(events.Config{Store: st, Audit: rec, Clock: clk})
	defer log.Close()
	svc := notify.NewService(notify.Config{Store: st, Tenants: st, Audit: rec, Clock: clk, Waker: log})
	admin := identity.Principal{Kind: identity.KindClient, TenantID: tenant.ID, ClientID: "admin-app", Scopes: []string{identity.ScopeNotificationAdmin}}
	reader := identity.Principal{Kind: identity.KindClient, TenantID: tenant.ID, ClientID: "reader-app", Scopes: []string{identity.ScopeNotificationConsumer}}
	sub, err := svc.Create(ctx, admin, []byte(`{"event_type_ids":["401"],"client_id":"reader-app","ack_deadline_seconds":10}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	log.EmitNative(ctx, tenant.ID, json.RawMessage(`{"event_type_id":"401"}`))

	p, _ := svc.RetrieveAcked(ctx, reader, sub.ID, 0) // this poller dies before confirming
	fmt.Println("page", p.Page, "results", len(p.Results))
	clk.Advance(10 * time.Second)
	p, _ = svc.RetrieveAcked(ctx, reader, sub.ID, 0) // another poller
	fmt.Println("page", p.Page, "results", len(p.Results))
	fmt.Println(svc.Ack(ctx, reader, sub.ID, p.Page))
	p, _ = svc.RetrieveAcked(ctx, reader, sub.ID, 0)
	fmt.Println("page", p.Page, "results", len(p.Results))
	// Output:
	// page 1 results 1
	// page 1 results 1
	// <nil>
	// page 2 results 0
}
