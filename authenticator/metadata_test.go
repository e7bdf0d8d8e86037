package authenticator_test

import (
	"testing"

	"github.com/go-webauthn/webauthn/metadata"

	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/authenticator/authenticatortest"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// testBLOB is authenticatortest.MetadataBLOB, failing t on error.
func testBLOB(t *testing.T, entries ...authenticatortest.MetadataEntry) ([]byte, string) {
	t.Helper()
	blob, root, err := authenticatortest.MetadataBLOB(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return blob, root
}

func TestTrustedAttestationPolicy(t *testing.T) {
	certified := authenticatortest.New(rpID, origin)
	cdj, att := certified.Register("dHJ1c3RlZA", authenticatortest.FormatPackedX5C) // makes the chain
	revoked := authenticatortest.New(rpID, origin)
	rcdj, ratt := revoked.Register("dHJ1c3RlZA", authenticatortest.FormatPackedX5C)
	unlisted := authenticatortest.New(rpID, origin)
	ucdj, uatt := unlisted.Register("dHJ1c3RlZA", authenticatortest.FormatPackedX5C)
	blob, root := testBLOB(t,
		authenticatortest.MetadataEntry{AAGUID: identityUUID(certified.AAGUID), Root: certified.RootCert, Status: string(metadata.FidoCertified)},
		authenticatortest.MetadataEntry{AAGUID: identityUUID(revoked.AAGUID), Root: revoked.RootCert, Status: string(metadata.Revoked)},
	)
	mds, err := authenticator.LoadMetadata(blob, root)
	if err != nil {
		t.Fatal(err)
	}
	selfSigned := authenticatortest.New(rpID, origin)
	selfSigned.AAGUID = certified.AAGUID // a listed model, but no attestation certificate
	scdj, satt := selfSigned.Register("dHJ1c3RlZA", authenticatortest.FormatPackedSelf)
	ncdj, natt := selfSigned.Register("dHJ1c3RlZA", authenticatortest.FormatNone)

	newTrusted := func(t *testing.T) *fixture {
		f := newFixture(t)
		f.svc = authenticator.NewService(authenticator.Config{Store: f.store, Directory: f.store, Audit: f.audit, Clock: f.clock, Events: f.events, Metadata: mds})
		f.setSettings(t, func(s *identity.Settings) { s.AttestationPolicy = identity.AttestationPolicyTrusted })
		return f
	}
	t.Run("certified model", func(t *testing.T) {
		f := newTrusted(t)
		a, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(cdj, att))
		if err != nil || a.AttestationType != "basic_full" {
			t.Fatalf("got %+v %v", a, err)
		}
	})
	for name, req := range map[string]authenticator.ImportRequest{
		"revoked model":    importReq(rcdj, ratt),
		"unlisted model":   importReq(ucdj, uatt),
		"self attestation": importReq(scdj, satt),
		"no attestation":   importReq(ncdj, natt),
	} {
		t.Run(name, func(t *testing.T) {
			f := newTrusted(t)
			_, err := f.svc.Import(t.Context(), f.key, f.ref, req)
			if !fault.Is(fault.Invalid, err) || fault.FieldOf(err) != "metadata.attestation.attestationObject" {
				t.Fatalf("got %v", err)
			}
		})
	}
	t.Run("policy none ignores the metadata", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.svc.Import(t.Context(), f.key, f.ref, importReq(ucdj, uatt)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("BLOB signed by another root", func(t *testing.T) {
		_, otherRoot := testBLOB(t)
		if _, err := authenticator.LoadMetadata(blob, otherRoot); err == nil {
			t.Fatal("a BLOB that does not chain to the root was accepted")
		}
	})
}
