package authenticator

import (
	"fmt"
	"os"

	"github.com/go-webauthn/webauthn/metadata"
	"github.com/go-webauthn/webauthn/metadata/providers/memory"
)

// LoadMetadata verifies a FIDO Metadata Service BLOB (the signed JWT
// published at https://mds3.fidoalliance.org/, downloaded by the operator)
// with go-webauthn's metadata package and returns the provider the trusted
// attestation policy checks registrations against (Config.Metadata).
//
// root is the BLOB's trust anchor, a base64 DER certificate; "" means the
// FIDO Alliance's production root (metadata.ProductionMDSRoot). The
// provider requires an entry for the authenticator's AAGUID, an
// attestation chaining to one of the entry's attestation root certificates,
// an attestation type the entry lists, and a status report that is not
// undesired (revoked, compromised and the other statuses of
// metadata.DefaultUndesiredAuthenticatorStatuses).
func LoadMetadata(blob []byte, root string) (metadata.Provider, error) {
	var opts []metadata.DecoderOption
	if root != "" {
		opts = append(opts, metadata.WithRootCertificate(root))
	}
	dec, err := metadata.NewDecoder(opts...)
	if err != nil {
		return nil, err
	}
	payload, err := dec.DecodeBytes(blob)
	if err != nil {
		return nil, fmt.Errorf("FIDO metadata BLOB: %w", err)
	}
	md, err := dec.Parse(payload)
	if err != nil {
		return nil, fmt.Errorf("FIDO metadata BLOB: %w", err)
	}
	return memory.New(memory.WithMetadata(md.ToMap()), memory.WithValidateEntry(true), memory.WithValidateTrustAnchor(true),
		memory.WithValidateStatus(true), memory.WithValidateAttestationTypes(true))
}

// LoadMetadataFile is LoadMetadata of the BLOB in file path.
func LoadMetadataFile(path, root string) (metadata.Provider, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return LoadMetadata(b, root)
}
