package httpapi

import (
	"net/http"
	"strconv"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vault"
)

func (s *Server) registerVault() {
	base := s.opts.BaseURL + "/vault/keys2"
	jwt := s.platformJWT()
	s.handle("POST", base, jwt.creating(), s.createVaultKey)
	s.handle("GET", base, jwt, s.listVaultKeys)
	s.handle("GET", base+"/{id}", jwt, s.getVaultKey)
	s.handle("DELETE", base+"/{id}", jwt, s.deleteVaultKey)
}

func (s *Server) createVaultKey(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name         string `json:"name"`
		Algorithm    string `json:"algorithm"`
		Size         int    `json:"size"`
		Curve        string `json:"curve"`
		Unexportable bool   `json:"unexportable"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	spec := vault.KeySpec{Algorithm: req.Algorithm, Size: req.Size, Curve: req.Curve, Unexportable: req.Unexportable}
	k, err := s.p.Vault.CreateKey(r.Context(), principal(r), req.Name, spec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, k)
	return nil
}

func (s *Server) listVaultKeys(w http.ResponseWriter, r *http.Request) error {
	skip, err := queryInt(r, "skip", 0)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 0)
	if err != nil {
		return err
	}
	if r.URL.Query().Has("limit") && limit == 0 {
		return fault.E(fault.Invalid, fault.Field("limit"), "limit must be between 1 and "+strconv.Itoa(vault.MaxListLimit))
	}
	keys, total, q, err := s.p.Vault.ListKeys(r.Context(), principal(r), vault.ListQuery{Skip: skip, Limit: limit, Name: r.URL.Query().Get("name")})
	if err != nil {
		return err
	}
	if keys == nil {
		keys = []vault.Key{} // an empty page is [], whatever the store returns
	}
	writeJSON(w, http.StatusOK, map[string]any{"skip": q.Skip, "limit": q.Limit, "total": total, "resources": keys})
	return nil
}

func (s *Server) getVaultKey(w http.ResponseWriter, r *http.Request) error {
	k, err := s.p.Vault.GetKey(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, k)
	return nil
}

func (s *Server) deleteVaultKey(w http.ResponseWriter, r *http.Request) error {
	if err := s.p.Vault.DeleteKey(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
