package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/store/memstore"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestAppendedWakesWaitersOfTheTenant checks the wake-up that cursor
// readers sleep on: an append closes the channels of its tenant and of
// "any tenant", not those of other tenants; Poke closes every channel.
func TestAppendedWakesWaitersOfTheTenant(t *testing.T) {
	f := newService(t)
	ctx := context.Background()
	a, b, anyT := f.svc.Appended("tenant-a"), f.svc.Appended("tenant-b"), f.svc.Appended("")
	if closed(a) || closed(b) || closed(anyT) {
		t.Fatal("a channel is closed before any append")
	}
	res, err := f.svc.PostExternal(ctx, caller("tenant-a", identity.ScopeEventProducer), []byte(`{"e":{"event_type_id":"10001"}}`))
	if err != nil || res["e"].Status != events.StatusAccepted {
		t.Fatalf("post: %v %+v", err, res)
	}
	if !closed(a) || !closed(anyT) {
		t.Error("the append did not wake the waiters of its tenant and of any tenant")
	}
	if closed(b) {
		t.Error("an append to tenant-a woke a waiter of tenant-b")
	}
	if again := f.svc.Appended("tenant-a"); closed(again) {
		t.Error("a channel taken after the append is already closed")
	}
	anyT = f.svc.Appended("")
	f.svc.Poke()
	if !closed(b) || !closed(anyT) {
		t.Error("Poke did not wake every waiter")
	}
}

// TestNotifyAfterCommit checks that committed appends ask for a
// cross-process signal through Config.Notify.
func TestNotifyAfterCommit(t *testing.T) {
	notified := make(chan struct{}, 8)
	svc := events.NewService(events.Config{
		Store: memstore.New(), Audit: &sink{}, Clock: newService(t).clock,
		Notify: func(context.Context) error { notified <- struct{}{}; return nil },
	})
	defer svc.Close()
	if _, err := svc.EmitNative(context.Background(), "tenant-a", []byte(`{"event_type_id":"401"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("Notify was not called after a committed append")
	}
}

var _ audit.Sink = (*sink)(nil)
