package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/vault"
)

// The vault (keys2 and API-keys.md): management routes in keys2's
// camelCase, operations in Vault transit's snake_case. Every route takes a
// platform JWT (roles decide) or an OAuth access token (its vault:* scopes
// decide); the vault service checks which.
func (s *Server) registerVault() {
	base := s.opts.BaseURL + "/vault/keys2"
	key := base + "/{key}"
	auth := func(scope string) routeOpts { return s.vaultAuth(scope) }
	read, admin := auth(vault.ScopeKeysRead), auth(vault.ScopeKeysAdmin)
	s.handle("POST", base, admin.creating(), s.createVaultKey)
	s.handle("GET", base, read, s.listVaultKeys)
	s.handle("GET", key, read, s.getVaultKey)
	s.handle("DELETE", key, admin, s.deleteVaultKey)
	s.handle("PATCH", key, admin, s.patchVaultKey)
	s.handle("POST", key+"/rotate", admin.creating(), s.rotateVaultKey)
	s.handle("POST", key+"/versions", admin.creating(), s.addVaultKeyVersion)
	s.handle("GET", key+"/versions", read, s.listVaultKeyVersions)
	s.handle("GET", key+"/versions/{version}", read, s.getVaultKeyVersion)
	s.handle("POST", key+"/trim", admin, s.trimVaultKey)
	s.handle("POST", key+"/activate", admin, s.activateVaultKey)
	s.handle("POST", key+"/revoke", admin, s.revokeVaultKey)
	s.handle("POST", key+"/destroy", admin, s.destroyVaultKey)
	s.handle("GET", key+"/public", read, s.publicVaultKey)
	s.handle("POST", key+"/export", auth(vault.ScopeKeysExport), s.exportVaultKey)
	for _, op := range []struct{ path, op, scope string }{
		{"encrypt", vault.CryptoEncrypt, vault.ScopeEncrypt},
		{"decrypt", vault.CryptoDecrypt, vault.ScopeDecrypt},
		{"rewrap", vault.CryptoRewrap, vault.ScopeDecrypt},
		{"datakey/wrapped", vault.CryptoDatakeyWrapped, vault.ScopeEncrypt},
		{"datakey/plaintext", vault.CryptoDatakeyPlaintext, vault.ScopeDatakey},
		{"hmac", vault.CryptoHMAC, vault.ScopeSign},
		{"sign", vault.CryptoSign, vault.ScopeSign},
		{"verify", vault.CryptoVerify, vault.ScopeVerify},
		{"encapsulate", vault.CryptoEncapsulate, vault.ScopeEncrypt},
		{"decapsulate", vault.CryptoDecapsulate, vault.ScopeDecrypt},
	} {
		o := auth(op.scope)
		o.limit = vault.MaxCryptoBody
		s.handle("POST", key+"/"+op.path, o, s.vaultCrypto(op.op))
	}
	random := auth("vault:crypto:*")
	s.handle("POST", s.opts.BaseURL+"/vault/random", random, s.vaultRandom)
	s.handle("GET", s.opts.BaseURL+"/vault/wrapping-key", read, s.getWrappingKey)
	s.handle("POST", s.opts.BaseURL+"/vault/wrapping-key/rotate", admin, s.rotateWrappingKey)
}

// vaultAuth authenticates a vault route's caller: a platform JWT or an
// OAuth access token (Bearer or DPoP, certificate-bound where issued so),
// told apart by the token's typ header. Route.Auth is "vault:<scope>";
// which scope or role a route needs is the vault service's to check.
func (s *Server) vaultAuth(scope string) routeOpts {
	return routeOpts{style: stylePlatform, name: "vault:" + scope, auth: func(r *http.Request) (identity.Principal, error) {
		kind := identity.PlatformToken
		if tok, _, ok := credential(r); ok && tokenTyp(tok) == string(identity.AccessToken) {
			kind = identity.AccessToken
		}
		p, _, err := s.tokenAuth(r, kind)
		return p, err
	}}
}

