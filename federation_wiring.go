package latchkey

import (
	"context"
	"io"
	"net/http"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/eventstream"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/oidc"
)

// federationClient is the client of every upstream call: dialled through
// area E's address guard (no private address unless allowed), proxies
// from the environment not used, redirects not followed,
// federation.HTTPTimeout per call.
// Every answer is read to federation.MaxUpstreamBody at most: past it
// the body ends, and its JSON fails to parse.
func federationClient(g eventstream.Guard) *http.Client {
	c := eventstream.NewClient(g, federation.HTTPTimeout)
	c.Transport = capped{c.Transport}
	return c
}

type capped struct{ rt http.RoundTripper }

func (c capped) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, federation.MaxUpstreamBody), resp.Body}
	}
	return resp, err
}

// upstreams gives the hosted sign-in page its "Sign in with …" buttons.
type upstreams struct{ f *federation.Service }

func (u upstreams) SignInOptions(ctx context.Context, tenantID string, allowed []string) ([]oidc.UpstreamOption, error) {
	ps, err := u.f.EnabledProviders(ctx, tenantID, allowed)
	if err != nil {
		return nil, err
	}
	out := make([]oidc.UpstreamOption, 0, len(ps))
	for _, p := range ps {
		out = append(out, oidc.UpstreamOption{ID: p.ID, DisplayName: p.DisplayName})
	}
	return out, nil
}

// passkeyCount counts a user's passkeys (authenticator.Store).
type passkeyCount struct{ st authenticator.Store }

func (p passkeyCount) CountPasskeys(ctx context.Context, tenantID string, userID identity.ObjectID) (int, error) {
	_, n, err := p.st.ListAuthenticators(ctx, tenantID, userID, 0, 1)
	return n, err
}
