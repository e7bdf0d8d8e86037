package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"

	"github.com/latchkey/latchkey/fault"
)

// Values of a client profile's subject_dn_field_to_modify: the subject
// attribute that [SubjectFor] sets to the client id.
const (
	SubjectFieldUID = "UID" // userId, OID 0.9.2342.19200300.100.1.1 (RFC 4519)
	SubjectFieldCN  = "CN"  // commonName, OID 2.5.4.3

	// DefaultSubjectField applies when neither the request nor the profile
	// names a field.
	DefaultSubjectField = SubjectFieldUID
)

// OIDUID returns the object identifier of the userId (UID) attribute. It is
// a function, not a variable, so no caller can alter a shared value.
func OIDUID() asn1.ObjectIdentifier { return asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1} }

func oidCN() asn1.ObjectIdentifier { return asn1.ObjectIdentifier{2, 5, 4, 3} }

// SubjectFor applies a client profile's subject DN rule (registration request
// fields subject_dn_field_to_modify and do_not_modify_subject_dn) to the
// subject of csr and returns the subject of the client certificate.
//
// field is "UID" or "CN" (case-insensitive; "" means [DefaultSubjectField]);
// any other value is a fault.Invalid error for field
// subject_dn_field_to_modify, even when doNotModify is set, so that a bad
// request never passes silently.
//
//   - doNotModify: the CSR's subject is kept exactly as sent, every attribute
//     in order. An empty CSR subject is refused (fault.Invalid, field "csr"),
//     since the certificate would then name nobody.
//   - field UID: every UID attribute of the CSR subject is removed and
//     UID=clientID is appended as the last (most specific) RDN.
//   - field CN: the first CN attribute takes the value clientID and any
//     further CN attributes are removed; without a CN, CN=clientID is
//     appended.
//
// The attributes of the result are in ExtraNames, which is what [CA.Sign]
// encodes, in order; the typed fields (CommonName, Organization, ...) are
// filled in as well for reading. Use [DNString] for its text form.
func SubjectFor(csr *x509.CertificateRequest, clientID string, field string, doNotModify bool) (pkix.Name, error) {
	const op = fault.Op("pki.SubjectFor")
	var target asn1.ObjectIdentifier
	switch {
	case field == "" || strings.EqualFold(field, SubjectFieldUID):
		target = OIDUID()
	case strings.EqualFold(field, SubjectFieldCN):
		target = oidCN()
	default:
		return pkix.Name{}, fault.E(op, fault.Invalid, fault.Field("subject_dn_field_to_modify"),
			fmt.Sprintf("subject_dn_field_to_modify %q is not allowed; use %q or %q", field, SubjectFieldUID, SubjectFieldCN))
	}
	if csr == nil {
		return pkix.Name{}, fault.E(op, fault.Invalid, csrField, "csr is missing")
	}
	if clientID == "" {
		return pkix.Name{}, fault.E(op, fault.Internal, fmt.Errorf("client id is empty"))
	}
	attrs := make([]pkix.AttributeTypeAndValue, 0, len(csr.Subject.Names)+1)
	for _, atv := range csr.Subject.Names {
		attrs = append(attrs, pkix.AttributeTypeAndValue{Type: append(asn1.ObjectIdentifier(nil), atv.Type...), Value: atv.Value})
	}
	if doNotModify {
		if len(attrs) == 0 {
			return pkix.Name{}, fault.E(op, fault.Invalid, csrField, "csr subject is empty, so it cannot be kept unmodified")
		}
		return nameOf(attrs), nil
	}
	out := attrs[:0:0]
	replaced := false
	for _, atv := range attrs {
		if !atv.Type.Equal(target) {
			out = append(out, atv)
			continue
		}
		// UID: drop every one and append below. CN: the first takes the id.
		if target.Equal(oidCN()) && !replaced {
			out = append(out, pkix.AttributeTypeAndValue{Type: atv.Type, Value: clientID})
			replaced = true
		}
	}
	if !replaced {
		out = append(out, pkix.AttributeTypeAndValue{Type: target, Value: clientID})
	}
	return nameOf(out), nil
}

