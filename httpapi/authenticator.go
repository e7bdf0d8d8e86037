package httpapi

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// objectIDFormatName is the request parameter selecting how userId is
// read; API.md accepts it as a header or a query parameter.
const objectIDFormatName = "Object-Id-Format"

func (s *Server) registerAuthenticators() {
	base := s.opts.AuthenticatorURL + "/api/v1/tenants/{tenantCode}/users/{userId}/authenticators"
	key := s.apiKey(styleProblem, identity.AreaAuthenticator)
	s.handle("GET", base, key, s.listAuthenticators)
	s.handle("POST", base, key.creating(), s.importAuthenticator)
	s.handle("GET", base+"/{authenticatorId}", key, s.getAuthenticator)
	s.handle("PATCH", base+"/{authenticatorId}", key, s.updateAuthenticator)
	s.handle("DELETE", base+"/{authenticatorId}", key, s.deleteAuthenticator)
	s.registerWebAuthn()
}

// blankEmptyAuthnSegments presents an empty tenantCode, userId or
// authenticatorId segment of an area C path ("/tenants//users/...",
// ".../authenticators/") as a single space. ServeMux would otherwise
// redirect the first (307, it cleans "//") and not match the second (404
// in the platform shape), while the spec answers both with 400 "... cannot
// be null or empty."; a blank segment reaches the handlers, which say so
// after the API key check like for any other request.
func (s *Server) blankEmptyAuthnSegments(r *http.Request) *http.Request {
	rest, ok := strings.CutPrefix(r.URL.Path, s.opts.AuthenticatorURL+"/api/v1/tenants/")
	if !ok || !strings.Contains("/"+rest+"/", "//") {
		return r
	}
	parts := strings.Split(rest, "/")
	params := []int{0} // indexes of the path parameters in parts
	switch {
	case (len(parts) == 4 || len(parts) == 5) && parts[1] == "users" && parts[3] == "authenticators":
		params = append(params, 2, 4)
	case len(parts) == 4 && parts[1] == "webauthn":
	default:
		return r
	}
	for _, i := range params {
		if i < len(parts) && parts[i] == "" {
			parts[i] = " "
		}
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = s.opts.AuthenticatorURL + "/api/v1/tenants/" + strings.Join(parts, "/")
	r2.URL.RawPath = ""
	return r2
}

// authnRef reads the tenant code, user id and Object-Id-Format (header
// first, else query) of a request.
func authnRef(r *http.Request) authenticator.Ref {
	f := r.Header.Get(objectIDFormatName)
	if f == "" {
		f = r.URL.Query().Get(objectIDFormatName)
	}
	return authenticator.Ref{TenantCode: r.PathValue("tenantCode"), UserID: r.PathValue("userId"), Format: strings.TrimSpace(f)}
}

// authenticatorJSON is resource E of the spec.
type authenticatorJSON struct {
	ID                       string     `json:"id"`
	Type                     string     `json:"type"`
	State                    string     `json:"state"`
	LastUsedAuthnDateTime    *time.Time `json:"lastUsedAuthnDateTime"`
	LastSuccessAuthnDateTime *time.Time `json:"lastSuccessAuthnDateTime"`
	CreatedDateTime          time.Time  `json:"createdDateTime"`
	Metadata                 fidoMeta   `json:"metadata"`
}

type fidoMeta struct {
	AAGUID           string `json:"aaguid"`
	FriendlyName     string `json:"friendlyName"`
	RPID             string `json:"rpId"`
	SignatureCounter int64  `json:"signatureCounter"`
	COSEAlgoID       int64  `json:"coseAlgoId"`
	Provenance       string `json:"provenance"`
}

func toAuthenticatorJSON(a authenticator.Authenticator) authenticatorJSON {
	return authenticatorJSON{
		ID: a.ID, Type: a.Type, State: a.State, LastUsedAuthnDateTime: a.LastUsedAt, LastSuccessAuthnDateTime: a.LastSuccessAt,
		CreatedDateTime: a.CreatedAt,
		Metadata: fidoMeta{AAGUID: a.AAGUID, FriendlyName: a.FriendlyName, RPID: a.RPID, SignatureCounter: a.SignCount,
			COSEAlgoID: a.COSEAlg, Provenance: a.Provenance},
	}
}

// pageParam reads pageIndex or pageSize: absent is def; text that is not
// an integer is a validation failure of that field.
func pageParam(r *http.Request, name string, def int) (int, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return def, nil
	}
	v := q.Get(name)
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return 0, fault.E(fault.Invalid, fault.Field(name), "The value '"+v+"' is not valid.")
	}
	return n, nil
}

