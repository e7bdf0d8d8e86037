package pki_test

import (
	"testing"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/pki"
)

// FuzzParseCSR checks that ParseCSR never panics on outside input, that it
// returns either a CSR or an error and never both, that every refusal is a
// fault.Invalid error about field "csr", and that an accepted CSR has a valid
// signature and a key that SubjectFor and Sign accept. Seeds, including CSRs
// made by openssl, are in testdata/fuzz/FuzzParseCSR.
func FuzzParseCSR(f *testing.F) {
	f.Add("-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n")
	ca := mustCA(f, "fuzz CA")
	f.Fuzz(func(t *testing.T, in string) {
		csr, err := pki.ParseCSR(in)
		if err != nil {
			if csr != nil {
				t.Fatalf("ParseCSR returned a CSR and an error: %v", err)
			}
			if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "csr" || fault.MessageOf(err) == "" {
				t.Fatalf("refusal is not an invalid-csr fault with a message: %v", err)
			}
			return
		}
		if csr == nil {
			t.Fatal("ParseCSR returned neither a CSR nor an error")
		}
		if err := csr.CheckSignature(); err != nil {
			t.Fatalf("accepted CSR has a bad signature: %v", err)
		}
		subject, err := pki.SubjectFor(csr, "client", pki.SubjectFieldUID, false)
		if err != nil {
			t.Fatalf("SubjectFor refused an accepted CSR: %v", err)
		}
		if _, _, err := ca.Sign(csr, subject, t0, t0.Add(time.Hour)); err != nil {
			t.Fatalf("Sign refused an accepted CSR: %v", err)
		}
	})
}
