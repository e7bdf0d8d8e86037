package latchkey

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/notify"
)

// CreateNotifySubscription creates a notification subscription in the caller's
// tenant from a create body; see notify.Service.Create.
func (p *Platform) CreateNotifySubscription(ctx context.Context, by identity.Principal, body []byte) (notify.View, error) {
	return p.Notify.Create(ctx, by, body)
}

// GetNotifySubscription returns a notification subscription with its status; see
// notify.Service.Get.
func (p *Platform) GetNotifySubscription(ctx context.Context, by identity.Principal, id string) (notify.View, error) {
	return p.Notify.Get(ctx, by, id)
}

// DeleteNotifySubscription unsubscribes; see notify.Service.Delete.
func (p *Platform) DeleteNotifySubscription(ctx context.Context, by identity.Principal, id string) error {
	return p.Notify.Delete(ctx, by, id)
}

// RetrieveNotifications returns and consumes the next page of a
// subscription's notifications (an acknowledged retrieval's page whose
// lease lapsed first), waiting up to wait for some; see
// notify.Service.Retrieve.
func (p *Platform) RetrieveNotifications(ctx context.Context, by identity.Principal, id string, wait time.Duration) (notify.Page, error) {
	return p.Notify.Retrieve(ctx, by, id, wait)
}

// RetrieveNotificationsAcked leases the next page of a subscription's
// notifications to the caller, to be confirmed with AckNotifications; see
// notify.Service.RetrieveAcked.
func (p *Platform) RetrieveNotificationsAcked(ctx context.Context, by identity.Principal, id string, wait time.Duration) (notify.Page, error) {
	return p.Notify.RetrieveAcked(ctx, by, id, wait)
}

// AckNotifications confirms a page of an acknowledged retrieval; see
// notify.Service.Ack.
func (p *Platform) AckNotifications(ctx context.Context, by identity.Principal, id string, page int64) error {
	return p.Notify.Ack(ctx, by, id, page)
}
