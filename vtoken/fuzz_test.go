package vtoken_test

import (
	"crypto/rsa"
	"os"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vtoken"
)

// FuzzParsePFX feeds arbitrary files to the PFX parser: it must never
// panic, refuse with fault.Invalid and nothing half-filled, and accept only
// an RSA key within the limit that matches its certificate. Seeds: every
// openssl fixture of testdata.
func FuzzParsePFX(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.pfx"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, fixturePassword, true)
		f.Add(b, "", false)
	}
	f.Fuzz(func(t *testing.T, pfx []byte, password string, v2 bool) {
		max := 2048
		if v2 {
			max = 4096
		}
		got, err := vtoken.ParsePFX(pfx, password, max)
		if err != nil {
			if !fault.Is(fault.Invalid, err) {
				t.Fatalf("error of kind %v: %v", fault.KindOf(err), err)
			}
			if got.Key != nil || got.Leaf != nil || got.Chain != nil {
				t.Fatalf("refused PFX returned content: %+v", got)
			}
			return
		}
		pub, ok := got.Leaf.PublicKey.(*rsa.PublicKey)
		if !ok || !got.Key.PublicKey.Equal(pub) {
			t.Fatal("accepted a leaf that does not match the key")
		}
		if bits := got.Key.N.BitLen(); bits < vtoken.MinKeySize || bits > max {
			t.Fatalf("accepted a %d-bit key with limit %d", bits, max)
		}
		if password == "" {
			t.Fatal("accepted an empty password")
		}
	})
}
