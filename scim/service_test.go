package scim_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/scim"
	"github.com/latchkey/latchkey/store/memstore"
)

type recorder struct {
	mu      sync.Mutex
	entries []audit.Entry
	events  []map[string]any
}

func (r *recorder) Record(_ context.Context, e audit.Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
	return nil
}

func (r *recorder) EmitNative(_ context.Context, tenantID string, raw json.RawMessage) error {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, m)
	return nil
}

func (r *recorder) actions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.entries {
		s := e.Action
		if e.Err != nil {
			s += " failed"
		}
		out = append(out, s)
	}
	return out
}

// eventSummary lists events as "type user group".
func (r *recorder) eventSummary() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		u := e["end_user"].(map[string]any)["id"].(string)
		g := e["group"].(map[string]any)["display_name"].(string)
		out = append(out, e["event_type_id"].(string)+" "+u+" "+g)
	}
	return out
}

type fixture struct {
	st     *memstore.Store
	svc    *scim.Service
	rec    *recorder
	caller identity.Principal
	users  []identity.User
}

func newFixture(t *testing.T) *fixture {
	st := memstore.New()
	ctx := t.Context()
	tn := identity.Tenant{ID: "t1", Code: "ACME000001", Name: "Acme", Settings: identity.DefaultSettings(), CreatedAt: when}
	if err := st.CreateTenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, rec: &recorder{}, caller: identity.Principal{Kind: identity.KindClient, TenantID: "t1", TenantCode: tn.Code, APIKeyID: "key1", Areas: []string{"scim"}}}
	for _, name := range []string{"ann", "ben", "cat"} {
		u := identity.User{ID: identity.NewObjectID(), TenantID: "t1", Name: name, Roles: []string{"user"}, CreatedAt: when}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		f.users = append(f.users, u)
	}
	f.svc = scim.NewService(scim.Config{Store: st, Audit: f.rec, Events: f.rec, Clock: clocktest.New(when.Add(time.Hour)), Base: "https://id.example/scim/v2"})
	return f
}

func (f *fixture) uid(i int) string { return f.users[i].ID.String() }

func TestGroupLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	created, err := f.svc.CreateGroup(ctx, f.caller, []byte(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"Sales","externalId":"e1","members":[{"value":"`+f.uid(0)+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	id := created["id"].(string)
	if created["meta"].(map[string]any)["version"] != `W/"1"` || created["meta"].(map[string]any)["location"] != "https://id.example/scim/v2/Groups/"+id {
		t.Errorf("meta %v", created["meta"])
	}
	members := created["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["display"] != "ann" {
		t.Errorf("members %v", members)
	}
	// A second group of the same name in another case is 409 uniqueness.
	_, err = f.svc.CreateGroup(ctx, f.caller, []byte(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"SALES"}`))
	if scim.TypeOf(err) != scim.TypeUniqueness || !fault.Is(fault.Conflict, err) {
		t.Errorf("duplicate: %v", err)
	}
	// Entra adds two members, removes the first in its default mode.
	_, err = f.svc.PatchGroup(ctx, f.caller, id, []byte(`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[
		{"op":"Add","path":"members","value":[{"value":"`+f.uid(1)+`"},{"value":"`+f.uid(2)+`"}]},
		{"op":"Remove","path":"members","value":[{"value":"`+f.uid(0)+`"}]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.svc.GetGroup(ctx, f.caller, id, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got["members"].([]any) {
		names = append(names, m.(map[string]any)["display"].(string))
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"ben", "cat"}) || got["meta"].(map[string]any)["version"] != `W/"2"` {
		t.Errorf("after PATCH: members %v, meta %v", names, got["meta"])
	}
	// If-Match with a stale version is refused and changes nothing.
	_, err = f.svc.PatchGroup(ctx, f.caller, id, []byte(`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","path":"displayName","value":"X"}]}`), `W/"1"`)
	if !errors.Is(err, scim.ErrPrecondition) {
		t.Errorf("stale If-Match: %v", err)
	}
	// A member of another tenant, or not a user id, is invalidValue.
	other := identity.User{ID: identity.NewObjectID(), TenantID: "t2", Name: "mallory", CreatedAt: when}
	if err := f.st.CreateUser(ctx, other); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{other.ID.String(), "not-an-id"} {
		_, err = f.svc.PatchGroup(ctx, f.caller, id, []byte(`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"add","path":"members","value":[{"value":"`+v+`"}]}]}`), "")
		if scim.TypeOf(err) != scim.TypeInvalidValue {
			t.Errorf("member %s: %v", v, err)
		}
	}
	// Excluding members, as Entra reads groups.
	list, err := f.svc.ListGroups(ctx, f.caller, scim.ListRequest{Filter: `displayName eq "sales"`, StartIndex: 1, Count: 10, ExcludedAttributes: []string{"members"}})
	if err != nil {
		t.Fatal(err)
	}
	if list.TotalResults != 1 || len(list.Resources) != 1 || list.Resources[0]["members"] != nil {
		t.Errorf("list %+v", list)
	}
	// Another tenant's credential sees nothing.
	stranger := identity.Principal{Kind: identity.KindClient, TenantID: "t2", APIKeyID: "key2"}
	if _, err := f.svc.GetGroup(ctx, stranger, id, nil, nil); !fault.Is(fault.NotFound, err) {
		t.Errorf("another tenant's GET: %v", err)
	}
	if err := f.svc.DeleteGroup(ctx, stranger, id, ""); !fault.Is(fault.NotFound, err) {
		t.Errorf("another tenant's DELETE: %v", err)
	}
	if l, _ := f.svc.ListGroups(ctx, stranger, scim.ListRequest{StartIndex: 1, Count: 10}); l.TotalResults != 0 {
		t.Errorf("another tenant's list: %+v", l)
	}
	if err := f.svc.DeleteGroup(ctx, f.caller, id, `W/"2"`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.GetGroup(ctx, f.caller, id, nil, nil); !fault.Is(fault.NotFound, err) {
		t.Errorf("after DELETE: %v", err)
	}
	wantEvents := []string{"405 " + f.uid(0) + " Sales", "405 " + f.uid(1) + " Sales", "405 " + f.uid(2) + " Sales", "406 " + f.uid(0) + " Sales"}
	gone := []string{"406 " + f.uid(1) + " Sales", "406 " + f.uid(2) + " Sales"}
	slices.Sort(gone)
	got405 := f.rec.eventSummary()
	slices.Sort(got405[1:3])
	tail := slices.Clone(got405[4:])
	slices.Sort(tail)
	if d := cmp.Diff(append(wantEvents[:1], sorted(wantEvents[1:3])...), got405[:3]); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if d := cmp.Diff(append([]string{wantEvents[3]}, gone...), append(got405[3:4], tail...)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	wantActions := []string{"scim.group.create", "scim.group.create failed", "scim.group.patch", "scim.group.patch failed", "scim.group.patch failed", "scim.group.patch failed", "scim.group.delete failed", "scim.group.delete"}
	if d := cmp.Diff(wantActions, f.rec.actions()); d != "" {
		t.Errorf("audit (-want +got):\n%s", d)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestGroupRefusals(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for _, tt := range []struct {
		name, body, scimType string
	}{
		{"not JSON", `{`, scim.TypeInvalidSyntax},
		{"no schemas", `{"displayName":"G"}`, scim.TypeInvalidSyntax},
		{"no displayName", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"]}`, scim.TypeInvalidValue},
		{"group as member", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"G","members":[{"value":"x","type":"Group"}]}`, scim.TypeInvalidValue},
		{"unknown member", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"G","members":[{"value":"AAAAAAAAAAAAAAAAAAAAAA"}]}`, scim.TypeInvalidValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := f.svc.CreateGroup(ctx, f.caller, []byte(tt.body)); scim.TypeOf(err) != tt.scimType {
				t.Errorf("%v, want %s", err, tt.scimType)
			}
		})
	}
	for _, tt := range []struct {
		name string
		r    scim.ListRequest
		typ  string
	}{
		{"bad filter", scim.ListRequest{Filter: `displayName eq`}, scim.TypeInvalidFilter},
		{"members unfilterable", scim.ListRequest{Filter: `members.value eq "x"`}, scim.TypeInvalidFilter},
		{"unknown attribute", scim.ListRequest{Filter: `nickName eq "x"`}, scim.TypeInvalidFilter},
		{"bad sortBy", scim.ListRequest{SortBy: "members"}, scim.TypeInvalidValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.StartIndex, tt.r.Count = 1, 10
			if _, err := f.svc.ListGroups(ctx, f.caller, tt.r); scim.TypeOf(err) != tt.typ {
				t.Errorf("%v, want %s", err, tt.typ)
			}
		})
	}
	if _, err := f.svc.GetGroup(ctx, identity.Principal{}, "x", nil, nil); !fault.Is(fault.Unauthenticated, err) {
		t.Errorf("no caller: %v", err)
	}
}