// tokenTyp reads the typ header of a JWT without verifying it (the verifier
// checks it again), in lower case without "application/"; "" for anything
// that is not a JWT.
func tokenTyp(tok string) string {
	head, _, ok := strings.Cut(tok, ".")
	if !ok || len(head) > 1024 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Typ string `json:"typ"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return strings.TrimPrefix(strings.ToLower(h.Typ), "application/")
}

// vaultErr adds the OAuth challenge to a refusal for a missing scope
// (RFC 6750 §3.1 insufficient_scope), in the scheme the token came with.
func vaultErr(r *http.Request, err error) error {
	var is *vault.ErrInsufficientScope
	if errors.As(err, &is) {
		_, scheme, ok := credential(r)
		if !ok {
			scheme = identity.SchemeBearer
		}
		return challenged(scheme, "insufficient_scope", is.Scope, err)
	}
	return err
}

// keyRef is the {key} of the path: an id when it parses as a GUID, else a
// name; ?type=name forces a name (CipherTrust's parameter).
func keyRef(r *http.Request) (vault.KeyRef, error) {
	ref := vault.KeyRef{Key: r.PathValue("key")}
	switch t := r.URL.Query().Get("type"); t {
	case "":
	case "name":
		ref.ByName = true
	case "id":
	default:
		return ref, fault.E(fault.Invalid, fault.Field("type"), `type is "name" or "id"`)
	}
	return ref, nil
}

// decodeOptionalJSON is decodeJSON for a body that may be left out.
func decodeOptionalJSON(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.Contains(ct, "json") {
		return fault.E(fault.Invalid, "Content-Type must be application/json")
	}
	return unmarshalJSON(b, v)
}

// vaultDate reads an RFC 3339 date field.
func vaultDate(s *string, field string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, fault.E(fault.Invalid, fault.Field(field), field+" must be an RFC 3339 date-time, such as 2026-01-02T15:04:05Z", err)
	}
	return &t, nil
}

func (s *Server) createVaultKey(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name                    string           `json:"name"`
		Algorithm               string           `json:"algorithm"`
		Size                    int              `json:"size"`
		Curve                   string           `json:"curve"`
		Hash                    string           `json:"hash"`
		Exportable              *bool            `json:"exportable"`
		Unexportable            *bool            `json:"unexportable"`
		Undeletable             bool             `json:"undeletable"`
		UsageMask               *vault.UsageMask `json:"usageMask"`
		ActivationDate          *string          `json:"activationDate"`
		DeactivationDate        *string          `json:"deactivationDate"`
		AutoRotatePeriodSeconds int64            `json:"autoRotatePeriodSeconds"`
		Grants                  []vault.Grant    `json:"grants"`
		WrappedMaterial         string           `json:"wrappedMaterial"`
		WrappingKid             string           `json:"wrappingKid"`
		PublicKey               string           `json:"publicKey"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	act, err := vaultDate(req.ActivationDate, "activationDate")
	if err != nil {
		return err
	}
	deact, err := vaultDate(req.DeactivationDate, "deactivationDate")
	if err != nil {
		return err
	}
	k, err := s.p.Vault.CreateKey(r.Context(), principal(r), vault.CreateRequest{
		Name: req.Name, KeySpec: vault.KeySpec{Algorithm: req.Algorithm, Size: req.Size, Curve: req.Curve, Hash: req.Hash},
		Exportable: req.Exportable, Unexportable: req.Unexportable, Undeletable: req.Undeletable, UsageMask: req.UsageMask,
		ActivationDate: act, DeactivationDate: deact, AutoRotatePeriodSeconds: req.AutoRotatePeriodSeconds, Grants: req.Grants,
		WrappedMaterial: req.WrappedMaterial, WrappingKid: req.WrappingKid, PublicKey: req.PublicKey,
	})
	if err != nil {
		return vaultErr(r, err)
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
	q := r.URL.Query()
	keys, total, lq, err := s.p.Vault.ListKeys(r.Context(), principal(r), vault.ListQuery{Skip: skip, Limit: limit, Name: q.Get("name"),
		Algorithm: q.Get("algorithm"), State: q.Get("state")})
	if err != nil {
		return vaultErr(r, err)
	}
	if keys == nil {
		keys = []vault.Key{} // an empty page is [], whatever the store returns
	}
	writeJSON(w, http.StatusOK, map[string]any{"skip": lq.Skip, "limit": lq.Limit, "total": total, "resources": keys})
	return nil
}

// keyRoute runs a route on the key the path names.
func keyRoute(w http.ResponseWriter, r *http.Request, status int, do func(ref vault.KeyRef) (any, error)) error {
	ref, err := keyRef(r)
	if err != nil {
		return err
	}
	v, err := do(ref)
	if err != nil {
		return vaultErr(r, err)
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return nil
	}
	writeJSON(w, status, v)
	return nil
}

func (s *Server) getVaultKey(w http.ResponseWriter, r *http.Request) error {
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) { return s.p.Vault.GetKey(r.Context(), principal(r), ref) })
}

