package eventstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// Guard keeps endpoints off the platform's own network (SSRF): an endpoint
// whose host is, or resolves to, a loopback, private, link-local,
// unspecified, multicast or shared (CGNAT) address is refused when a
// subscription is created, and every delivery connection is checked again
// at connect time against the address actually dialled, so a name that
// resolves elsewhere later (DNS rebinding) is still refused.
type Guard struct {
	// AllowPrivate lets endpoints be on such addresses (the example
	// server's -allow-private-endpoints; tests with local receivers).
	AllowPrivate bool
	// LookupIP resolves a host name; default net.DefaultResolver's
	// LookupNetIP. Tests inject one.
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
}

// ErrPrivateAddress is the cause of refusals of private addresses.
var ErrPrivateAddress = errors.New("the endpoint resolves to a loopback, private or link-local address")

var sharedRange = netip.MustParsePrefix("100.64.0.0/10")

// blocked reports whether a is an address deliveries must not reach.
func blocked(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || sharedRange.Contains(a) ||
		a == netip.MustParseAddr("255.255.255.255")
}

func (g Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if g.LookupIP != nil {
		return g.LookupIP(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// CheckEndpoint validates raw as an endpoint (absolute http(s) URL) and,
// unless AllowPrivate, refuses it when its host resolves to a blocked
// address or does not resolve. Errors are fault.Invalid for field.
func (g Guard) CheckEndpoint(ctx context.Context, field, raw string) error {
	u, err := checkURL(field, raw)
	if err != nil || g.AllowPrivate {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := g.lookup(ctx, u.Hostname())
	if err != nil || len(addrs) == 0 {
		return fault.E(fault.Invalid, fault.Field(field), field+" host does not resolve", err)
	}
	for _, a := range addrs {
		if blocked(a) {
			return fault.E(fault.Invalid, fault.Field(field), field+" resolves to a loopback, private or link-local address, which this server does not allow", ErrPrivateAddress)
		}
	}
	return nil
}

// control is a net.Dialer Control hook: it refuses a connection to a
// blocked address, whatever name led to it.
func (g Guard) control(network, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to dial %q: %w", address, err)
	}
	if blocked(ap.Addr()) {
		return fmt.Errorf("refusing to dial %s: %w", ap.Addr(), ErrPrivateAddress)
	}
	return nil
}

// DialContext resolves the host with the Guard's resolver and dials the
// first address that connects; each connection passes control.
func (g Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s does not resolve", host)
	}
	d := net.Dialer{Timeout: 10 * time.Second, Control: g.control}
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}