// nameOf returns a name that encodes exactly attrs, one per RDN, in order.
func nameOf(attrs []pkix.AttributeTypeAndValue) pkix.Name {
	seq := make(pkix.RDNSequence, len(attrs))
	for i, atv := range attrs {
		seq[i] = pkix.RelativeDistinguishedNameSET{atv}
	}
	var n pkix.Name
	n.FillFromRDNSequence(&seq)
	n.ExtraNames = attrs
	return n
}

// sameNameAsCSR reports whether subject encodes the same attributes, in the
// same order, as the CSR's subject, in which case the CSR's encoding can be
// reused verbatim.
func sameNameAsCSR(subject pkix.Name, csr *x509.CertificateRequest) bool {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(csr.RawSubject, &seq); err != nil || len(rest) != 0 {
		return false
	}
	want := flatten(seq)
	got := flatten(subject.ToRDNSequence())
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !got[i].Type.Equal(want[i].Type) || !reflect.DeepEqual(got[i].Value, want[i].Value) {
			return false
		}
	}
	return true
}

func flatten(seq pkix.RDNSequence) []pkix.AttributeTypeAndValue {
	var out []pkix.AttributeTypeAndValue
	for _, rdn := range seq {
		out = append(out, rdn...)
	}
	return out
}

// DNString returns the RFC 4514 string form of the name that [CA.Sign]
// encodes for n, as returned in the registration response field subject_dn:
// most specific RDN first, for example "UID=3f2a...,CN=robot,O=Acme".
// Attributes with an RFC 4514 / RFC 4519 short name use it (CN, L, ST, O,
// OU, C, STREET, DC, UID, SERIALNUMBER, POSTALCODE); others are written as
// the dotted OID and the hex of their DER value, as RFC 4514 requires.
func DNString(n pkix.Name) string { return formatRDNs(n.ToRDNSequence()) }

// SubjectDN returns the RFC 4514 string form of cert's subject, read from
// its encoding, so attributes that pkix.Name keeps only in Names (such as
// UID) and multi-valued RDNs appear as they are in the certificate.
func SubjectDN(cert *x509.Certificate) string {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) != 0 {
		return cert.Subject.String()
	}
	return formatRDNs(seq)
}

func formatRDNs(seq pkix.RDNSequence) string {
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i != len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			name := attributeName(atv.Type)
			s, isString := atv.Value.(string)
			if name == "" || !isString {
				b.WriteString(atv.Type.String())
				b.WriteString("=#")
				if der, err := asn1.Marshal(atv.Value); err == nil {
					b.WriteString(hex.EncodeToString(der))
				}
				continue
			}
			b.WriteString(name)
			b.WriteByte('=')
			escapeDNValue(&b, s)
		}
	}
	return b.String()
}

func attributeName(oid asn1.ObjectIdentifier) string {
	switch oid.String() {
	case "2.5.4.3":
		return "CN"
	case "2.5.4.5":
		return "SERIALNUMBER"
	case "2.5.4.6":
		return "C"
	case "2.5.4.7":
		return "L"
	case "2.5.4.8":
		return "ST"
	case "2.5.4.9":
		return "STREET"
	case "2.5.4.10":
		return "O"
	case "2.5.4.11":
		return "OU"
	case "2.5.4.17":
		return "POSTALCODE"
	case "0.9.2342.19200300.100.1.1":
		return "UID"
	case "0.9.2342.19200300.100.1.25":
		return "DC"
	}
	return ""
}

// escapeDNValue writes s escaped as RFC 4514 section 2.4 requires, and also
// hex-escapes control characters so that the text is safe to log and show.
func escapeDNValue(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '+' || c == ',' || c == ';' || c == '<' || c == '>' || c == '\\',
			i == 0 && (c == ' ' || c == '#'),
			i == len(s)-1 && c == ' ':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(b, "\\%02X", c)
		default:
			b.WriteByte(c)
		}
	}
}
