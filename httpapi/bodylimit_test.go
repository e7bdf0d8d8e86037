package httpapi_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/latchkeytest"
)

// TestDeclaredBodyOverLimitRefusedBeforeReading: a request whose
// Content-Length is over its route's limit is answered 413 at once: with
// "Expect: 100-continue" the 413 comes instead of "100 Continue" (so the
// body is never sent), and without it the 413 comes while the client has
// sent only the headers and a little of the body, so the server read
// nothing of it. A body just within the limit is read.
func TestDeclaredBodyOverLimitRefusedBeforeReading(t *testing.T) {
	t.Parallel()
	e := latchkeytest.New(t)
	host := strings.TrimPrefix(e.Server.URL, "http://")
	const mib = 1 << 20
	for _, tc := range []struct {
		name, path, contentType string
		length                  int64
	}{
		{"password login", "/api/v1/auth/tokens/", "application/json", 20 * mib},
		{"just over the default limit", "/api/v1/auth/tokens/", "application/json", mib + 1},
		{"authenticator import", "/api/v1/tenants/ACMECORP01/users/alice/authenticators", "application/json", 20 * mib},
		{"user import (16 MiB)", "/api/v1/admin/tenants/" + e.Root.ID + "/users/import", "application/x-ndjson", 16*mib + 2},
	} {
		for _, expect := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, expect %v", tc.name, expect), func(t *testing.T) {
				t.Parallel()
				c, err := net.Dial("tcp", host)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n", tc.path, host, tc.contentType, tc.length)
				if expect {
					head += "Expect: 100-continue\r\n"
				}
				if _, err := c.Write([]byte(head + "\r\n")); err != nil {
					t.Fatal(err)
				}
				if !expect {
					// A little of the body; the rest is never sent.
					if _, err := c.Write([]byte(strings.Repeat(" ", 1024))); err != nil {
						t.Fatal(err)
					}
				}
				req, _ := http.NewRequest("POST", e.Server.URL+tc.path, nil)
				resp, err := http.ReadResponse(bufio.NewReader(c), req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Fatalf("answer %d (%s), want 413 before the body", resp.StatusCode, resp.Status)
				}
			})
		}
	}
	// Within the limit, the body is read (and refused for what it says).
	r := e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "nobody", "password": strings.Repeat("x", 1000), "auth_domain": url.PathEscape("root")})
	if r.Status == http.StatusRequestEntityTooLarge {
		t.Errorf("a small login was answered 413")
	}
}
