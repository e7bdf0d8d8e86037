package pki_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/pki"
)

func TestNewCA(t *testing.T) {
	ca := mustCA(t, "Latchkey client CA")
	c := ca.Certificate()
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Fatalf("public key %T, want ECDSA P-256", c.PublicKey)
	}
	type props struct {
		CN             string
		IsCA           bool
		MaxPathLenZero bool
		KeyUsage       x509.KeyUsage
		ExtKeyUsage    []x509.ExtKeyUsage
		NotBefore      time.Time
		NotAfter       time.Time
		SKIDLen        int
		SelfSigned     bool
	}
	got := props{
		CN: c.Subject.CommonName, IsCA: c.IsCA && c.BasicConstraintsValid, MaxPathLenZero: c.MaxPathLen == 0 && c.MaxPathLenZero,
		KeyUsage: c.KeyUsage, ExtKeyUsage: c.ExtKeyUsage, NotBefore: c.NotBefore, NotAfter: c.NotAfter,
		SKIDLen: len(c.SubjectKeyId), SelfSigned: c.CheckSignatureFrom(c) == nil,
	}
	want := props{
		CN: "Latchkey client CA", IsCA: true, MaxPathLenZero: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore:   t0, NotAfter: t0.Add(pki.CAValidity), SKIDLen: 20, SelfSigned: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CA certificate (-want +got):\n%s", diff)
	}
	if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 128 {
		t.Errorf("serial %v is not a positive 128-bit number", c.SerialNumber)
	}
	if other := mustCA(t, "x").Certificate(); other.SerialNumber.Cmp(c.SerialNumber) == 0 {
		t.Error("two CAs got the same serial number")
	}
}

func TestNewCARefusesEmptyName(t *testing.T) {
	_, err := pki.NewCA("", t0)
	if diff := cmp.Diff(&refusal{fault.Invalid, "name", "CA name is empty"}, refusalOf(err)); diff != "" {
		t.Error(diff)
	}
}

func TestMarshalLoadCA(t *testing.T) {
	s := mustSealer(t)
	ca := mustCA(t, "ca")
	certPEM, sealedKey := ca.Marshal(s)
	if bytes.Contains(sealedKey, []byte("PRIVATE KEY")) {
		t.Fatal("sealed key looks like a PEM private key")
	}
	loaded, err := pki.LoadCA(certPEM, sealedKey, s)
	if err != nil {
		t.Fatalf("LoadCA: %v", err)
	}
	if !loaded.Certificate().Equal(ca.Certificate()) {
		t.Fatal("loaded CA has another certificate")
	}
	// The loaded CA signs certificates that the original accepts.
	cert := mustIssue(t, loaded, "client-1", t0, time.Hour)
	if err := pki.VerifyClientCert(ca, []*x509.Certificate{cert}, pki.Fingerprint(cert.Raw), t0.Add(time.Minute)); err != nil {
		t.Fatalf("VerifyClientCert: %v", err)
	}

	otherPEM, otherKey := mustCA(t, "other").Marshal(s)
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: mustIssue(t, ca, "c", t0, time.Hour).Raw})
	tests := []struct {
		name      string
		certPEM   []byte
		sealedKey []byte
		sealer    bool // use another master key
	}{
		{name: "wrong master key", certPEM: certPEM, sealedKey: sealedKey, sealer: true},
		{name: "key of another CA", certPEM: certPEM, sealedKey: otherKey},
		{name: "certificate of another CA", certPEM: otherPEM, sealedKey: sealedKey},
		{name: "not a CA certificate", certPEM: leaf, sealedKey: sealedKey},
		{name: "not PEM", certPEM: []byte("nope"), sealedKey: sealedKey},
		{name: "two certificates", certPEM: append(append([]byte(nil), certPEM...), otherPEM...), sealedKey: sealedKey},
		{name: "truncated sealed key", certPEM: certPEM, sealedKey: sealedKey[:10]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sl := s
			if tt.sealer {
				sl = mustSealer(t)
			}
			ca, err := pki.LoadCA(tt.certPEM, tt.sealedKey, sl)
			if err == nil || ca != nil {
				t.Fatalf("LoadCA = %v, %v; want an error", ca, err)
			}
			if !fault.Is(fault.Internal, err) {
				t.Errorf("kind %v, want internal: %v", fault.KindOf(err), err)
			}
		})
	}
}

