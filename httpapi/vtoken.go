package httpapi

import (
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/vtoken"
)

// Headers of the provisioning API. The spec names the first three;
// ChangePin's current password travels in the last two (the spec says
// ChangePin takes "the same body and header as reset" and needs the
// current password, without naming where).
const (
	hdrCertPassword      = "X-VirtualToken-CertificatePassword"
	hdrPasswordEncrypted = "X-VirtualToken-IsPasswordEncrypted"
	hdrNewPINEncrypted   = "X-VirtualToken-IsNewPasswordEncrypted"
	hdrCurrentPIN        = "X-VirtualToken-CurrentPassword"
	hdrCurrentPINEncrypt = "X-VirtualToken-IsCurrentPasswordEncrypted"
)

func (s *Server) registerVToken() {
	root := s.opts.ProvisioningURL + "/VirtualToken/Provisioning"
	v1, v2 := root+"/V1.0", root+"/V2.0"
	key := s.apiKey(styleProvisioning, identity.AreaProvisioning)
	upload := key
	upload.limit = vtoken.MaxPFXBytes + vtoken.MaxUploadOverhead
	sign := key
	sign.limit = 2*vtoken.MaxSignData + 4096 // base64 of the data plus the other fields
	tokens := "/Tenants/{tenantId}/Users/{userId}/Tokens"
	tok := tokens + "/{tokenId}"
	s.handle("GET", v1+"/Tenants/{tenantId}/TenantExchangePublicKey", key, s.vtokenExchangeKey)
	s.handle("POST", v1+tokens, key.creating(), s.vtokenCreate(vtoken.V1))
	s.handle("POST", v2+tokens, key.creating(), s.vtokenCreate(vtoken.V2))
	s.handle("GET", v1+tokens, key, s.vtokenList(vtoken.V1))
	s.handle("GET", v2+tokens, key, s.vtokenList(vtoken.V2))
	s.handle("POST", v1+tok+"/Certificate", upload.creating(), s.vtokenImport)
	s.handle("GET", v1+tok+"/Certificates", key, s.vtokenCertificates)
	s.handle("PUT", v1+tok+"/ProvisioningComplete", key, s.vtokenComplete)
	s.handle("DELETE", v1+tok, key, s.vtokenDelete)
	s.handle("PUT", v1+tok+"/Label/{tokenLabel}", key, s.vtokenLabel)
	// ServeMux wildcards are whole segments: {roleName}:ResetPin and
	// {roleName}:ChangePin are one segment, split here.
	s.handle("POST", v1+tok+"/Role/{roleAction}", key, s.vtokenRole)
	s.handle("POST", v1+tok+"/Sign", sign, s.vtokenSign)
}

// emptyVTokenSegment reports whether path is under the virtual-token
// API and has an empty segment ("//", or a trailing "/"): a missing
// tenant, user, token id or label, answered 400 before routing.
func (s *Server) emptyVTokenSegment(path string) bool {
	rest, ok := strings.CutPrefix(path, s.opts.ProvisioningURL+"/VirtualToken/Provisioning/")
	return ok && (strings.Contains(rest, "//") || strings.HasSuffix(rest, "/"))
}

func vtokenRef(r *http.Request) vtoken.Ref {
	return vtoken.Ref{TenantID: r.PathValue("tenantId"), UserID: r.PathValue("userId"), TokenID: r.PathValue("tokenId")}
}

// headerFlag reads a "true"/"false" header (absent means false).
func headerFlag(r *http.Request, name string) (bool, error) {
	switch v := strings.TrimSpace(r.Header.Get(name)); {
	case v == "" || strings.EqualFold(v, "false"):
		return false, nil
	case strings.EqualFold(v, "true"):
		return true, nil
	}
	return false, fault.E(fault.Invalid, fault.Field(name), name+" must be true or false")
}

func (s *Server) vtokenExchangeKey(w http.ResponseWriter, r *http.Request) error {
	k, err := s.p.VToken.ExchangeKey(r.Context(), principal(r), r.PathValue("tenantId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, k)
	return nil
}

func (s *Server) vtokenCreate(v vtoken.Version) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := s.p.VToken.CreateToken(r.Context(), principal(r), vtokenRef(r), v)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, id)
		return nil
	}
}

func (s *Server) vtokenList(v vtoken.Version) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		toks, err := s.p.VToken.ListTokens(r.Context(), principal(r), vtokenRef(r), v)
		if err != nil {
			return err
		}
		if v == vtoken.V1 {
			out := make([]string, 0, len(toks))
			for _, t := range toks {
				out = append(out, t.ID)
			}
			writeJSON(w, http.StatusOK, out)
			return nil
		}
		out := make([]vtoken.TokenDetails, 0, len(toks))
		for _, t := range toks {
			out = append(out, vtoken.TokenDetails{TokenID: t.ID, Label: t.Label, State: t.State, MaxKeySize: t.MaxKeySize,
				CreatedAt: t.CreatedAt, CertificateCount: t.CertificateCount})
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}

