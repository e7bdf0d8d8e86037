package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/latchkeytest"
	"github.com/latchkey/latchkey/vault"
)

func statuses(t *testing.T, v *vaultEnv, id string) string {
	t.Helper()
	var out []string
	for _, x := range v.do(t, "GET", keysPath+"/"+id+"/versions", nil, 200)["resources"].([]any) {
		m := x.(map[string]any)
		out = append(out, fmt.Sprintf("%v:%v", m["version"], m["status"]))
	}
	return strings.Join(out, " ")
}

// TestVaultVersionRules covers rotation and the minimum versions: which
// version encrypt uses, which versions decrypt and verify accept, PATCH's
// ordering rule, trim's bounds.
func TestVaultVersionRules(t *testing.T) {
	v := newVaultEnv(t)
	id := v.create(t, map[string]any{"name": "k", "algorithm": "AES", "size": 256})
	var cts []string
	for n := 0; n <= 3; n++ {
		if n > 0 {
			ver := v.op(t, id, "rotate", nil, 201)
			if ver["version"] != float64(n) || ver["status"] != "current" {
				t.Fatalf("rotate = %v", ver)
			}
		}
		res := v.op(t, id, "encrypt", map[string]any{"plaintext": b64s(fmt.Sprint("v", n))}, 200)
		if res["key_version"] != float64(n) || !strings.HasPrefix(str(res, "ciphertext"), fmt.Sprintf("lk:v%d:", n)) {
			t.Fatalf("encrypt after %d rotations = %v", n, res)
		}
		cts = append(cts, str(res, "ciphertext"))
	}
	k := v.do(t, "GET", keysPath+"/"+id, nil, 200)
	if k["version"] != 3.0 || k["latestVersion"] != 3.0 {
		t.Fatalf("key after 3 rotations: %v", k)
	}
	if got := statuses(t, v, id); got != "0:enabled 1:enabled 2:enabled 3:current" {
		t.Errorf("statuses %s", got)
	}
	// Pinned versions for encryption: from the effective minimum to version.
	v.op(t, id, "encrypt", map[string]any{"plaintext": "", "key_version": 1}, 200)
	v.op(t, id, "encrypt", map[string]any{"plaintext": "", "key_version": 4}, 400)
	// PATCH's ordering rule (only among the values set).
	patch := func(body map[string]any, want int) { v.do(t, "PATCH", keysPath+"/"+id, body, want) }
	patch(map[string]any{"minDecryptionVersion": 4}, 400)
	patch(map[string]any{"minEncryptionVersion": 4}, 400)
	patch(map[string]any{"minDecryptionVersion": 2, "minEncryptionVersion": 1}, 400)
	patch(map[string]any{"minDecryptionVersion": -1}, 400)
	patch(map[string]any{"minDecryptionVersion": 2}, 200)                          // minEncryptionVersion 0: no minimum of its own
	v.op(t, id, "encrypt", map[string]any{"plaintext": "", "key_version": 1}, 400) // below the effective minimum, max(0, 2)
	v.op(t, id, "encrypt", map[string]any{"plaintext": "", "key_version": 2}, 200)
	patch(map[string]any{"minEncryptionVersion": 3}, 200)
	v.op(t, id, "encrypt", map[string]any{"plaintext": "", "key_version": 2}, 400)
	// Decrypt: below minDecryptionVersion is 409; from it up, fine.
	v.op(t, id, "decrypt", map[string]any{"ciphertext": cts[1]}, 409)
	v.op(t, id, "decrypt", map[string]any{"ciphertext": cts[2]}, 200)
	if got := statuses(t, v, id); got != "0:disabled 1:disabled 2:enabled 3:current" {
		t.Errorf("statuses %s", got)
	}
	// Trim: at most the lesser minimum (minDecryptionVersion 2); never back.
	v.op(t, id, "trim", map[string]any{"minAvailableVersion": 3}, 409)
	v.op(t, id, "trim", map[string]any{}, 400)
	got := v.op(t, id, "trim", map[string]any{"minAvailableVersion": 1}, 200)
	if got["minAvailableVersion"] != 1.0 {
		t.Fatalf("trim = %v", got)
	}
	v.op(t, id, "trim", map[string]any{"minAvailableVersion": 0}, 409)
	patch(map[string]any{"minDecryptionVersion": 0}, 400) // below minAvailableVersion
	if got := statuses(t, v, id); got != "0:destroyed 1:disabled 2:enabled 3:current" {
		t.Errorf("statuses after trim %s", got)
	}
	v.op(t, id, "decrypt", map[string]any{"ciphertext": cts[0]}, 409)
	patch(map[string]any{"minDecryptionVersion": 1, "minEncryptionVersion": 0}, 200)
	v.op(t, id, "decrypt", map[string]any{"ciphertext": cts[1]}, 200) // enabled again: trimming stopped below 1
	// The material of trimmed versions is gone from the store.
	vs, err := v.e.Store.ListKeyVersions(t.Context(), v.tn.ID, id)
	if err != nil || vs[0].Material != nil || vs[1].Material == nil {
		t.Fatalf("stored versions after trim: %v", err)
	}
	// Versions by number; an unknown one is 404.
	if ver := v.do(t, "GET", keysPath+"/"+id+"/versions/2", nil, 200); ver["version"] != 2.0 || ver["status"] != "enabled" {
		t.Errorf("version 2 = %v", ver)
	}
	v.do(t, "GET", keysPath+"/"+id+"/versions/9", nil, 404)
	v.do(t, "GET", keysPath+"/"+id+"/versions/x", nil, 400)
	// POST .../versions without wrappedMaterial is a rotation.
	if ver := v.do(t, "POST", keysPath+"/"+id+"/versions", map[string]any{}, 201); ver["version"] != 4.0 {
		t.Errorf("POST versions = %v", ver)
	}
}

