package latchkey

import (
	"context"
	"encoding/json"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/identity"
)

// PostEvents posts external events to the caller's tenant log; see
// events.Service.PostExternal.
func (p *Platform) PostEvents(ctx context.Context, by identity.Principal, body []byte) (map[string]events.PostResult, error) {
	return p.Events.PostExternal(ctx, by, body)
}

// QueryEvents returns a page of the caller's tenant events; see
// events.Service.Query.
func (p *Platform) QueryEvents(ctx context.Context, by identity.Principal, q events.QueryRequest) (events.QueryPage, error) {
	return p.Events.Query(ctx, by, q)
}

// EmitEvent appends a native event to tenantID's log on behalf of an
// administrator: the tenant's own admin or a root admin. Another tenant's
// admin, or an unknown tenant, gets fault.NotFound and a principal without
// the admin role fault.Forbidden, as for every admin route. A host that
// emits events itself calls p.Events.EmitNative directly.
func (p *Platform) EmitEvent(ctx context.Context, by identity.Principal, tenantID string, raw json.RawMessage) (events.Event, error) {
	if _, err := p.Identity.GetTenant(ctx, by, tenantID); err != nil {
		return events.Event{}, err
	}
	return p.Events.EmitNative(ctx, tenantID, raw)
}