func (s *Server) listAuthenticators(w http.ResponseWriter, r *http.Request) error {
	idx, err := pageParam(r, "pageIndex", 0)
	if err != nil {
		return err
	}
	size, err := pageParam(r, "pageSize", authenticator.DefaultPageSize)
	if err != nil {
		return err
	}
	if r.URL.Query().Has("pageSize") && size == 0 {
		size = -1 // explicit 0 is out of range, not "the default"
	}
	pg, err := s.p.Authenticators.List(r.Context(), principal(r), authnRef(r), idx, size)
	if err != nil {
		return err
	}
	items := make([]authenticatorJSON, 0, len(pg.Items))
	for _, a := range pg.Items {
		items = append(items, toAuthenticatorJSON(a))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"page": map[string]any{
			"totalItems": pg.TotalItems, "pageIndex": pg.PageIndex, "pageSize": pg.PageSize, "totalPages": pg.TotalPages, "items": items,
		},
		"links":    s.pageLinks(r, pg),
		"itemType": "Authenticator",
	})
	return nil
}

// pageLinks are the absolute links of a list page. first, self and last
// are always present (last is first when there are no items); prev and
// next only when such a page exists; skip is the page after next (the
// list skipping one page), when it exists.
func (s *Server) pageLinks(r *http.Request, pg authenticator.Page) map[string]string {
	link := func(idx int) string {
		q := url.Values{}
		for k, v := range r.URL.Query() {
			if k != "pageIndex" && k != "pageSize" {
				q[k] = v
			}
		}
		// The format may have come in the header; a link must stand alone.
		if f := authnRef(r).Format; f != "" {
			q.Set(objectIDFormatName, f)
		}
		q.Set("pageIndex", strconv.Itoa(idx))
		q.Set("pageSize", strconv.Itoa(pg.PageSize))
		return s.opts.PublicURL + r.URL.EscapedPath() + "?" + q.Encode()
	}
	last := max(pg.TotalPages-1, 0)
	links := map[string]string{"first": link(0), "self": link(pg.PageIndex), "last": link(last)}
	if pg.PageIndex > 0 {
		links["prev"] = link(min(pg.PageIndex-1, last))
	}
	if pg.PageIndex < last {
		links["next"] = link(pg.PageIndex + 1)
	}
	if pg.PageIndex < last-1 { // not PageIndex+2 <= last, which wraps for the largest indexes
		links["skip"] = link(pg.PageIndex + 2)
	}
	return links
}

func (s *Server) getAuthenticator(w http.ResponseWriter, r *http.Request) error {
	a, err := s.p.Authenticators.Get(r.Context(), principal(r), authnRef(r), r.PathValue("authenticatorId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toAuthenticatorJSON(a))
	return nil
}

// readNullableJSON reads a JSON body into v and reports whether the body
// was empty or the JSON null (the spec's "Authenticator cannot be null.").
func readNullableJSON(r *http.Request, v any) (null bool, err error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return false, fault.E(fault.Invalid, "Content-Type must be application/json")
		}
	}
	b, err := readBody(r)
	if err != nil {
		return false, err
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
		return true, nil
	}
	return false, unmarshalJSON(b, v)
}

func (s *Server) importAuthenticator(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Type     string `json:"type"`
		Metadata *struct {
			Attestation *struct {
				ClientDataJSON    string `json:"clientDataJson"`
				AttestationObject string `json:"attestationObject"`
			} `json:"attestation"`
			FriendlyName string `json:"friendlyName"`
		} `json:"metadata"`
	}
	null, err := readNullableJSON(r, &body)
	if err != nil {
		return err
	}
	req := authenticator.ImportRequest{Null: null, Type: body.Type}
	if m := body.Metadata; m != nil {
		req.FriendlyName = m.FriendlyName
		if at := m.Attestation; at != nil {
			req.ClientDataJSON, req.AttestationObject = at.ClientDataJSON, at.AttestationObject
		}
	}
	a, err := s.p.Authenticators.Import(r.Context(), principal(r), authnRef(r), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toAuthenticatorJSON(a))
	return nil
}