// TestVaultVerifyReasons checks verify's answers for versions below the
// minimum (version_disabled) and trimmed (version_destroyed).
func TestVaultVerifyReasons(t *testing.T) {
	v := newVaultEnv(t)
	id := v.create(t, map[string]any{"name": "ed", "algorithm": "ED25519"})
	var sigs []string
	for n := 0; n < 3; n++ {
		if n > 0 {
			v.op(t, id, "rotate", nil, 201)
		}
		sigs = append(sigs, str(v.op(t, id, "sign", map[string]any{"input": b64s("m")}, 200), "signature"))
	}
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"minDecryptionVersion": 2}, 200)
	v.op(t, id, "trim", map[string]any{"minAvailableVersion": 1}, 200)
	for i, want := range []string{"version_destroyed", "version_disabled", ""} {
		got := v.op(t, id, "verify", map[string]any{"input": b64s("m"), "signature": sigs[i]}, 200)
		if str(got, "reason") != want || (got["valid"] == true) != (want == "") || got["key_version"] != float64(i) {
			t.Errorf("verify of version %d = %v, want reason %q", i, got, want)
		}
	}
	v.op(t, id, "verify", map[string]any{"input": b64s("m"), "signature": strings.Replace(sigs[2], "lk:v2:", "lk:v3:", 1)}, 400)
	// The public keys of trimmed versions stay; jwks lists the untrimmed.
	if jwks := v.do(t, "GET", keysPath+"/"+id+"/public?format=jwks", nil, 200); len(jwks["keys"].([]any)) != 2 {
		t.Errorf("jwks = %v", jwks)
	}
	v.do(t, "GET", keysPath+"/"+id+"/public?version=0", nil, 200)
}

// TestVaultPendingRotation checks a rotation with a future activationDate:
// the version is published (pending) and unused until the date, then the
// key's version, at each use to the second.
func TestVaultPendingRotation(t *testing.T) {
	v := newVaultEnv(t)
	id := v.create(t, map[string]any{"name": "ec", "algorithm": "EC", "curve": "P-256"})
	at := latchkeytest.Start.Add(10 * time.Minute)
	ver := v.op(t, id, "rotate", map[string]any{"activationDate": at.Format(time.RFC3339)}, 201)
	if ver["status"] != "pending" || ver["version"] != 1.0 {
		t.Fatalf("rotate = %v", ver)
	}
	k := v.do(t, "GET", keysPath+"/"+id, nil, 200)
	if k["version"] != 0.0 || k["latestVersion"] != 1.0 {
		t.Fatalf("key = %v", k)
	}
	if jwks := v.do(t, "GET", keysPath+"/"+id+"/public?format=jwks", nil, 200); len(jwks["keys"].([]any)) != 2 {
		t.Errorf("the pending version is not published: %v", jwks)
	}
	if got := v.op(t, id, "sign", map[string]any{"input": b64s("m")}, 200); got["key_version"] != 0.0 {
		t.Fatalf("sign before the date used version %v", got["key_version"])
	}
	v.op(t, id, "sign", map[string]any{"input": b64s("m"), "key_version": 1}, 400)
	v.advance(10*time.Minute - time.Second)
	if got := v.op(t, id, "sign", map[string]any{"input": b64s("m")}, 200); got["key_version"] != 0.0 {
		t.Fatal("the pending version was used a second early")
	}
	v.advance(time.Second)
	if got := v.op(t, id, "sign", map[string]any{"input": b64s("m")}, 200); got["key_version"] != 1.0 {
		t.Fatalf("sign at the date used version %v", got["key_version"])
	}
	if got := statuses(t, v, id); got != "0:enabled 1:current" {
		t.Errorf("statuses %s", got)
	}
}

