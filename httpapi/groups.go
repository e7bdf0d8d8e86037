package httpapi

import (
	"net/http"

	"github.com/latchkey/latchkey/identity"
)

// Directory groups (provisioned through SCIM) as an administrator sees
// them: the one place they are mapped to roles.
func (s *Server) registerGroups() {
	admin := s.platformJWT()
	base := s.opts.BaseURL + "/admin/tenants/{tenantId}/groups/{groupId}"
	s.handle("GET", base, admin, s.getGroup)
	s.handle("PATCH", base, admin, s.patchGroup)
}

// groupView is a group in the admin API.
type groupView struct {
	ID          string   `json:"id"`
	DisplayName string   `json:"displayName"`
	ExternalID  string   `json:"externalId,omitempty"`
	Roles       []string `json:"roles"`
}

func viewGroup(g identity.Group) groupView {
	roles := g.Roles
	if roles == nil {
		roles = []string{}
	}
	return groupView{ID: g.ID, DisplayName: g.DisplayName, ExternalID: g.ExternalID, Roles: roles}
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	g, err := s.p.Identity.GetGroup(r.Context(), principal(r), id, r.PathValue("groupId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewGroup(g))
	return nil
}

func (s *Server) patchGroup(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	var in struct {
		Roles *[]string `json:"roles"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	var roles []string // nil: refused by the service, which audits it
	if in.Roles != nil {
		roles = append([]string{}, *in.Roles...)
	}
	g, err := s.p.Identity.SetGroupRoles(r.Context(), principal(r), id, r.PathValue("groupId"), roles)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewGroup(g))
	return nil
}
