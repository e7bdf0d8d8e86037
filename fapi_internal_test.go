package latchkey

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/eventstream"
)

// TestJWKSFetcher: a client's jwks_uri is fetched under area E's address
// guard (loopback refused unless private endpoints are allowed), its
// max-age read, and a body over 64 KiB refused.
func TestJWKSFetcher(t *testing.T) {
	big := false
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=600")
		if big {
			w.Write([]byte(strings.Repeat(" ", 65<<10)))
		}
		w.Write([]byte(`{"keys":[]}`))
	}))
	defer srv.Close()
	guarded := newJWKSFetcher(eventstream.Guard{})
	if _, _, err := guarded.FetchJWKS(t.Context(), srv.URL); !errors.Is(err, eventstream.ErrPrivateAddress) {
		t.Errorf("loopback jwks_uri: %v, want the address guard's refusal", err)
	}
	open := newJWKSFetcher(eventstream.Guard{AllowPrivate: true})
	open.client.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	body, age, err := open.FetchJWKS(t.Context(), srv.URL)
	if err != nil || string(body) != `{"keys":[]}` || age != 10*time.Minute {
		t.Errorf("fetch: %q, %v, %v", body, age, err)
	}
	big = true
	if _, _, err := open.FetchJWKS(t.Context(), srv.URL); err == nil || !strings.Contains(err.Error(), "64 KiB") {
		t.Errorf("over 64 KiB: %v", err)
	}
	if _, _, err := open.FetchJWKS(t.Context(), strings.Replace(srv.URL, "https", "http", 1)); err == nil {
		t.Error("http jwks_uri fetched")
	}
}