func (s *Server) deleteVaultKey(w http.ResponseWriter, r *http.Request) error {
	return keyRoute(w, r, http.StatusNoContent, func(ref vault.KeyRef) (any, error) {
		return nil, s.p.Vault.DeleteKey(r.Context(), principal(r), ref)
	})
}

func (s *Server) patchVaultKey(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name                    *string          `json:"name"`
		UsageMask               *vault.UsageMask `json:"usageMask"`
		Exportable              *bool            `json:"exportable"`
		Unexportable            *bool            `json:"unexportable"`
		Undeletable             *bool            `json:"undeletable"`
		ActivationDate          *string          `json:"activationDate"`
		DeactivationDate        *string          `json:"deactivationDate"`
		AutoRotatePeriodSeconds *int64           `json:"autoRotatePeriodSeconds"`
		MinDecryptionVersion    *int             `json:"minDecryptionVersion"`
		MinEncryptionVersion    *int             `json:"minEncryptionVersion"`
		Grants                  *[]vault.Grant   `json:"grants"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	act, err := vaultDate(req.ActivationDate, "activationDate")
	if err != nil {
		return err
	}
	deact, err := vaultDate(req.DeactivationDate, "deactivationDate")
	if err != nil {
		return err
	}
	patch := vault.Patch{Name: req.Name, UsageMask: req.UsageMask, Exportable: req.Exportable, Unexportable: req.Unexportable,
		Undeletable: req.Undeletable, ActivationDate: act, DeactivationDate: deact, AutoRotatePeriodSeconds: req.AutoRotatePeriodSeconds,
		MinDecryptionVersion: req.MinDecryptionVersion, MinEncryptionVersion: req.MinEncryptionVersion, Grants: req.Grants}
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) {
		return s.p.Vault.UpdateKey(r.Context(), principal(r), ref, patch)
	})
}

func (s *Server) rotateVaultKey(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ActivationDate *string `json:"activationDate"`
		// Immediate: a platform signing key's version signs at once
		// rather than after its 10 minutes in the JWKS.
		Immediate bool `json:"immediate"`
	}
	if err := decodeOptionalJSON(r, &req); err != nil {
		return err
	}
	act, err := vaultDate(req.ActivationDate, "activationDate")
	if err != nil {
		return err
	}
	return keyRoute(w, r, http.StatusCreated, func(ref vault.KeyRef) (any, error) {
		return s.p.Vault.RotateKey(r.Context(), principal(r), ref, vault.RotateRequest{ActivationDate: act, Immediate: req.Immediate})
	})
}

// addVaultKeyVersion is CipherTrust's POST .../versions: a rotation, or
// with wrappedMaterial the import of a version.
func (s *Server) addVaultKeyVersion(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ActivationDate  *string `json:"activationDate"`
		WrappedMaterial string  `json:"wrappedMaterial"`
		WrappingKid     string  `json:"wrappingKid"`
	}
	if err := decodeOptionalJSON(r, &req); err != nil {
		return err
	}
	act, err := vaultDate(req.ActivationDate, "activationDate")
	if err != nil {
		return err
	}
	return keyRoute(w, r, http.StatusCreated, func(ref vault.KeyRef) (any, error) {
		if req.WrappedMaterial == "" {
			return s.p.Vault.Rotate(r.Context(), principal(r), ref, act)
		}
		if act != nil {
			return nil, fault.E(fault.Invalid, fault.Field("activationDate"), "an imported version is current at once: activationDate does not apply")
		}
		return s.p.Vault.ImportVersion(r.Context(), principal(r), ref, req.WrappedMaterial, req.WrappingKid)
	})
}

func (s *Server) listVaultKeyVersions(w http.ResponseWriter, r *http.Request) error {
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) {
		vs, err := s.p.Vault.ListVersions(r.Context(), principal(r), ref)
		if vs == nil {
			vs = []vault.Version{}
		}
		return map[string]any{"resources": vs}, err
	})
}

func (s *Server) getVaultKeyVersion(w http.ResponseWriter, r *http.Request) error {
	n, err := strconv.Atoi(r.PathValue("version"))
	if err != nil || n < 0 {
		return fault.E(fault.Invalid, fault.Field("version"), "version is a number, from 0")
	}
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) {
		return s.p.Vault.GetVersion(r.Context(), principal(r), ref, n)
	})
}

func (s *Server) trimVaultKey(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		MinAvailableVersion *int `json:"minAvailableVersion"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) {
		return s.p.Vault.Trim(r.Context(), principal(r), ref, req.MinAvailableVersion)
	})
}