// TestVaultConcurrentRotations rotates one key from many goroutines: each
// call adds exactly one version (compare-and-set on the key).
func TestVaultConcurrentRotations(t *testing.T) {
	v := newVaultEnv(t)
	id := v.create(t, map[string]any{"name": "k", "algorithm": "AES", "size": 128})
	const n = 12
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []int
	)
	for range n {
		wg.Go(func() {
			r := v.e.Do("POST", keysPath+"/"+id+"/rotate", nil, bearer(v.tok))
			if r.Status != 201 {
				t.Errorf("rotate: %d %s", r.Status, r.Body)
				return
			}
			mu.Lock()
			got = append(got, int(r.JSON()["version"].(float64)))
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(got)
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("versions from concurrent rotations: %v", got)
		}
	}
	if k := v.do(t, "GET", keysPath+"/"+id, nil, 200); k["latestVersion"] != float64(n) {
		t.Errorf("latestVersion %v", k["latestVersion"])
	}
}

// TestVaultRotationRefusals: imported, public-only and non-Active keys do
// not rotate; usageMask only narrows; exportable only goes to false.
func TestVaultRotationRefusals(t *testing.T) {
	v := newVaultEnv(t)
	id := v.create(t, map[string]any{"name": "k", "algorithm": "AES", "size": 256, "exportable": true})
	pemKey := v.do(t, "GET", keysPath+"/"+v.create(t, map[string]any{"name": "ed", "algorithm": "ED25519"})+"/public", nil, 200)["publicKey"]
	pub := v.create(t, map[string]any{"name": "pub", "publicKey": pemKey})
	v.op(t, pub, "rotate", nil, 409)
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"usageMask": 124}, 400)
	if got := v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"usageMask": 12}, 200); got["usageMask"] != 12.0 {
		t.Errorf("narrowed usageMask %v", got["usageMask"])
	}
	v.op(t, id, "encrypt", map[string]any{"plaintext": ""}, 200)
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"usageMask": 8}, 200)
	v.op(t, id, "encrypt", map[string]any{"plaintext": ""}, 403)
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"usageMask": 12}, 400) // widening back
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"exportable": true, "unexportable": true}, 400)
	if got := v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"exportable": false}, 200); got["exportable"] != false || got["unexportable"] != true {
		t.Errorf("exportable after PATCH: %v", got)
	}
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"exportable": true}, 409)
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"name": "0b8f3c2e-1d2a-4c5b-9e8f-7a6b5c4d3e2f"}, 400)
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"name": "ed"}, 409)
	if got := v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"name": "renamed", "autoRotatePeriodSeconds": 3600}, 200); got["name"] != "renamed" || got["nextRotationAt"] == nil {
		t.Errorf("PATCH name and period: %v", got)
	}
	v.do(t, "GET", keysPath+"/renamed", nil, 200)
	v.do(t, "PATCH", keysPath+"/"+id, map[string]any{"autoRotatePeriodSeconds": 60}, 400)
	v.do(t, "POST", keysPath, map[string]any{"name": "x", "algorithm": "AES", "size": 256, "exportable": true, "unexportable": true}, 400)
	v.do(t, "POST", keysPath, map[string]any{"name": "x", "algorithm": "AES", "size": 256, "usageMask": 1}, 400)
	v.do(t, "POST", keysPath, map[string]any{"name": "x", "algorithm": "AES", "size": 256, "autoRotatePeriodSeconds": 100}, 400)
	v.do(t, "POST", keysPath, map[string]any{"name": "x", "algorithm": "AES", "size": 256, "activationDate": "tomorrow"}, 400)
	if got := v.do(t, "POST", keysPath, map[string]any{"name": "old", "algorithm": "AES", "size": 256, "unexportable": false}, 201); got["exportable"] != true {
		t.Errorf("keys2's unexportable:false makes an exportable key: %v", got)
	}
	if got := v.do(t, "POST", keysPath, map[string]any{"name": "dflt", "algorithm": "AES", "size": 256}, 201); got["exportable"] != false || got["unexportable"] != true {
		t.Errorf("default exportability: %v", got)
	}
}

