package vtoken_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/vtoken"
)

func wantKind(t *testing.T, what string, err error, k fault.Kind) {
	t.Helper()
	if !fault.Is(k, err) {
		t.Errorf("%s: err = %v, want kind %v", what, err, k)
	}
}

func TestPFXFixtures(t *testing.T) {
	tests := []struct {
		file, password string
		maxKeySize     int
		wantSerials    []string // leaf first; nil when refused
		wantMsg        string   // part of the refusal's message
	}{
		{"rsa2048-modern.pfx", fixturePassword, 2048, []string{"0A2048"}, ""},
		{"rsa2048-legacy.pfx", fixturePassword, 2048, []string{"0A2048"}, ""},
		{"rsa4096-modern.pfx", fixturePassword, 4096, []string{"0B4096"}, ""},
		{"rsa4096-legacy.pfx", fixturePassword, 4096, []string{"0B4096"}, ""},
		{"rsa4096-modern.pfx", fixturePassword, 2048, nil, "4096-bit RSA key: this token holds RSA keys of 2048 to 2048 bits"},
		{"rsa2048-modern.pfx", "wrong-password", 2048, nil, "password is wrong"},
		{"rsa2048-legacy.pfx", "wrong-password", 2048, nil, "password is wrong"},
		{"rsa2048-modern.pfx", "", 2048, nil, "password is required"},
		{"nopass.pfx", "any-password", 2048, nil, "PFX has no password"},
		{"ec.pfx", fixturePassword, 4096, nil, "RSA keys only"},
		{"mismatch.pfx", fixturePassword, 4096, nil, "does not match its private key"},
		{"chain.pfx", fixturePassword, 2048, []string{"ABCDEF0123", "1001"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.file+"/"+tc.password+"/"+string(rune('0'+tc.maxKeySize/1024)), func(t *testing.T) {
			got, err := vtoken.ParsePFX(readFixture(t, tc.file), tc.password, tc.maxKeySize)
			if tc.wantSerials == nil {
				wantKind(t, "ParsePFX", err, fault.Invalid)
				if err == nil || !strings.Contains(fault.MessageOf(err), tc.wantMsg) {
					t.Errorf("message = %q, want it to contain %q", fault.MessageOf(err), tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePFX: %v", err)
			}
			serials := []string{vtoken.SerialHex(got.Leaf)}
			for _, c := range got.Chain {
				serials = append(serials, vtoken.SerialHex(c))
			}
			if d := cmp.Diff(tc.wantSerials, serials[:len(tc.wantSerials)]); d != "" {
				t.Errorf("serials (-want +got):\n%s", d)
			}
			if !got.Key.PublicKey.Equal(got.Leaf.PublicKey) {
				t.Error("leaf does not match the key")
			}
		})
	}
}

// selfSigned returns a key of bits and a self-signed certificate for it.
func selfSigned(t testing.TB, bits int, serial int64) (*rsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "generated"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return k, c
}

func TestPFXGenerated(t *testing.T) {
	k3072, c3072 := selfSigned(t, 3072, 0x3072)
	k1024, c1024 := selfSigned(t, 1024, 0x1024)
	enc := func(enc *pkcs12.Encoder, k *rsa.PrivateKey, c *x509.Certificate, ca []*x509.Certificate, pw string) []byte {
		b, err := enc.Encode(k, c, ca, pw)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// A chain listed before the leaf: the leaf is the certificate matching the key.
	kca, cca := selfSigned(t, 2048, 0xCA)
	_ = kca
	reordered := enc(pkcs12.Modern, k3072, cca, []*x509.Certificate{c3072}, "pw-3072")

	if _, err := vtoken.ParsePFX(enc(pkcs12.Modern2026, k3072, c3072, nil, "pw-3072"), "pw-3072", 4096); err != nil {
		t.Errorf("3072-bit modern PFX for a V2.0 token: %v", err)
	}
	if _, err := vtoken.ParsePFX(enc(pkcs12.LegacyRC2, k3072, c3072, nil, "pw-3072"), "pw-3072", 4096); err != nil {
		t.Errorf("3072-bit legacy RC2 PFX for a V2.0 token: %v", err)
	}
	_, err := vtoken.ParsePFX(enc(pkcs12.Modern, k3072, c3072, nil, "pw-3072"), "pw-3072", 2048)
	wantKind(t, "3072-bit key in a V1.0 token", err, fault.Invalid)
	_, err = vtoken.ParsePFX(enc(pkcs12.Modern, k1024, c1024, nil, "pw-1024"), "pw-1024", 4096)
	wantKind(t, "1024-bit key", err, fault.Invalid)
	_, err = vtoken.ParsePFX(enc(pkcs12.Passwordless, k3072, c3072, nil, ""), "something", 4096)
	if !strings.Contains(fault.MessageOf(err), "no password") {
		t.Errorf("passwordless PFX: %v", err)
	}
	got, err := vtoken.ParsePFX(reordered, "pw-3072", 4096)
	if err != nil {
		t.Fatalf("chain before leaf: %v", err)
	}
	if vtoken.SerialHex(got.Leaf) != "3072" || len(got.Chain) != 1 || vtoken.SerialHex(got.Chain[0]) != "CA" {
		t.Errorf("chain before leaf: leaf %s chain %d", vtoken.SerialHex(got.Leaf), len(got.Chain))
	}
	// A file asking for more key-derivation iterations than allowed is
	// refused before any derivation runs.
	costly, err := pkcs12.Modern.WithIterations(vtoken.MaxPBEIterations+1).Encode(k3072, c3072, nil, "pw")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = vtoken.ParsePFX(costly, "pw", 4096)
	if !strings.Contains(fault.MessageOf(err), "key-derivation iterations") {
		t.Errorf("PFX with %d iterations: %v", vtoken.MaxPBEIterations+1, err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("refusing the costly PFX took %v: the iterations ran", d)
	}
	for _, junk := range [][]byte{nil, []byte("not a pfx"), readFixture(t, "rsa2048-modern.pfx")[:500]} {
		_, err := vtoken.ParsePFX(junk, "pw", 4096)
		wantKind(t, "junk", err, fault.Invalid)
	}
}

func TestTokenLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	v1 := f.newToken(t, vtoken.V1)
	f.e.Clock.Advance(time.Second)
	v2 := f.newToken(t, vtoken.V2)

	l1, err := f.svc.ListTokens(ctx, f.key, f.ref(""), vtoken.V1)
	if err != nil || len(l1) != 1 || l1[0].ID != v1 {
		t.Errorf("V1.0 list = %v, %v; want only %s", l1, err, v1)
	}
	l2, err := f.svc.ListTokens(ctx, f.key, f.ref(""), vtoken.V2)
	if err != nil || len(l2) != 2 || l2[0].ID != v1 || l2[1].ID != v2 || l2[1].MaxKeySize != 4096 || l2[0].MaxKeySize != 2048 {
		t.Errorf("V2.0 list = %+v, %v", l2, err)
	}

	// A V1.0 token holds 2048-bit keys only; a V2.0 token 4096 too.
	pfx4096 := readFixture(t, "rsa4096-modern.pfx")
	_, err = f.svc.ImportPFX(ctx, f.key, f.ref(v1), vtoken.Bytes(pfx4096), vtoken.PINInput{Text: fixturePassword})
	wantKind(t, "4096-bit key in a V1.0 token", err, fault.Invalid)
	serials, err := f.svc.ImportPFX(ctx, f.key, f.ref(v2), vtoken.Bytes(pfx4096), vtoken.PINInput{Text: fixturePassword})
	if err != nil || len(serials) != 1 || serials[0] != "0B4096" {
		t.Errorf("import 4096 into V2.0 = %v, %v", serials, err)
	}
	serials, err = f.svc.ImportPFX(ctx, f.key, f.ref(v1), vtoken.Bytes(readFixture(t, "chain.pfx")), vtoken.PINInput{Text: fixturePassword})
	if err != nil || len(serials) != 3 || serials[0] != "ABCDEF0123" || serials[1] != "1001" {
		t.Fatalf("import chain = %v, %v", serials, err)
	}
	certs, err := f.svc.Certificates(ctx, f.key, f.ref(v1))
	if err != nil || len(certs) != 3 {
		t.Fatalf("certificates = %d, %v", len(certs), err)
	}
	leaf := certs[0].Record()
	if leaf.SerialNumber != "ABCDEF0123" || !leaf.HasPrivateKey || leaf.KeyAlgorithm != "RSA" || leaf.KeySize != 2048 ||
		leaf.Subject != "CN=Token User,O=Latchkey" || leaf.Issuer != "CN=Latchkey Test Intermediate" || len(leaf.Thumbprint) != 40 ||
		leaf.Thumbprint != strings.ToUpper(leaf.Thumbprint) {
		t.Errorf("leaf record = %+v", leaf)
	}
	if certs[1].Record().HasPrivateKey || certs[2].Record().HasPrivateKey {
		t.Error("chain certificates have private keys")
	}
	// The private key is sealed: the stored bytes are not the PKCS#8 key.
	der, _ := x509.MarshalPKCS8PrivateKey(mustLeafKey(t))
	if len(certs[0].PrivateKey) == 0 || strings.Contains(string(certs[0].PrivateKey), string(der[40:80])) {
		t.Error("private key stored in the clear")
	}

	// Labels: 1 to 32 characters.
	for _, bad := range []string{"", strings.Repeat("x", 33), "tab\there"} {
		wantKind(t, "label "+bad, f.svc.SetLabel(ctx, f.key, f.ref(v1), bad), fault.Invalid)
	}
	if err := f.svc.SetLabel(ctx, f.key, f.ref(v1), strings.Repeat("é", 32)); err != nil {
		t.Errorf("32-character label: %v", err)
	}

	// Complete: then no more imports or label changes (409), completing twice is 409.
	if err := f.svc.Complete(ctx, f.key, f.ref(v1)); err != nil {
		t.Fatal(err)
	}
	wantKind(t, "complete twice", f.svc.Complete(ctx, f.key, f.ref(v1)), fault.Conflict)
	wantKind(t, "label after complete", f.svc.SetLabel(ctx, f.key, f.ref(v1), "late"), fault.Conflict)
	_, err = f.svc.ImportPFX(ctx, f.key, f.ref(v1), vtoken.Bytes(readFixture(t, "rsa2048-modern.pfx")), vtoken.PINInput{Text: fixturePassword})
	wantKind(t, "import after complete", err, fault.Conflict)
	l2, _ = f.svc.ListTokens(ctx, f.key, f.ref(""), vtoken.V2)
	if l2[0].State != vtoken.StateComplete || l2[0].CertificateCount != 3 || l2[0].Label != strings.Repeat("é", 32) {
		t.Errorf("listed token after complete = %+v", l2[0])
	}

	// Delete removes the token and its certificates.
	if err := f.svc.DeleteToken(ctx, f.key, f.ref(v1)); err != nil {
		t.Fatal(err)
	}
	wantKind(t, "delete twice", f.svc.DeleteToken(ctx, f.key, f.ref(v1)), fault.NotFound)
	_, err = f.svc.Certificates(ctx, f.key, f.ref(v1))
	wantKind(t, "certificates of a deleted token", err, fault.NotFound)

	if n := len(f.records(t, vtoken.ActionImport)); n != 4 {
		t.Errorf("import audit records = %d, want 4 (2 failed, 2 succeeded)", n)
	}
	for _, r := range f.records(t, vtoken.ActionComplete) {
		if r.Status == "failed" && r.Meta["errorMessage"] == nil {
			t.Errorf("failed record without errorMessage: %+v", r)
		}
	}
}

// mustLeafKey returns the key of chain.pfx.
func mustLeafKey(t *testing.T) *rsa.PrivateKey {
	p, err := vtoken.ParsePFX(readFixture(t, "chain.pfx"), fixturePassword, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return p.Key
}

func TestTokenLimitPerUser(t *testing.T) {
	f := newFixture(t)
	for range vtoken.MaxTokensPerUser {
		f.newToken(t, vtoken.V2)
	}
	_, err := f.svc.CreateToken(t.Context(), f.key, f.ref(""), vtoken.V1)
	wantKind(t, "token over the limit", err, fault.Conflict)
}

// The limit is the tenant's maxTokensPerUser setting: raised, the user
// may hold more; lowered below what a user holds, no more.
func TestTokenLimitIsTenantSetting(t *testing.T) {
	f := newFixture(t)
	setLimit := func(n int) {
		t.Helper()
		r := f.e.Do("PATCH", "/api/v1/admin/tenants/"+f.tenant.ID+"/settings", map[string]any{"maxTokensPerUser": n}, "Authorization: Bearer "+f.tenant.AdminToken)
		if r.Status != 200 || r.JSON()["settings"].(map[string]any)["maxTokensPerUser"] != float64(n) {
			t.Fatalf("set maxTokensPerUser %d: %d %s", n, r.Status, r.Body)
		}
	}
	setLimit(2)
	f.newToken(t, vtoken.V1)
	f.newToken(t, vtoken.V1)
	_, err := f.svc.CreateToken(t.Context(), f.key, f.ref(""), vtoken.V1)
	wantKind(t, "third token with a limit of 2", err, fault.Conflict)
	setLimit(vtoken.MaxTokensPerUser + 1)
	for range vtoken.MaxTokensPerUser - 1 {
		f.newToken(t, vtoken.V2)
	}
	_, err = f.svc.CreateToken(t.Context(), f.key, f.ref(""), vtoken.V1)
	wantKind(t, "token over the raised limit", err, fault.Conflict)
	for _, bad := range []int{0, -1, identity.MaxTokensPerUserLimit + 1} {
		r := f.e.Do("PATCH", "/api/v1/admin/tenants/"+f.tenant.ID+"/settings", map[string]any{"maxTokensPerUser": bad}, "Authorization: Bearer "+f.tenant.AdminToken)
		if r.Status != 400 {
			t.Errorf("maxTokensPerUser %d: %d, want 400", bad, r.Status)
		}
	}
}

func TestAccess(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tok := f.newToken(t, vtoken.V1)
	other := f.e.NewTenant("other")
	otherKey := identity.Principal{Kind: identity.KindAPIKey, TenantID: other.ID, Areas: []string{identity.AreaProvisioning}}
	noArea := f.key
	noArea.Areas = []string{identity.AreaAuthenticator}
	bound := f.key
	bound.UserID = newUser(t, f.e, f.tenant, "bob")

	_, err := f.svc.ExchangeKey(ctx, otherKey, f.tenant.ID)
	wantKind(t, "exchange key of another tenant", err, fault.Unauthenticated)
	_, err = f.svc.ListTokens(ctx, otherKey, f.ref(""), vtoken.V2)
	wantKind(t, "list with another tenant's key", err, fault.Unauthenticated)
	_, err = f.svc.ListTokens(ctx, noArea, f.ref(""), vtoken.V2)
	wantKind(t, "key without the provisioning area", err, fault.Unauthenticated)
	_, err = f.svc.ListTokens(ctx, bound, f.ref(""), vtoken.V2)
	wantKind(t, "key bound to another user", err, fault.Unauthenticated)
	wantKind(t, "delete with another tenant's key", f.svc.DeleteToken(ctx, otherKey, f.ref(tok)), fault.Unauthenticated)

	// A key of the other tenant naming its own tenant but our user and token: 404.
	r := vtoken.Ref{TenantID: other.ID, UserID: f.user, TokenID: tok}
	_, err = f.svc.Certificates(ctx, otherKey, r)
	wantKind(t, "our token through another tenant", err, fault.NotFound)
	for _, bad := range []vtoken.Ref{
		{TenantID: f.tenant.ID, UserID: identity.NewObjectID().String(), TokenID: tok},
		{TenantID: f.tenant.ID, UserID: f.user, TokenID: identity.NewGUID()},
		{TenantID: f.tenant.ID, UserID: f.user, TokenID: "not-a-guid"},
	} {
		_, err := f.svc.Certificates(ctx, f.key, bad)
		wantKind(t, "unknown user or token", err, fault.NotFound)
	}
	_, err = f.svc.Certificates(ctx, f.key, vtoken.Ref{TenantID: f.tenant.ID, UserID: "not-an-id", TokenID: tok})
	wantKind(t, "malformed user id", err, fault.Invalid)
	_, err = f.svc.ExchangeKey(ctx, f.key, identity.NewGUID())
	wantKind(t, "unknown tenant", err, fault.NotFound)
	// The user id in hex is the same user.
	id, _ := identity.ParseObjectID(f.user, "")
	if _, err := f.svc.Certificates(ctx, f.key, vtoken.Ref{TenantID: f.tenant.ID, UserID: id.Hex(), TokenID: tok}); err != nil {
		t.Errorf("hex user id: %v", err)
	}
	// Another user's token is not found through this user.
	bob := vtoken.Ref{TenantID: f.tenant.ID, UserID: bound.UserID, TokenID: tok}
	_, err = f.svc.Certificates(ctx, bound, bob)
	wantKind(t, "alice's token through bob", err, fault.NotFound)
}

func TestPINs(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tok := f.newToken(t, vtoken.V1)
	ref := f.ref(tok)
	adminPIN := strings.Repeat("0a1B", 12)
	for _, tc := range []struct {
		role, pin string
		kind      fault.Kind // 0 = ok
	}{
		{"User", "1234567", fault.Invalid},
		{"User", "12345678", 0},
		{"User", strings.Repeat("x", 25), 0},
		{"User", strings.Repeat("x", 26), fault.Invalid},
		{"Admin", adminPIN, 0},
		{"Admin", adminPIN[:47], fault.Invalid},
		{"Admin", strings.Repeat("g", 48), fault.Invalid},
		{"user", "12345678", fault.NotFound},
		{"SO", adminPIN, fault.NotFound},
	} {
		err := f.svc.ResetPIN(ctx, f.key, ref, tc.role, vtoken.PINInput{Text: tc.pin})
		if tc.kind == 0 && err != nil {
			t.Errorf("ResetPIN(%s, %q) = %v", tc.role, tc.pin, err)
		} else if tc.kind != 0 {
			wantKind(t, "ResetPIN "+tc.role+" "+tc.pin, err, tc.kind)
		}
	}
	stored, err := f.e.Store.GetToken(ctx, f.tenant.ID, f.user, tok)
	if err != nil || !strings.HasPrefix(stored.User.Hash, "$argon2id$") || !strings.HasPrefix(stored.Admin.Hash, "$argon2id$") {
		t.Fatalf("stored PIN hashes: %q %q %v", stored.User.Hash, stored.Admin.Hash, err)
	}

	user := strings.Repeat("x", 25)
	change := func(cur, next string) error {
		return f.svc.ChangePIN(ctx, f.key, ref, vtoken.RoleUser, vtoken.PINInput{Text: cur}, vtoken.PINInput{Text: next})
	}
	if err := change(user, "new-user-pin"); err != nil {
		t.Fatalf("ChangePIN: %v", err)
	}
	wantKind(t, "old password after change", change(user, "other-pin-1"), fault.Invalid)
	wantKind(t, "bad new password", change("new-user-pin", "short"), fault.Invalid)
	if err := change("new-user-pin", "new-user-pin"); err != nil { // resets the count
		t.Fatal(err)
	}
	// A right password resets the count: 4 wrong, 1 right, 4 wrong stays unlocked.
	for range vtoken.MaxPINFailures - 1 {
		wantKind(t, "wrong", change("wrong-pin-1", "other-pin-1"), fault.Invalid)
	}
	if err := change("new-user-pin", "new-user-pin"); err != nil {
		t.Fatalf("right password after failures: %v", err)
	}
	for range vtoken.MaxPINFailures - 1 {
		wantKind(t, "wrong", change("wrong-pin-1", "other-pin-1"), fault.Invalid)
	}
	// The fifth wrong one in a row locks the role, even for the right password.
	wantKind(t, "fifth wrong", change("wrong-pin-1", "other-pin-1"), fault.Invalid)
	err = change("new-user-pin", "other-pin-1")
	wantKind(t, "locked", err, fault.TooManyRequests)
	if !strings.Contains(fault.MessageOf(err), "try again in 900 seconds") {
		t.Errorf("locked message = %q", fault.MessageOf(err))
	}
	if n := len(f.records(t, vtoken.ActionPINLocked)); n != 1 {
		t.Errorf("lock audit records = %d, want 1", n)
	}
	// Admin role is not locked by the User role's failures; the Admin
	// password is hexadecimal, so its case does not matter.
	if err := f.svc.ChangePIN(ctx, f.key, ref, vtoken.RoleAdmin, vtoken.PINInput{Text: strings.ToUpper(adminPIN)}, vtoken.PINInput{Text: strings.Repeat("f", 48)}); err != nil {
		t.Errorf("Admin ChangePIN while User locked: %v", err)
	}
	if err := f.svc.ChangePIN(ctx, f.key, ref, vtoken.RoleAdmin, vtoken.PINInput{Text: strings.Repeat("F", 48)}, vtoken.PINInput{Text: adminPIN}); err != nil {
		t.Errorf("Admin ChangePIN in upper case: %v", err)
	}
	f.e.Clock.Advance(vtoken.PINLockout)
	if err := change("new-user-pin", "after-lock-1"); err != nil {
		t.Errorf("after the lockout: %v", err)
	}
	// Reset unlocks too.
	for range vtoken.MaxPINFailures {
		change("wrong-pin-1", "other-pin-1")
	}
	wantKind(t, "locked again", change("after-lock-1", "x-pin-1234"), fault.TooManyRequests)
	if err := f.svc.ResetPIN(ctx, f.key, ref, vtoken.RoleUser, vtoken.PINInput{Text: "reset-pin-1"}); err != nil {
		t.Fatal(err)
	}
	if err := change("reset-pin-1", "x-pin-1234"); err != nil {
		t.Errorf("after reset: %v", err)
	}
	// Without a current password, ChangePin is the specification's: the
	// same body and header as ResetPin, and it does what ResetPin does,
	// locked role included; the new password is still checked.
	for range vtoken.MaxPINFailures {
		change("wrong-pin-1", "other-pin-1")
	}
	wantKind(t, "locked before a change without the current password", change("x-pin-1234", "z-pin-1234"), fault.TooManyRequests)
	wantKind(t, "bad new password, no current one", change("", "short"), fault.Invalid)
	if err := change("", "y-pin-1234"); err != nil {
		t.Fatalf("change without the current password: %v", err)
	}
	if err := change("y-pin-1234", "z-pin-1234"); err != nil {
		t.Errorf("the password set without the current one: %v", err)
	}
	if recs := f.records(t, vtoken.ActionChangePIN); len(recs) == 0 || recs[len(recs)-1].Meta["verified"] != true {
		t.Errorf("last change audit = %+v, want verified true", recs)
	}
	// A role never set: ChangePin with a current password is 409 (reset
	// it first); without one it sets it.
	tok2 := f.newToken(t, vtoken.V1)
	err = f.svc.ChangePIN(ctx, f.key, f.ref(tok2), vtoken.RoleUser, vtoken.PINInput{Text: "whatever-1"}, vtoken.PINInput{Text: "new-pin-123"})
	wantKind(t, "change without a password", err, fault.Conflict)
	if err := f.svc.ChangePIN(ctx, f.key, f.ref(tok2), vtoken.RoleUser, vtoken.PINInput{}, vtoken.PINInput{Text: "new-pin-123"}); err != nil {
		t.Errorf("first password through ChangePin without a current one: %v", err)
	}
}

func TestEncryptedPasswords(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tok := f.newToken(t, vtoken.V1)
	pub, err := f.svc.ExchangeKey(ctx, f.key, f.tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := f.svc.ExchangeKey(ctx, f.key, f.tenant.ID)
	if pub != again || pub.KeyType != "RSA" {
		t.Fatalf("exchange key changed or wrong type: %+v %+v", pub, again)
	}
	n, _ := base64.StdEncoding.DecodeString(pub.Modulus)
	e, _ := base64.StdEncoding.DecodeString(pub.Exponent)
	key := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	if key.N.BitLen() != 2048 || key.E != 65537 {
		t.Fatalf("exchange key %d bits, e=%d", key.N.BitLen(), key.E)
	}
	encrypt := func(s string) string {
		ct, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, key, []byte(s), nil)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(ct)
	}
	serials, err := f.svc.ImportPFX(ctx, f.key, f.ref(tok), vtoken.Bytes(readFixture(t, "rsa2048-legacy.pfx")), vtoken.PINInput{Text: encrypt(fixturePassword), Encrypted: true})
	if err != nil || len(serials) != 1 {
		t.Fatalf("import with an encrypted password: %v %v", serials, err)
	}
	if err := f.svc.ResetPIN(ctx, f.key, f.ref(tok), vtoken.RoleUser, vtoken.PINInput{Text: encrypt("enc-user-pin"), Encrypted: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.ChangePIN(ctx, f.key, f.ref(tok), vtoken.RoleUser, vtoken.PINInput{Text: "enc-user-pin"}, vtoken.PINInput{Text: "plain-pin-2"}); err != nil {
		t.Errorf("the decrypted password is the one set: %v", err)
	}
	// A ciphertext under another key, bad base64, or a plain password flagged encrypted: 400.
	otherKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	foreign, _ := rsa.EncryptOAEP(sha256.New(), rand.Reader, &otherKey.PublicKey, []byte(fixturePassword), nil)
	sha1ct, _ := rsa.EncryptPKCS1v15(rand.Reader, key, []byte(fixturePassword))
	for _, bad := range []string{base64.StdEncoding.EncodeToString(foreign), "!!not base64!!", fixturePassword,
		base64.StdEncoding.EncodeToString(sha1ct), strings.Repeat("A", 5000), ""} {
		_, err := f.svc.ImportPFX(ctx, f.key, f.ref(tok), vtoken.Bytes(readFixture(t, "rsa2048-modern.pfx")), vtoken.PINInput{Text: bad, Encrypted: true})
		wantKind(t, "bad ciphertext", err, fault.Invalid)
		wantKind(t, "bad ciphertext on reset", f.svc.ResetPIN(ctx, f.key, f.ref(tok), vtoken.RoleUser, vtoken.PINInput{Text: bad, Encrypted: true}), fault.Invalid)
	}
}

func TestSign(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tok := f.newToken(t, vtoken.V2)
	if _, err := f.svc.ImportPFX(ctx, f.key, f.ref(tok), vtoken.Bytes(readFixture(t, "chain.pfx")), vtoken.PINInput{Text: fixturePassword}); err != nil {
		t.Fatal(err)
	}
	data := []byte("document to sign")
	req := vtoken.SignRequest{Algorithm: "RS256", Data: data, Password: vtoken.PINInput{Text: "user-pin-1"}}
	_, err := f.svc.Sign(ctx, f.key, f.ref(tok), req)
	wantKind(t, "sign without a User password set", err, fault.Conflict)
	if err := f.svc.ResetPIN(ctx, f.key, f.ref(tok), vtoken.RoleUser, vtoken.PINInput{Text: "user-pin-1"}); err != nil {
		t.Fatal(err)
	}
	leafKey := mustLeafKey(t)
	digest := sha256.Sum256(data)
	for _, alg := range []string{"RS256", "PS256"} {
		req.Algorithm = alg
		sig, err := f.svc.Sign(ctx, f.key, f.ref(tok), req)
		if err != nil {
			t.Fatalf("Sign %s: %v", alg, err)
		}
		if alg == "RS256" {
			err = rsa.VerifyPKCS1v15(&leafKey.PublicKey, crypto.SHA256, digest[:], sig)
		} else {
			err = rsa.VerifyPSS(&leafKey.PublicKey, crypto.SHA256, digest[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		}
		if err != nil {
			t.Errorf("%s signature does not verify: %v", alg, err)
		}
	}
	req.SerialNumber = "1001" // a chain certificate: no key
	_, err = f.svc.Sign(ctx, f.key, f.ref(tok), req)
	wantKind(t, "sign with a chain certificate", err, fault.NotFound)
	req.SerialNumber = "abcdef0123"
	req.Algorithm = "ES256"
	_, err = f.svc.Sign(ctx, f.key, f.ref(tok), req)
	wantKind(t, "unsupported algorithm", err, fault.Invalid)
	req.Algorithm = "RS512"
	req.Password.Text = "wrong-pin-1"
	_, err = f.svc.Sign(ctx, f.key, f.ref(tok), req)
	wantKind(t, "wrong User password", err, fault.Invalid)
	if n := len(f.records(t, vtoken.ActionSign)); n != 6 {
		t.Errorf("sign audit records = %d, want 6", n)
	}
}