func (s *Server) activateVaultKey(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptionalJSON(r, &struct{}{}); err != nil {
		return err
	}
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) { return s.p.Vault.Activate(r.Context(), principal(r), ref) })
}

func (s *Server) revokeVaultKey(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Reason         string  `json:"reason"`
		CompromiseDate *string `json:"compromiseDate"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	date, err := vaultDate(req.CompromiseDate, "compromiseDate")
	if err != nil {
		return err
	}
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) {
		return s.p.Vault.Revoke(r.Context(), principal(r), ref, req.Reason, date)
	})
}

func (s *Server) destroyVaultKey(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptionalJSON(r, &struct{}{}); err != nil {
		return err
	}
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) { return s.p.Vault.Destroy(r.Context(), principal(r), ref) })
}

func (s *Server) publicVaultKey(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var version *int
	if q.Has("version") {
		n, err := strconv.Atoi(q.Get("version"))
		if err != nil || n < 0 {
			return fault.E(fault.Invalid, fault.Field("version"), "version is a number, from 0")
		}
		version = &n
	}
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) {
		return s.p.Vault.PublicKey(r.Context(), principal(r), ref, q.Get("format"), version)
	})
}

func (s *Server) exportVaultKey(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		WrappingKey string `json:"wrappingKey"`
		Version     *int   `json:"version"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	return keyRoute(w, r, http.StatusOK, func(ref vault.KeyRef) (any, error) {
		out, err := s.p.Vault.Export(r.Context(), principal(r), ref, req.WrappingKey, req.Version)
		return map[string]any{"versions": out}, err
	})
}

// vaultItemError is a failed batch item: the error body of area A with
// the status the item would have had alone, and its reference.
type vaultItemError struct {
	Error     platformErrorBody `json:"error"`
	Reference string            `json:"reference,omitempty"`
}

type platformErrorBody struct {
	Code     int    `json:"code"`
	CodeDesc string `json:"codeDesc"`
	Message  string `json:"message"`
}

// batchInputKey marks a body worth trying vault.Body.DecodeBatch on.
var batchInputKey = []byte(`"batch_input"`)

// vaultCrypto serves a cryptographic operation: the key, scope, grant and
// state are settled before the body is read.
func (s *Server) vaultCrypto(op string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ref, err := keyRef(r)
		if err != nil {
			return err
		}
		out, err := s.p.Vault.Crypto(r.Context(), principal(r), op, ref, func(b *vault.Body) error {
			raw, err := readTypedBody(r)
			if err != nil {
				return err
			}
			if err := checkJSON(raw); err != nil {
				return err
			}
			// A batch decodes in one pass when every item is well
			// formed (P15); otherwise item by item, as before.
			if bytes.Contains(raw, batchInputKey) && b.DecodeBatch(raw) {
				return nil
			}
			return decodeChecked(raw, b)
		})
		if err != nil {
			return vaultErr(r, err)
		}
		if !out.Batch {
			writeJSON(w, http.StatusOK, out.Results[0])
			return nil
		}
		results := make([]any, len(out.Results))
		for i, res := range out.Results {
			if res.Err == nil {
				results[i] = res
				continue
			}
			kind := fault.KindOf(res.Err)
			status := statusOf[kind]
			results[i] = vaultItemError{Error: platformErrorBody{Code: status, CodeDesc: codeOf[kind], Message: messageOf(res.Err, status)}, Reference: res.Reference}
		}
		writeJSON(w, http.StatusOK, map[string]any{"batch_results": results, "failed": out.Failed})
		return nil
	}
}

func (s *Server) vaultRandom(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Bytes  *int   `json:"bytes"`
		Format string `json:"format"`
	}
	if err := decodeOptionalJSON(r, &req); err != nil {
		return err
	}
	n := 32
	if req.Bytes != nil {
		n = *req.Bytes
	}
	out, err := s.p.Vault.Random(r.Context(), principal(r), n, req.Format)
	if err != nil {
		return vaultErr(r, err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"random_bytes": out})
	return nil
}

func (s *Server) getWrappingKey(w http.ResponseWriter, r *http.Request) error {
	info, err := s.p.Vault.WrappingKey(r.Context(), principal(r))
	if err != nil {
		return vaultErr(r, err)
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (s *Server) rotateWrappingKey(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptionalJSON(r, &struct{}{}); err != nil {
		return err
	}
	info, err := s.p.Vault.RotateWrappingKey(r.Context(), principal(r))
	if err != nil {
		return vaultErr(r, err)
	}
	writeJSON(w, http.StatusCreated, info)
	return nil
}