// TestVaultAutoRotation runs the rotation pass with the fake clock: a key
// rotates when its period has passed, once however often the pass runs,
// and its next rotation is a period later.
func TestVaultAutoRotation(t *testing.T) {
	v := newVaultEnv(t)
	id := v.create(t, map[string]any{"name": "auto", "algorithm": "EC", "curve": "P-256", "autoRotatePeriodSeconds": 3600})
	v.create(t, map[string]any{"name": "manual", "algorithm": "EC", "curve": "P-256"})
	k := v.do(t, "GET", keysPath+"/"+id, nil, 200)
	if k["nextRotationAt"] != latchkeytest.Start.Add(time.Hour).Format(time.RFC3339) {
		t.Fatalf("nextRotationAt %v", k["nextRotationAt"])
	}
	if n, _ := v.e.Platform.Vault.RotateDue(t.Context()); n != 0 {
		t.Fatalf("the pass handled %d keys before any was due", n)
	}
	v.advance(time.Hour)
	for range 3 {
		if _, err := v.e.Platform.Vault.RotateDue(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	k = v.do(t, "GET", keysPath+"/"+id, nil, 200)
	if k["version"] != 1.0 || k["nextRotationAt"] != latchkeytest.Start.Add(2*time.Hour).Format(time.RFC3339) {
		t.Fatalf("after the period: %v", k)
	}
	rec := lastAuditWhere(t, v.e, v.tn.ID, vault.ActionRotate)
	if rec.ActorID != "system" || rec.Meta["reason"] != "autoRotatePeriodSeconds" {
		t.Errorf("rotation record %+v", rec)
	}
	stored, _ := v.e.Store.GetKey(t.Context(), v.tn.ID, id)
	if !stored.LeaseUntil.IsZero() {
		t.Errorf("the pass kept its lease: %v", stored.LeaseUntil)
	}
	// A deactivated key no longer rotates.
	v.op(t, id, "revoke", map[string]any{"reason": "cessation"}, 200)
	v.advance(2 * time.Hour)
	v.e.Platform.Vault.RotateDue(t.Context())
	if k := v.do(t, "GET", keysPath+"/"+id, nil, 200); k["version"] != 1.0 {
		t.Errorf("a Deactivated key rotated: %v", k)
	}
}

// TestVaultEncryptionCounter: a version whose encryptions reach 2^31 is
// rotated when the counts are stored.
func TestVaultEncryptionCounter(t *testing.T) {
	v := newVaultEnv(t)
	id := v.create(t, map[string]any{"name": "busy", "algorithm": "AES", "size": 256})
	for range 3 {
		v.op(t, id, "encrypt", map[string]any{"plaintext": ""}, 200)
	}
	v.e.Platform.Vault.FlushCounters(t.Context())
	ver, _ := v.e.Store.GetKeyVersion(t.Context(), v.tn.ID, id, 0)
	if ver.Encryptions != 3 {
		t.Fatalf("stored count %d, want 3", ver.Encryptions)
	}
	if _, err := v.e.Store.AddKeyEncryptions(t.Context(), v.tn.ID, id, 0, vault.MaxEncryptionsPerVersion-5); err != nil {
		t.Fatal(err)
	}
	v.op(t, id, "encrypt", map[string]any{"plaintext": ""}, 200)
	v.e.Platform.Vault.FlushCounters(t.Context())
	if k := v.do(t, "GET", keysPath+"/"+id, nil, 200); k["version"] != 0.0 {
		t.Fatalf("rotated at 2^31-1 encryptions: %v", k["version"])
	}
	v.op(t, id, "encrypt", map[string]any{"plaintext": ""}, 200)
	v.e.Platform.Vault.FlushCounters(t.Context())
	if k := v.do(t, "GET", keysPath+"/"+id, nil, 200); k["version"] != 1.0 {
		t.Fatalf("not rotated at 2^31 encryptions: version %v", k["version"])
	}
	if rec := lastAuditWhere(t, v.e, v.tn.ID, vault.ActionRotate); rec.Meta["reason"] != "encryptions" || rec.ActorID != "system" {
		t.Errorf("rotation record %+v", rec)
	}
}