func TestSign(t *testing.T) {
	ca := mustCA(t, "ca")
	csr := mustCSR(t, pkix.Name{CommonName: "robot", Organization: []string{"Acme"}})
	subject, err := pki.SubjectFor(csr, "client-1", "UID", false)
	if err != nil {
		t.Fatal(err)
	}
	der, serial, err := ca.Sign(csr, subject, t0, t0.Add(30*24*time.Hour))
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	type props struct {
		Serial      string
		IsCA        bool
		KeyUsage    x509.KeyUsage
		ExtKeyUsage []x509.ExtKeyUsage
		AKID        []byte
		NotBefore   time.Time
		NotAfter    time.Time
		Subject     string
		SignedByCA  bool
		SamePubKey  bool
	}
	got := props{
		Serial: c.SerialNumber.String(), IsCA: c.IsCA, KeyUsage: c.KeyUsage, ExtKeyUsage: c.ExtKeyUsage,
		AKID: c.AuthorityKeyId, NotBefore: c.NotBefore, NotAfter: c.NotAfter, Subject: pki.SubjectDN(c),
		SignedByCA: c.CheckSignatureFrom(ca.Certificate()) == nil,
		SamePubKey: c.PublicKey.(*ecdsa.PublicKey).Equal(csr.PublicKey),
	}
	want := props{
		Serial: serial.String(), IsCA: false, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, AKID: ca.Certificate().SubjectKeyId,
		NotBefore: t0, NotAfter: t0.Add(30 * 24 * time.Hour), Subject: "UID=client-1,CN=robot,O=Acme",
		SignedByCA: true, SamePubKey: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("client certificate (-want +got):\n%s", diff)
	}
	if serial.Sign() <= 0 || serial.BitLen() > 128 {
		t.Errorf("serial %v is not a positive 128-bit number", serial)
	}
}

func TestSignValidityIsClippedToCA(t *testing.T) {
	ca := mustCA(t, "ca")
	caCert := ca.Certificate()
	csr := mustCSR(t, pkix.Name{CommonName: "robot"})
	subject, _ := pki.SubjectFor(csr, "c", "", false)
	tests := []struct {
		name                string
		notBefore, notAfter time.Time
		wantFrom, wantTo    time.Time
		wantErr             *refusal
	}{
		{name: "inside", notBefore: t0.Add(time.Hour), notAfter: t0.Add(2 * time.Hour), wantFrom: t0.Add(time.Hour), wantTo: t0.Add(2 * time.Hour)},
		{name: "sub-second truncated", notBefore: t0.Add(1500 * time.Millisecond), notAfter: t0.Add(time.Hour + 999*time.Millisecond), wantFrom: t0.Add(time.Second), wantTo: t0.Add(time.Hour)},
		{name: "starts before CA", notBefore: t0.Add(-time.Hour), notAfter: t0.Add(time.Hour), wantFrom: caCert.NotBefore, wantTo: t0.Add(time.Hour)},
		{name: "ends after CA", notBefore: t0, notAfter: t0.Add(20 * 365 * 24 * time.Hour), wantFrom: t0, wantTo: caCert.NotAfter},
		{name: "CA expired", notBefore: caCert.NotAfter.Add(time.Hour), notAfter: caCert.NotAfter.Add(2 * time.Hour),
			wantErr: &refusal{Kind: fault.Internal}},
		{name: "before the CA", notBefore: t0.Add(-2 * time.Hour), notAfter: t0.Add(-time.Hour),
			wantErr: &refusal{Kind: fault.Internal}},
		{name: "reversed", notBefore: t0.Add(time.Hour), notAfter: t0,
			wantErr: &refusal{fault.Invalid, "cert_lifetime_days", "certificate validity is empty"}},
		{name: "empty after truncation", notBefore: t0.Add(100 * time.Millisecond), notAfter: t0.Add(900 * time.Millisecond),
			wantErr: &refusal{fault.Invalid, "cert_lifetime_days", "certificate validity is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			der, _, err := ca.Sign(csr, subject, tt.notBefore, tt.notAfter)
			if diff := cmp.Diff(tt.wantErr, refusalOf(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			c, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			if !c.NotBefore.Equal(tt.wantFrom) || !c.NotAfter.Equal(tt.wantTo) {
				t.Errorf("validity %v - %v, want %v - %v", c.NotBefore, c.NotAfter, tt.wantFrom, tt.wantTo)
			}
		})
	}
}

func TestSignRefusesEmptySubjectAndMissingCSR(t *testing.T) {
	ca := mustCA(t, "ca")
	csr := mustCSR(t, pkix.Name{CommonName: "robot"})
	_, _, err := ca.Sign(csr, pkix.Name{}, t0, t0.Add(time.Hour))
	if diff := cmp.Diff(&refusal{fault.Invalid, "csr", "certificate subject is empty"}, refusalOf(err)); diff != "" {
		t.Error(diff)
	}
	_, _, err = ca.Sign(nil, pkix.Name{CommonName: "x"}, t0, t0.Add(time.Hour))
	if diff := cmp.Diff(&refusal{fault.Invalid, "csr", "csr is missing"}, refusalOf(err)); diff != "" {
		t.Error(diff)
	}
}

func TestSignChecksTheCSRAgain(t *testing.T) {
	ca := mustCA(t, "ca")
	csr := mustCSR(t, pkix.Name{CommonName: "robot"})
	tampered := *csr
	tampered.Signature = append([]byte(nil), csr.Signature...)
	tampered.Signature[len(tampered.Signature)-1] ^= 1
	_, _, err := ca.Sign(&tampered, pkix.Name{CommonName: "robot"}, t0, t0.Add(time.Hour))
	if diff := cmp.Diff(&refusal{fault.Invalid, "csr", "csr signature is invalid"}, refusalOf(err)); diff != "" {
		t.Error(diff)
	}
}
