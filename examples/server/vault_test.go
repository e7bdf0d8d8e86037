package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/postgres"
	"github.com/latchkey/latchkey/vault"
)

// vaultProcs starts n server processes on a fresh PostgreSQL schema and
// returns them with the root administrator's JWT (whose tenant's vault the
// tests use) and a store on the same schema.
func vaultProcs(t *testing.T, n int, flags ...string) (multiEnv, []*proc, string, *postgres.Store) {
	t.Helper()
	base := os.Getenv("PLATFORM_POSTGRES_DSN")
	if base == "" {
		t.Skip("PLATFORM_POSTGRES_DSN not set")
	}
	e := multiEnv{bin: buildServer(t), dsn: freshSchemaDSN(t, base), masterKey: base64.StdEncoding.EncodeToString(seal.NewKey()),
		archives: t.TempDir(), password: "vault-password-1"}
	var ps []*proc
	for i := range n {
		p, ready := e.launch(t, string(rune('A'+i)), e.masterKey, append([]string{"-public-url", publicURL, "-instance", string(rune('A' + i))}, flags...)...)
		p.await(t, ready)
		ps = append(ps, p)
	}
	st, err := postgres.Open(t.Context(), e.dsn, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return e, ps, login(t, ps[0].url, e.password), st
}

func login(t *testing.T, base, password string) string {
	t.Helper()
	r, _ := jsonCall(t, "POST", base+"/api/v1/auth/tokens/", "", map[string]string{"name": "admin", "password": password, "auth_domain": "root"})
	if r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.raw)
	}
	return r.body["jwt"].(string)
}

func createKey(t *testing.T, p *proc, jwt string, body map[string]any) string {
	t.Helper()
	r, _ := jsonCall(t, "POST", p.url+"/api/v1/vault/keys2", jwt, body)
	if r.status != 201 {
		t.Fatalf("create key through %s: %d %s", p.name, r.status, r.raw)
	}
	return r.body["id"].(string)
}

// TestVaultRotationsAcrossProcesses rotates one key through two server
// processes at once: each call adds exactly one version (compare-and-set
// on the key row in PostgreSQL).
func TestVaultRotationsAcrossProcesses(t *testing.T) {
	_, ps, jwt, _ := vaultProcs(t, 2)
	id := createKey(t, ps[0], jwt, map[string]any{"name": "contended", "algorithm": "EC", "curve": "P-256"})
	const calls = 16
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[float64]bool{}
	)
	for i := range calls {
		p := ps[i%2]
		wg.Go(func() {
			r, _ := jsonCall(t, "POST", p.url+"/api/v1/vault/keys2/"+id+"/rotate", jwt, nil)
			if r.status != 201 {
				t.Errorf("rotate through %s: %d %s", p.name, r.status, r.raw)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if v := r.body["version"].(float64); seen[v] {
				t.Errorf("version %v made twice", v)
			} else {
				seen[v] = true
			}
		})
	}
	wg.Wait()
	r, _ := jsonCall(t, "GET", ps[1].url+"/api/v1/vault/keys2/"+id+"/versions", jwt, nil)
	if n := len(r.body["resources"].([]any)); n != calls+1 {
		t.Errorf("%d versions after %d rotations, want %d", n, calls, calls+1)
	}
	for v := 1; v <= calls; v++ {
		if !seen[float64(v)] {
			t.Errorf("no rotation answered version %d", v)
		}
	}
}

