package authenticator

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/go-webauthn/webauthn/metadata"
	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
	"github.com/google/uuid"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Request fields named by validation errors.
const (
	fieldClientData  = "metadata.attestation.clientDataJson"
	fieldAttestation = "metadata.attestation.attestationObject"
)

// credParams are the credential algorithms accepted: every COSE algorithm
// go-webauthn verifies, except RS1 (SHA-1).
var credParams = func() []protocol.CredentialParameter {
	var out []protocol.CredentialParameter
	for _, a := range []webauthncose.COSEAlgorithmIdentifier{
		webauthncose.AlgES256, webauthncose.AlgES384, webauthncose.AlgES512, webauthncose.AlgEdDSA,
		webauthncose.AlgPS256, webauthncose.AlgPS384, webauthncose.AlgPS512,
		webauthncose.AlgRS256, webauthncose.AlgRS384, webauthncose.AlgRS512, webauthncose.AlgES256K,
	} {
		out = append(out, protocol.CredentialParameter{Type: protocol.PublicKeyCredentialType, Algorithm: a})
	}
	return out
}()

// attested is what a verified registration yields.
type attested struct {
	credentialID []byte
	publicKey    []byte
	aaguid       string
	alg          int64
	signCount    uint32
	format       string
	attType      string
	challenge    string
}

// verifyRegistration verifies a registration (the attestation of a new
// credential) against a tenant's relying party with go-webauthn:
// clientDataJSON of type webauthn.create from one of the tenant's origins,
// attestation object CBOR whose authenticator data carries the RP ID hash
// and attested credential data, and the attestation statement of its
// format (none, packed, fido-u2f, tpm, android-key, android-safetynet,
// apple, compound). challenge, when not empty, must be the client data's
// challenge. With trusted, the attestation must chain to the FIDO Metadata
// Service (mds) and self or no attestation is refused.
//
// Every refusal is fault.Invalid naming the request field at fault.
func verifyRegistration(clientDataJSON, attestationObject []byte, rp identity.WebAuthn, challenge string, trusted bool, mds metadata.Provider) (attested, error) {
	var cd protocol.CollectedClientData
	if err := json.Unmarshal(clientDataJSON, &cd); err != nil {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldClientData), "The client data is not valid JSON.", err)
	}
	if cd.Type != protocol.CreateCeremony {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldClientData), fmt.Sprintf("The client data type must be %q.", protocol.CreateCeremony))
	}
	if err := checkOrigin(cd, rp); err != nil {
		return attested{}, err
	}
	if challenge != "" && cd.Challenge != challenge {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldClientData), "The challenge is not the one issued.")
	}
	// The import of an authenticator registered elsewhere carries the
	// challenge of the system that registered it, which cannot be checked
	// here: the client data's own challenge is passed as the stored one, so
	// the library still checks the type and origin.
	if err := cd.Verify(cd.Challenge, protocol.CreateCeremony, rp.Origins, nil, nil, protocol.TopOriginImplicitVerificationMode, false); err != nil {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldClientData), "The client data was refused: "+libMessage(err), err)
	}

	var ao protocol.AttestationObject
	if err := webauthncbor.Unmarshal(attestationObject, &ao); err != nil {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The attestation object is not valid CBOR.", err)
	}
	if err := ao.AuthData.Unmarshal(ao.RawAuthData); err != nil {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The authenticator data is malformed: "+libMessage(err), err)
	}
	if !ao.AuthData.Flags.HasAttestedCredentialData() || len(ao.AuthData.AttData.CredentialID) == 0 {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The authenticator data carries no attested credential.")
	}
	rpHash := sha256.Sum256([]byte(rp.RPID))
	if !bytes.Equal(ao.AuthData.RPIDHash, rpHash[:]) {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The RP ID hash is not that of the tenant's relying party ID.")
	}
	var pk webauthncose.PublicKeyData
	if err := webauthncbor.Unmarshal(ao.AuthData.AttData.CredentialPublicKey, &pk); err != nil {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The credential public key is not a valid COSE key.", err)
	}
	if _, err := webauthncose.ParsePublicKey(ao.AuthData.AttData.CredentialPublicKey); err != nil {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The credential public key is not a valid COSE key.", err)
	}
	if trusted {
		if mds == nil {
			return attested{}, fault.E(fault.Unavailable, "The trusted attestation policy needs the FIDO metadata, which is not loaded.")
		}
		if protocol.AttestationFormat(ao.Format) == protocol.AttestationFormatNone {
			return attested{}, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The tenant's attestation policy requires a trusted attestation; none was given.")
		}
	} else {
		mds = nil
	}
	sum := sha256.Sum256(clientDataJSON)
	if err := ao.Verify(rp.RPID, sum[:], false, true, mds, credParams, protocol.AttestationPolicy{}, protocol.SignaturePolicy{}); err != nil {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The attestation could not be verified: "+libMessage(err), err)
	}
	// go-webauthn names self attestation basic_surrogate (the FIDO
	// metadata name of a surrogate basic attestation).
	if trusted && (ao.Type == string(metadata.None) || ao.Type == string(metadata.BasicSurrogate)) {
		return attested{}, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The tenant's attestation policy requires a trusted attestation; self attestation was given.")
	}
	a := attested{
		credentialID: slices.Clone(ao.AuthData.AttData.CredentialID),
		publicKey:    slices.Clone(ao.AuthData.AttData.CredentialPublicKey),
		alg:          pk.Algorithm,
		signCount:    ao.AuthData.Counter,
		format:       ao.Format,
		attType:      ao.Type,
		challenge:    cd.Challenge,
	}
	if id, err := uuid.FromBytes(ao.AuthData.AttData.AAGUID); err == nil {
		a.aaguid = id.String()
	} else {
		a.aaguid = uuid.Nil.String()
	}
	return a, nil
}

// checkOrigin refuses client data from an origin that is not the tenant's.
func checkOrigin(cd protocol.CollectedClientData, rp identity.WebAuthn) error {
	if !protocol.IsOriginInHaystack(cd.Origin, rp.Origins) {
		return fault.E(fault.Invalid, fault.Field(fieldClientData), fmt.Sprintf("The origin %q is not an origin of the tenant's relying party.", truncate(cd.Origin, 200)))
	}
	return nil
}

// libMessage is the public text of a go-webauthn error.
func libMessage(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		msg := pe.Details
		if pe.DevInfo != "" {
			msg += " (" + pe.DevInfo + ")"
		}
		return truncate(msg, 300)
	}
	return truncate(err.Error(), 300)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
