package eventstream_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/fault"
)

// TestGuardRefusesPrivateEndpointsAtCreation: loopback, private,
// link-local, CGNAT and unspecified addresses, literal or behind a name
// (localhost, and a name whose resolver answers 127.0.0.1), are refused
// unless private endpoints are allowed.
func TestGuardRefusesPrivateEndpointsAtCreation(t *testing.T) {
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "evil.example.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		case "mixed.example.test":
			return []netip.Addr{netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("10.1.2.3")}, nil
		case "public.example.test":
			return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
		case "localhost":
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
		return nil, errors.New("no such host")
	}
	g := eventstream.Guard{LookupIP: lookup}
	for _, ep := range []string{
		"http://127.0.0.1:8080/hook", "http://localhost/hook", "https://evil.example.test/hook", "https://mixed.example.test/",
		"http://10.0.0.5/", "http://192.168.1.1/", "http://172.16.0.1/", "http://169.254.169.254/latest/meta-data",
		"http://[::1]/", "http://[fe80::1]/", "http://0.0.0.0/", "http://100.64.0.1/", "http://[::ffff:127.0.0.1]/",
		"https://nowhere.example.test/",
	} {
		err := g.CheckEndpoint(context.Background(), "endpoint", ep)
		if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "endpoint" {
			t.Errorf("%s: %v, want Invalid for endpoint", ep, err)
		}
	}
	for _, ep := range []string{"https://public.example.test/hook", "http://203.0.113.9:8443/x"} {
		if err := g.CheckEndpoint(context.Background(), "endpoint", ep); err != nil {
			t.Errorf("%s: %v", ep, err)
		}
	}
	allow := eventstream.Guard{AllowPrivate: true, LookupIP: lookup}
	if err := allow.CheckEndpoint(context.Background(), "endpoint", "http://127.0.0.1:8080/hook"); err != nil {
		t.Errorf("AllowPrivate: %v", err)
	}
}

// TestDeliveryRefusesRebindingAndRedirects: a name that resolved to a
// public address at creation but resolves to 127.0.0.1 at delivery (DNS
// rebinding) is refused at connect time, and so is a redirect: the
// receivers get nothing and the events become dead letters.
func TestDeliveryRefusesRebindingAndRedirects(t *testing.T) {
	var rebound atomic.Bool
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "rebind.example.test" && !rebound.Load() {
			return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
		}
		if host == "rebind.example.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	f := newFixture(t, eventstream.Guard{LookupIP: lookup})
	rcv := newReceiver(t, f.clock, nil)
	u, _ := url.Parse(rcv.URL)
	sub := f.subscribe(tenantA, eventstream.Input{Endpoint: ptr("http://rebind.example.test:" + u.Port() + "/hook"), EventTypes: []string{"10001"}, NumberOfRetries: ptr(0)})
	rebound.Store(true)
	f.post(tenantA, "10001", 1)
	f.engine(eventstream.EngineConfig{})
	ctx := context.Background()
	f.drive(2, 10*time.Millisecond, func() bool {
		p, _ := f.svc.ListDeadLetters(ctx, admin(tenantA), sub.ID, "", 10)
		return len(p.Items) == 1
	})
	p, _ := f.svc.ListDeadLetters(ctx, admin(tenantA), sub.ID, "", 10)
	if !strings.Contains(p.Items[0].LastError, "loopback, private or link-local") {
		t.Errorf("dead letter error %q", p.Items[0].LastError)
	}
	if rcv.count() != 0 {
		t.Errorf("the rebound receiver got %d requests", rcv.count())
	}
}

// TestRedirectsAreNotFollowed: a 3xx is a failed attempt; the target of
// the redirect gets nothing.
func TestRedirectsAreNotFollowed(t *testing.T) {
	f := newFixture(t, local)
	target := newReceiver(t, f.clock, nil)
	redirector := newReceiver(t, f.clock, func(n int, w http.ResponseWriter) int {
		w.Header().Set("Location", target.URL)
		return http.StatusTemporaryRedirect
	})
	sub := f.subscribe(tenantA, eventstream.Input{Endpoint: ptr(redirector.URL), EventTypes: []string{"10001"}, NumberOfRetries: ptr(0)})
	f.post(tenantA, "10001", 1)
	f.engine(eventstream.EngineConfig{})
	ctx := context.Background()
	f.drive(2, 10*time.Millisecond, func() bool {
		p, _ := f.svc.ListDeadLetters(ctx, admin(tenantA), sub.ID, "", 10)
		return len(p.Items) == 1
	})
	if target.count() != 0 || redirector.count() != 1 {
		t.Errorf("redirect followed: target %d, redirector %d", target.count(), redirector.count())
	}
}
