package httpapi

import (
	"net/http"
	"time"

	"github.com/latchkey/latchkey/identity"
)

// registerHashKeys registers a tenant's password-hash keys (Firebase's
// hash config, API-cli.md): the signer key goes in, sealed, and never
// comes out.
func (s *Server) registerHashKeys() {
	base := s.opts.BaseURL + "/admin/tenants/{tenantId}/password-hash-keys"
	admin := s.platformJWT()
	s.handle("GET", base, admin, s.listHashKeys)
	s.handle("PUT", base+"/{name}", admin, s.putHashKey)
	s.handle("GET", base+"/{name}", admin, s.getHashKey)
	s.handle("DELETE", base+"/{name}", admin, s.deleteHashKey)
}

type hashKeyJSON struct {
	Name          string    `json:"name"`
	Algorithm     string    `json:"algorithm"`
	SaltSeparator []byte    `json:"saltSeparator"`
	Rounds        int       `json:"rounds"`
	MemCost       int       `json:"memCost"`
	CreatedAt     time.Time `json:"createdAt"`
}

func hashKeyOf(k identity.PasswordHashKey) hashKeyJSON {
	return hashKeyJSON{Name: k.Name, Algorithm: k.Algorithm, SaltSeparator: nonNilList(k.SaltSeparator), Rounds: k.Rounds, MemCost: k.MemCost, CreatedAt: k.CreatedAt}
}

func (s *Server) putHashKey(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var req struct {
		Algorithm     string `json:"algorithm"`
		SignerKey     []byte `json:"signerKey"`
		SaltSeparator []byte `json:"saltSeparator"`
		Rounds        int    `json:"rounds"`
		MemCost       int    `json:"memCost"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	k := identity.FirebaseKey{SignerKey: req.SignerKey, SaltSeparator: req.SaltSeparator, Rounds: req.Rounds, MemCost: req.MemCost}
	if err := s.p.Identity.PutPasswordHashKey(r.Context(), principal(r), id, r.PathValue("name"), req.Algorithm, k); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listHashKeys(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	ks, err := s.p.Identity.ListPasswordHashKeys(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	out := make([]hashKeyJSON, len(ks))
	for i, k := range ks {
		out[i] = hashKeyOf(k)
	}
	writeJSON(w, http.StatusOK, map[string]any{"resources": out})
	return nil
}

func (s *Server) getHashKey(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	k, err := s.p.Identity.GetPasswordHashKey(r.Context(), principal(r), id, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, hashKeyOf(k))
	return nil
}

func (s *Server) deleteHashKey(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	if err := s.p.Identity.DeletePasswordHashKey(r.Context(), principal(r), id, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
