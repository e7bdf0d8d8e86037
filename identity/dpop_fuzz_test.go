package identity_test

import (
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/identity"
)

// FuzzDPoPProof feeds arbitrary DPoP headers to the token endpoint's
// proof check: it never panics, and a proof is either accepted or refused
// as invalid_dpop_proof, never with another error.
func FuzzDPoPProof(f *testing.F) {
	f.Add(rfc9449Proof)
	f.Add("")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add(`{"payload":"e30","signatures":[]}`)
	e := newEnv(f, time.Unix(1562262616, 0))
	s := e.service(f, "https://server.example.com", false)
	_, id, secret := e.client(f, s, "ACME000001")
	f.Fuzz(func(t *testing.T, proof string) {
		_, err := s.Grant(t.Context(), identity.TokenRequest{ClientID: id, ClientSecret: secret,
			DPoP: &identity.DPoPRequest{Proof: proof, Method: "POST", URLs: []string{"https://server.example.com/token"}}})
		if err != nil && !errors.Is(err, identity.ErrInvalidDPoPProof) {
			t.Fatalf("proof %q: %v, want nil or invalid_dpop_proof", proof, err)
		}
	})
}