// TestVaultChangeHoldsOnEveryProcessWithin5s changes keys through one
// process and measures how long the other still uses the old state: at
// most 5 seconds (each process reads a key again at least every 5
// seconds; on PostgreSQL a change is also announced by NOTIFY).
func TestVaultChangeHoldsOnEveryProcessWithin5s(t *testing.T) {
	_, ps, jwt, _ := vaultProcs(t, 2)
	a, b := ps[0], ps[1]
	enc := func(id string, pin any) int {
		body := map[string]any{"plaintext": "aGk="}
		if pin != nil {
			body["key_version"] = pin
		}
		r, _ := jsonCall(t, "POST", b.url+"/api/v1/vault/keys2/"+id+"/encrypt", jwt, body)
		return r.status
	}
	// waitFor polls b until want, and returns how long it took.
	waitFor := func(what string, want int, f func() int) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			if got := f(); got == want {
				return time.Since(start)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: the other process did not see the change within 10 s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	change := func(method, path string, body any) {
		t.Helper()
		r, _ := jsonCall(t, method, a.url+"/api/v1/vault/keys2/"+path, jwt, body)
		if r.status != 200 {
			t.Fatalf("%s %s through A: %d %s", method, path, r.status, r.raw)
		}
	}
	// State: revoked through A, refused by B.
	id := createKey(t, a, jwt, map[string]any{"name": "state", "algorithm": "AES", "size": 256})
	if s := enc(id, nil); s != 200 {
		t.Fatalf("encrypt through B: %d", s)
	}
	change("POST", id+"/revoke", map[string]any{"reason": "superseded"})
	took := waitFor("revoke", 409, func() int { return enc(id, nil) })
	// Minimum versions: version 0 refused for encryption through B.
	id2 := createKey(t, a, jwt, map[string]any{"name": "minimum", "algorithm": "AES", "size": 256})
	if s := enc(id2, 0); s != 200 {
		t.Fatalf("encrypt through B: %d", s)
	}
	r, _ := jsonCall(t, "POST", a.url+"/api/v1/vault/keys2/"+id2+"/rotate", jwt, nil)
	if r.status != 201 {
		t.Fatalf("rotate: %d", r.status)
	}
	change("PATCH", id2, map[string]any{"minEncryptionVersion": 1})
	took2 := waitFor("minEncryptionVersion", 400, func() int { return enc(id2, 0) })
	for _, d := range []time.Duration{took, took2} {
		if d > 5*time.Second {
			t.Errorf("a change took %v to hold on the other process, want at most 5 s", d)
		}
	}
	t.Logf("the other process refused after %v (state) and %v (minimum version)", took.Round(time.Millisecond), took2.Round(time.Millisecond))
}

// TestVaultAutoRotationSurvivesKill makes keys due for their automatic
// rotation, kills (SIGKILL) the process that claimed them under the
// rotation pass's lease before it could rotate them all, starts another,
// and checks that every key is rotated exactly once: the other process
// takes the keys over once the lease lapses, and a key the dead process
// did rotate is not rotated again.
func TestVaultAutoRotationSurvivesKill(t *testing.T) {
	flags := []string{"-vault-lease", "3s", "-vault-poll", "300ms"}
	e, ps, jwt, st := vaultProcs(t, 1, flags...)
	a := ps[0]
	var ids []string
	for i := range 6 {
		body := map[string]any{"name": fmt.Sprint("auto-", i), "autoRotatePeriodSeconds": 3600}
		if i%2 == 0 {
			body["algorithm"], body["size"] = "RSA", 4096 // seconds to generate: A dies while rotating
		} else {
			body["algorithm"], body["curve"] = "EC", "P-256"
		}
		ids = append(ids, createKey(t, a, jwt, body))
	}
	tenant := rootTenant(t, st)
	// Make them due now (their period is an hour).
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, id := range ids {
		k, err := st.GetKey(t.Context(), tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		k.NextRotationAt, k.NextEventAt = &now, &now
		if err := st.UpdateKey(t.Context(), vault.KeyUpdate{Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	// Kill A as soon as it holds the keys' leases.
	deadline := time.Now().Add(30 * time.Second)
	for {
		held := 0
		for _, id := range ids {
			k, err := st.GetKey(t.Context(), tenant, id)
			if err != nil {
				t.Fatal(err)
			}
			if k.LeaseUntil.After(time.Now()) && k.LeaseOwner != "" {
				held++
			}
		}
		if held > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("A claimed no key within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.kill(t)
	killed := time.Now()
	b, ready := e.launch(t, "B", e.masterKey, append([]string{"-public-url", publicURL, "-instance", "B"}, flags...)...)
	b.await(t, ready)
	// Every key ends with exactly one new version.
	deadline = time.Now().Add(90 * time.Second)
	for {
		done := 0
		for _, id := range ids {
			k, err := st.GetKey(t.Context(), tenant, id)
			if err != nil {
				t.Fatal(err)
			}
			if k.LatestVersion > 1 {
				t.Fatalf("key %s rotated %d times", k.Name, k.LatestVersion)
			}
			if k.LatestVersion == 1 {
				done++
			}
		}
		if done == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d keys rotated 90 s after the kill", done, len(ids))
		}
		time.Sleep(200 * time.Millisecond)
	}
	byB := 0
	for _, id := range ids {
		vs, err := st.ListKeyVersions(t.Context(), tenant, id)
		if err != nil || len(vs) != 2 {
			t.Fatalf("versions of %s: %d, %v", id, len(vs), err)
		}
		if vs[1].CreatedAt.After(killed) {
			byB++
		}
		k, _ := st.GetKey(t.Context(), tenant, id)
		if k.NextRotationAt == nil || k.NextRotationAt.Before(killed.Add(50*time.Minute)) {
			t.Errorf("key %s: next rotation %v, want about an hour on", k.Name, k.NextRotationAt)
		}
	}
	if byB == 0 {
		t.Error("A rotated every key before it was killed: the takeover was not exercised")
	}
	t.Logf("A rotated %d keys before it was killed, B the other %d after A's lease lapsed", len(ids)-byB, byB)
	// Exactly one system rotation record per key, a few more passes later.
	time.Sleep(time.Second)
	recs := allRecords(t, st, tenant)
	for _, id := range ids {
		n := 0
		for _, r := range recs {
			if r.Action == vault.ActionRotate && r.ActorID == vault.ActorSystem {
				if key, _ := r.Meta["key"].(map[string]any); key["id"] == id {
					n++
				}
			}
		}
		if n != 1 {
			t.Errorf("key %s: %d automatic rotation records, want 1", id, n)
		}
	}
}

// rootTenant is the root tenant's id.
func rootTenant(t *testing.T, st *postgres.Store) string {
	t.Helper()
	tn, err := st.GetTenantByCode(t.Context(), "ROOT000000")
	if err != nil {
		t.Fatal(err)
	}
	return tn.ID
}