// readPFXPart streams a multipart/form-data body and returns the content
// of its field pfxCertificate, read up to vtoken.MaxPFXBytes (413 above);
// other fields are skipped without being kept. The route's body limit
// bounds the whole upload.
func readPFXPart(r *http.Request) ([]byte, error) {
	tooLarge := func(err error) error {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fault.E(fault.TooLarge, "the upload is larger than the PFX limit of 256 KiB", err)
		}
		return nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "the body must be multipart/form-data with the file field pfxCertificate", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "the form field pfxCertificate is missing")
		}
		if err != nil {
			if e := tooLarge(err); e != nil {
				return nil, e
			}
			return nil, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "malformed multipart body", err)
		}
		if part.FormName() != "pfxCertificate" {
			if _, err := io.Copy(io.Discard, part); err != nil {
				if e := tooLarge(err); e != nil {
					return nil, e
				}
				return nil, fault.E(fault.Invalid, "malformed multipart body", err)
			}
			continue
		}
		b, err := io.ReadAll(io.LimitReader(part, vtoken.MaxPFXBytes+1))
		if err != nil {
			if e := tooLarge(err); e != nil {
				return nil, e
			}
			return nil, fault.E(fault.Invalid, fault.Field("pfxCertificate"), "malformed multipart body", err)
		}
		if len(b) > vtoken.MaxPFXBytes {
			return nil, fault.E(fault.TooLarge, "the PFX file is larger than the limit of 256 KiB")
		}
		return b, nil
	}
}

// The body and headers are read by the service after its access checks.
func (s *Server) vtokenImport(w http.ResponseWriter, r *http.Request) error {
	enc, err := headerFlag(r, hdrPasswordEncrypted)
	pw := vtoken.PINInput{Text: r.Header.Get(hdrCertPassword), Encrypted: enc, Err: err}
	read := func() ([]byte, error) { return readPFXPart(r) }
	serials, err := s.p.VToken.ImportPFX(r.Context(), principal(r), vtokenRef(r), read, pw)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, serials)
	return nil
}

func (s *Server) vtokenCertificates(w http.ResponseWriter, r *http.Request) error {
	certs, err := s.p.VToken.Certificates(r.Context(), principal(r), vtokenRef(r))
	if err != nil {
		return err
	}
	out := make([]vtoken.CertificateRecord, 0, len(certs))
	for _, c := range certs {
		out = append(out, c.Record())
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) vtokenComplete(w http.ResponseWriter, r *http.Request) error {
	if err := s.p.VToken.Complete(r.Context(), principal(r), vtokenRef(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) vtokenDelete(w http.ResponseWriter, r *http.Request) error {
	if err := s.p.VToken.DeleteToken(r.Context(), principal(r), vtokenRef(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) vtokenLabel(w http.ResponseWriter, r *http.Request) error {
	if err := s.p.VToken.SetLabel(r.Context(), principal(r), vtokenRef(r), r.PathValue("tokenLabel")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// vtokenRole serves {roleName}:ResetPin and {roleName}:ChangePin; any
// other action is 404, as an unknown path is.
func (s *Server) vtokenRole(w http.ResponseWriter, r *http.Request) error {
	role, action, ok := strings.Cut(r.PathValue("roleAction"), ":")
	if !ok || (action != "ResetPin" && action != "ChangePin") {
		return fault.E(fault.NotFound, "no such resource: the role action is {roleName}:ResetPin or {roleName}:ChangePin")
	}
	// Errors of the body and headers are reported by the service after its
	// access checks.
	enc, err := headerFlag(r, hdrNewPINEncrypted)
	var newPIN string
	if err == nil {
		err = decodeJSON(r, &newPIN)
	}
	in := vtoken.PINInput{Text: newPIN, Encrypted: enc, Err: err}
	if action == "ResetPin" {
		err = s.p.VToken.ResetPIN(r.Context(), principal(r), vtokenRef(r), role, in)
	} else {
		curEnc, ferr := headerFlag(r, hdrCurrentPINEncrypt)
		cur := vtoken.PINInput{Text: r.Header.Get(hdrCurrentPIN), Encrypted: curEnc, Err: ferr}
		err = s.p.VToken.ChangePIN(r.Context(), principal(r), vtokenRef(r), role, cur, in)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) vtokenSign(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		SerialNumber        string `json:"serialNumber"`
		Algorithm           string `json:"algorithm"`
		Data                string `json:"data"`
		Password            string `json:"password"`
		IsPasswordEncrypted bool   `json:"isPasswordEncrypted"`
	}
	// A malformed body is reported by the service after its access checks.
	err := decodeJSON(r, &req)
	var data []byte
	if err == nil {
		if data, err = base64.StdEncoding.DecodeString(req.Data); err != nil {
			err = fault.E(fault.Invalid, fault.Field("data"), "data must be standard base64", err)
		}
	}
	sig, err := s.p.VToken.Sign(r.Context(), principal(r), vtokenRef(r), vtoken.SignRequest{
		SerialNumber: req.SerialNumber, Algorithm: req.Algorithm, Data: data,
		Password: vtoken.PINInput{Text: req.Password, Encrypted: req.IsPasswordEncrypted, Err: err},
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"signature": base64.StdEncoding.EncodeToString(sig), "algorithm": req.Algorithm})
	return nil
}
