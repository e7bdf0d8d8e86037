package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/seal"
)

// R3: a server killed with SIGKILL while it ingests events loses none it
// acknowledged, and stores none twice, on the default SQLite store.
func TestKilledDuringIngestLosesNoAcknowledgedEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	key := base64.StdEncoding.EncodeToString(seal.NewKey())
	env := multiEnv{bin: buildServer(t), archives: t.TempDir(), password: "crash-admin-password", data: t.TempDir()}
	a, ready := env.launch(t, "first", key, "-public-url", publicURL)
	a.await(t, ready)

	login, _ := jsonCall(t, "POST", a.url+"/api/v1/auth/tokens/", "", map[string]string{"name": "admin", "password": env.password})
	jwt, _ := login.body["jwt"].(string)
	tenant, _ := jsonCall(t, "POST", a.url+"/api/v1/admin/tenants", jwt, map[string]string{"name": "Crash"})
	tid, _ := tenant.body["id"].(string)
	client, _ := jsonCall(t, "POST", a.url+"/api/v1/admin/tenants/"+tid+"/oauth-clients", jwt,
		map[string]any{"name": "producer", "scopes": []string{"event:event:producer", "event:event:consumer"}})
	tok, _ := tokenCall(t, a.url, fmt.Sprint(client.body["client_id"]), fmt.Sprint(client.body["client_secret"]))
	access, _ := tok.body["access_token"].(string)
	if access == "" {
		t.Fatalf("no access token: %v", tok.body)
	}

	// Eight clients post single events, each marked by a unique identifier
	// value, until the server dies; the ones answered 200 accepted are
	// acknowledged.
	var (
		mu     sync.Mutex
		acked  = map[string]bool{}
		n      atomic.Int64
		wg     sync.WaitGroup
		enough = make(chan struct{})
		once   sync.Once
	)
	post := func(marker string) bool {
		body, _ := json.Marshal(map[string]any{"e": map[string]any{"event_type_id": "10001", "identifier_value": marker}})
		req, _ := http.NewRequest("POST", a.url+"/events/v1/events", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+access)
		resp, err := httpc.Do(req)
		if err != nil {
			return false // the server is gone
		}
		defer resp.Body.Close()
		var m map[string]map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode == 200 && m["e"]["status"] == "accepted" {
			mu.Lock()
			acked[marker] = true
			mu.Unlock()
			if n.Add(1) >= 400 {
				once.Do(func() { close(enough) })
			}
		}
		return true
	}
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				if !post(fmt.Sprintf("w%d-%d", w, i)) {
					return
				}
			}
		})
	}
	<-enough
	a.kill(t) // while posts are in flight
	wg.Wait()

	b, ready := env.launch(t, "restarted", key, "-public-url", publicURL)
	b.await(t, ready)
	seen := map[string]int{}
	for page := 1; ; page++ {
		q := url.Values{"size": {"100"}, "page": {fmt.Sprint(page)}}
		r, _ := jsonCall(t, "GET", b.url+"/events/v1/events?"+q.Encode(), access, nil)
		if r.status != 200 {
			t.Fatalf("query page %d: %d %s", page, r.status, r.raw)
		}
		results, _ := r.body["results"].([]any)
		for _, ev := range results {
			marker, _ := ev.(map[string]any)["identifier_value"].(string)
			seen[marker]++
		}
		if len(results) < 100 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for m := range acked {
		if seen[m] == 0 {
			t.Errorf("acknowledged event %s lost by the crash", m)
		}
	}
	for m, c := range seen {
		if c > 1 {
			t.Errorf("event %s stored %d times", m, c)
		}
	}
	t.Logf("%d events acknowledged before SIGKILL, %d stored after restart", len(acked), len(seen))
}
