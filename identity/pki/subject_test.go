package pki_test

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/pki"
)

func uid(v string) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: pki.OIDUID(), Value: v}
}

func cn(v string) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: v}
}

func org(v string) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: v}
}

func email(v string) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: v}
}

// TestSubjectFor checks the client profile's subject DN rule. Each CSR
// subject is given as its attributes in encoding order; the wanted DN is
// RFC 4514 text, most specific RDN first.
func TestSubjectFor(t *testing.T) {
	const id = "6f1c2d4e-0000-4000-8000-000000000001"
	tests := []struct {
		name        string
		csr         []pkix.AttributeTypeAndValue
		field       string
		doNotModify bool
		wantDN      string
		wantErr     *refusal
	}{
		{name: "UID appended", csr: attrs(org("Acme"), cn("robot")), field: "UID", wantDN: "UID=" + id + ",CN=robot,O=Acme"},
		{name: "default field is UID", csr: attrs(org("Acme"), cn("robot")), field: "", wantDN: "UID=" + id + ",CN=robot,O=Acme"},
		{name: "field is case-insensitive", csr: attrs(cn("robot")), field: "uid", wantDN: "UID=" + id + ",CN=robot"},
		{name: "existing UIDs replaced", csr: attrs(uid("old"), org("Acme"), uid("older"), cn("robot")), field: "UID", wantDN: "UID=" + id + ",CN=robot,O=Acme"},
		{name: "UID into empty subject", csr: nil, field: "UID", wantDN: "UID=" + id},
		{name: "CN replaced in place", csr: attrs(org("Acme"), cn("robot"), email("r@acme.test")), field: "CN",
			wantDN: "1.2.840.113549.1.9.1=#0c0b724061636d652e74657374,CN=" + id + ",O=Acme"},
		{name: "extra CNs removed", csr: attrs(cn("a"), org("Acme"), cn("b")), field: "cn", wantDN: "O=Acme,CN=" + id},
		{name: "CN appended when absent", csr: attrs(org("Acme")), field: "CN", wantDN: "CN=" + id + ",O=Acme"},
		{name: "do not modify keeps everything", csr: attrs(uid("mine"), org("Acme"), cn("robot"), email("r@acme.test")), field: "UID", doNotModify: true,
			wantDN: "1.2.840.113549.1.9.1=#0c0b724061636d652e74657374,CN=robot,O=Acme,UID=mine"},
		{name: "do not modify ignores field", csr: attrs(cn("robot")), field: "CN", doNotModify: true, wantDN: "CN=robot"},
		{name: "special characters escaped", csr: attrs(org("Acme, Inc. <x>"), cn(" #robot+1 ")), field: "UID",
			wantDN: "UID=" + id + `,CN=\ #robot\+1\ ,O=Acme\, Inc. \<x\>`},

		{name: "do not modify with empty subject", csr: nil, doNotModify: true,
			wantErr: &refusal{fault.Invalid, "csr", "csr subject is empty, so it cannot be kept unmodified"}},
		{name: "unknown field", csr: attrs(cn("robot")), field: "DN",
			wantErr: &refusal{fault.Invalid, "subject_dn_field_to_modify", `subject_dn_field_to_modify "DN" is not allowed; use "UID" or "CN"`}},
		{name: "unknown field even when not modifying", csr: attrs(cn("robot")), field: "O", doNotModify: true,
			wantErr: &refusal{fault.Invalid, "subject_dn_field_to_modify", `subject_dn_field_to_modify "O" is not allowed; use "UID" or "CN"`}},
	}
	ca := mustCA(t, "ca")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := mustCSR(t, pkix.Name{ExtraNames: tt.csr})
			name, err := pki.SubjectFor(csr, id, tt.field, tt.doNotModify)
			if diff := cmp.Diff(tt.wantErr, refusalOf(err)); diff != "" {
				t.Fatalf("SubjectFor error (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.wantDN, pki.DNString(name)); diff != "" {
				t.Errorf("DNString (-want +got):\n%s", diff)
			}
			// The certificate carries exactly that DN.
			der, _, err := ca.Sign(csr, name, t0, t0.Add(time.Hour))
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantDN, pki.SubjectDN(cert)); diff != "" {
				t.Errorf("certificate subject (-want +got):\n%s", diff)
			}
		})
	}
}

func attrs(a ...pkix.AttributeTypeAndValue) []pkix.AttributeTypeAndValue { return a }

func TestSubjectForTypedFields(t *testing.T) {
	csr := mustCSR(t, pkix.Name{CommonName: "robot", Organization: []string{"Acme"}})
	name, err := pki.SubjectFor(csr, "id-1", "CN", false)
	if err != nil {
		t.Fatal(err)
	}
	if name.CommonName != "id-1" || !cmp.Equal(name.Organization, []string{"Acme"}) {
		t.Errorf("typed fields CN=%q O=%q, want id-1 and [Acme]", name.CommonName, name.Organization)
	}
}

// TestDoNotModifyKeepsEncoding checks that an unmodified subject is copied
// byte for byte, keeping string types and multi-valued RDNs that pkix.Name
// cannot represent.
func TestDoNotModifyKeepsEncoding(t *testing.T) {
	raw, err := asn1.Marshal(pkix.RDNSequence{
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: "Acme"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 11}, Value: "Ops"}, {Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "röbot"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.ParseCSR(mustCSRPEM(t, mustECKey(t), &x509.CertificateRequest{RawSubject: raw}))
	if err != nil {
		t.Fatal(err)
	}
	ca := mustCA(t, "ca")
	for _, tt := range []struct {
		name        string
		doNotModify bool
		wantSame    bool
		wantDN      string
	}{
		{name: "kept", doNotModify: true, wantSame: true, wantDN: "OU=Ops+CN=röbot,O=Acme"},
		{name: "modified", doNotModify: false, wantSame: false, wantDN: "UID=c1,CN=röbot,OU=Ops,O=Acme"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name, err := pki.SubjectFor(csr, "c1", "UID", tt.doNotModify)
			if err != nil {
				t.Fatal(err)
			}
			der, _, err := ca.Sign(csr, name, t0, t0.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Equal(cert.RawSubject, raw); got != tt.wantSame {
				t.Errorf("certificate subject bytes equal to the CSR's: %v, want %v", got, tt.wantSame)
			}
			if diff := cmp.Diff(tt.wantDN, pki.SubjectDN(cert)); diff != "" {
				t.Errorf("SubjectDN (-want +got):\n%s", diff)
			}
		})
	}
}
