package httpapi

import (
	"net/http"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// registerAdminLists registers the administration lists the latchkey
// command reads (API-cli.md): tenants, users, how far imported password
// hashes have been upgraded, and OAuth clients with their deletion.
func (s *Server) registerAdminLists() {
	base := s.opts.BaseURL + "/admin/tenants"
	admin := s.platformJWT()
	s.handle("GET", base, admin, s.listTenants)
	s.handle("GET", base+"/{tenantId}/users", admin, s.listUsers)
	s.handle("GET", base+"/{tenantId}/password-schemes", admin, s.passwordSchemes)
	s.handle("GET", base+"/{tenantId}/oauth-clients", admin, s.listOAuthClients)
	s.handle("GET", base+"/{tenantId}/oauth-clients/{clientId}", admin, s.getOAuthClient)
	s.handle("DELETE", base+"/{tenantId}/oauth-clients/{clientId}", admin, s.deleteOAuthClient)
}

// profileJSON is a user's profile in request bodies.
type profileJSON struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"emailVerified"`
	DisplayName   string `json:"displayName"`
	GivenName     string `json:"givenName"`
	FamilyName    string `json:"familyName"`
	ExternalID    string `json:"externalId"`
}

func (p profileJSON) profile() identity.Profile {
	return identity.Profile{Email: p.Email, EmailVerified: p.EmailVerified, DisplayName: p.DisplayName,
		GivenName: p.GivenName, FamilyName: p.FamilyName, ExternalID: p.ExternalID}
}

// userJSON is a user as the admin routes answer it: never its hash.
type userJSON struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Roles          []string  `json:"roles"`
	ExternalID     string    `json:"externalId,omitempty"`
	Email          string    `json:"email,omitempty"`
	EmailVerified  *bool     `json:"emailVerified,omitempty"`
	DisplayName    string    `json:"displayName,omitempty"`
	GivenName      string    `json:"givenName,omitempty"`
	FamilyName     string    `json:"familyName,omitempty"`
	Active         bool      `json:"active"`
	PasswordScheme string    `json:"passwordScheme"`
	CreatedAt      time.Time `json:"createdAt"`
}

func userOf(u identity.User) userJSON {
	out := userJSON{ID: u.ID.String(), Name: u.Name, Roles: nonNilList(u.Roles), ExternalID: u.ExternalID, Email: u.Email,
		DisplayName: u.DisplayName, GivenName: u.GivenName, FamilyName: u.FamilyName, Active: u.Active(),
		PasswordScheme: u.PasswordScheme, CreatedAt: u.CreatedAt}
	if out.PasswordScheme == "" {
		out.PasswordScheme = identity.PasswordSchemeOf(u.PasswordHash)
	}
	if u.Email != "" {
		v := u.EmailVerified
		out.EmailVerified = &v
	}
	return out
}

// oauthClientOf is a client as the admin routes answer it: never a secret.
func oauthClientOf(c identity.OAuthClient) map[string]any { return oauthClientJSON(c) }

func nonNilList[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

// listQuery reads ?skip&limit and the exact-match filters of an admin list.
func listQuery(r *http.Request, filters ...string) (identity.ListQuery, error) {
	var q identity.ListQuery
	var err error
	if q.Skip, err = queryInt(r, "skip", 0); err != nil {
		return q, err
	}
	if q.Limit, err = queryInt(r, "limit", 0); err != nil {
		return q, err
	}
	if r.URL.Query().Has("limit") && q.Limit <= 0 {
		return q, fault.E(fault.Invalid, fault.Field("limit"), "limit must be between 1 and 1000")
	}
	for _, f := range filters {
		switch f {
		case "name":
			q.Name = r.URL.Query().Get("name")
		case "code":
			q.Code = r.URL.Query().Get("code")
		}
	}
	return q, nil
}

// writePage answers a page in the vault list's envelope.
func writePage[T any](w http.ResponseWriter, q identity.ListQuery, total int, resources []T) {
	writeJSON(w, http.StatusOK, map[string]any{"skip": q.Skip, "limit": q.Limit, "total": total, "resources": nonNilList(resources)})
}

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) error {
	q, err := listQuery(r, "name", "code")
	if err != nil {
		return err
	}
	ts, total, q, err := s.p.Identity.ListTenants(r.Context(), principal(r), q)
	if err != nil {
		return err
	}
	out := make([]tenantJSON, len(ts))
	for i, t := range ts {
		out[i] = tenantJSON{ID: t.ID, Code: t.Code, Name: t.Name, Settings: &t.Settings, CreatedAt: t.CreatedAt}
	}
	writePage(w, q, total, out)
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	q, err := listQuery(r, "name")
	if err != nil {
		return err
	}
	us, total, q, err := s.p.Identity.ListUsers(r.Context(), principal(r), id, q)
	if err != nil {
		return err
	}
	out := make([]userJSON, len(us))
	for i, u := range us {
		out[i] = userOf(u)
	}
	writePage(w, q, total, out)
	return nil
}

func (s *Server) passwordSchemes(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	counts, err := s.p.Identity.PasswordSchemes(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, counts)
	return nil
}

func (s *Server) listOAuthClients(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	q, err := listQuery(r, "name")
	if err != nil {
		return err
	}
	cs, total, q, err := s.p.Identity.ListOAuthClients(r.Context(), principal(r), id, q)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(cs))
	for i, c := range cs {
		out[i] = oauthClientOf(c)
	}
	writePage(w, q, total, out)
	return nil
}

func (s *Server) getOAuthClient(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	c, err := s.p.Identity.GetOAuthClient(r.Context(), principal(r), id, r.PathValue("clientId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, oauthClientOf(c))
	return nil
}

func (s *Server) deleteOAuthClient(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	if err := s.p.Identity.DeleteOAuthClient(r.Context(), principal(r), id, r.PathValue("clientId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