func (s *Server) updateAuthenticator(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		State    *string `json:"state"`
		Metadata *struct {
			FriendlyName *string `json:"friendlyName"`
		} `json:"metadata"`
	}
	null, err := readNullableJSON(r, &body)
	if err != nil {
		return err
	}
	req := authenticator.UpdateRequest{Null: null, State: body.State}
	if body.Metadata != nil {
		req.FriendlyName = body.Metadata.FriendlyName
	}
	a, err := s.p.Authenticators.Update(r.Context(), principal(r), authnRef(r), r.PathValue("authenticatorId"), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toAuthenticatorJSON(a))
	return nil
}

func (s *Server) deleteAuthenticator(w http.ResponseWriter, r *http.Request) error {
	if err := s.p.Authenticators.Delete(r.Context(), principal(r), authnRef(r), r.PathValue("authenticatorId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// registerWebAuthn registers the FIDO conformance server routes of the
// activation flow and inline registration (API.md), authenticated like the
// rest of area C; their errors are {status:"failed", errorMessage}.
func (s *Server) registerWebAuthn() {
	base := s.opts.AuthenticatorURL + "/api/v1/tenants/{tenantCode}/webauthn"
	key := s.apiKey(styleFIDO, identity.AreaAuthenticator)
	s.handle("POST", base+"/attestation/options", key, s.attestationOptions)
	s.handle("POST", base+"/attestation/result", key.creating(), s.attestationResult)
	s.handle("POST", base+"/assertion/options", key, s.assertionOptions)
	s.handle("POST", base+"/assertion/result", key, s.assertionResult)
}

// fidoOK is the conformance server API's success envelope.
type fidoOK struct {
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

var fidoSuccess = fidoOK{Status: "ok", ErrorMessage: ""}

func (s *Server) attestationOptions(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Username               string                          `json:"username"`
		DisplayName            string                          `json:"displayName"`
		AuthenticatorSelection protocol.AuthenticatorSelection `json:"authenticatorSelection"`
		Attestation            string                          `json:"attestation"`
		// UserVerification at the top level, as API.md says options
		// requests carry it; the conformance API's place is
		// authenticatorSelection. Ignoring it would silently turn a
		// requested "required" into the default "preferred".
		UserVerification string `json:"userVerification"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if uv := protocol.UserVerificationRequirement(body.UserVerification); uv != "" {
		switch body.AuthenticatorSelection.UserVerification {
		case "":
			body.AuthenticatorSelection.UserVerification = uv
		case uv:
		default:
			return fault.E(fault.Invalid, fault.Field("userVerification"), "userVerification and authenticatorSelection.userVerification differ.")
		}
	}
	opts, err := s.p.Authenticators.BeginRegistration(r.Context(), principal(r), r.PathValue("tenantCode"), authenticator.RegistrationRequest{
		Username: body.Username, DisplayName: body.DisplayName, AuthenticatorSelection: body.AuthenticatorSelection, Attestation: body.Attestation,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		fidoOK
		authenticator.CreationOptions
	}{fidoSuccess, opts})
	return nil
}

func (s *Server) attestationResult(w http.ResponseWriter, r *http.Request) error {
	b, err := readObjectBody(r)
	if err != nil {
		return err
	}
	if _, err := s.p.Authenticators.FinishRegistration(r.Context(), principal(r), r.PathValue("tenantCode"), b); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fidoSuccess)
	return nil
}

func (s *Server) assertionOptions(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Username         string `json:"username"`
		UserVerification string `json:"userVerification"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	opts, err := s.p.Authenticators.BeginAssertion(r.Context(), principal(r), r.PathValue("tenantCode"), authenticator.AssertionRequest{
		Username: body.Username, UserVerification: body.UserVerification,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		fidoOK
		authenticator.RequestOptions
	}{fidoSuccess, opts})
	return nil
}

func (s *Server) assertionResult(w http.ResponseWriter, r *http.Request) error {
	b, err := readObjectBody(r)
	if err != nil {
		return err
	}
	if _, err := s.p.Authenticators.FinishAssertion(r.Context(), principal(r), r.PathValue("tenantCode"), b); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fidoSuccess)
	return nil
}

// readObjectBody reads a JSON object body as raw bytes for a parser that
// decodes it itself (go-webauthn's), after the checks decodeJSON makes.
func readObjectBody(r *http.Request) ([]byte, error) {
	var raw json.RawMessage
	if err := decodeJSON(r, &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fault.E(fault.Invalid, "the body must be a JSON object")
	}
	return raw, nil
}
