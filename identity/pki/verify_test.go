package pki_test

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/pki"
)

func TestFingerprint(t *testing.T) {
	// SHA-256 of the empty string, a fixed vector.
	const want = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := pki.Fingerprint(nil); got != want {
		t.Errorf("Fingerprint(nil) = %s, want %s", got, want)
	}
}

func TestVerifyClientCert(t *testing.T) {
	ca := mustCA(t, "platform client CA")
	other := mustCA(t, "platform client CA") // same name, other key
	cert := mustIssue(t, ca, "client-1", t0, 24*time.Hour)
	second := mustIssue(t, ca, "client-1", t0, 24*time.Hour)
	foreign := mustIssue(t, other, "client-1", t0, 24*time.Hour)
	fp := pki.Fingerprint(cert.Raw)
	unauth := func(msg string) *refusal { return &refusal{Kind: fault.Unauthenticated, Message: msg} }

	tests := []struct {
		name  string
		chain []*x509.Certificate
		fp    string
		now   time.Time
		want  *refusal
	}{
		{name: "registered certificate", chain: []*x509.Certificate{cert}, fp: fp, now: t0.Add(time.Hour)},
		{name: "upper-case fingerprint", chain: []*x509.Certificate{cert}, fp: strings.ToUpper(fp), now: t0.Add(time.Hour)},
		{name: "extra chain entries ignored", chain: []*x509.Certificate{cert, ca.Certificate()}, fp: fp, now: t0.Add(time.Hour)},
		{name: "no certificate", chain: nil, fp: fp, now: t0.Add(time.Hour), want: unauth("no client certificate was presented")},
		{name: "another CA's certificate", chain: []*x509.Certificate{foreign}, fp: pki.Fingerprint(foreign.Raw), now: t0.Add(time.Hour),
			want: unauth("client certificate is not issued by the platform's client CA")},
		{name: "expired", chain: []*x509.Certificate{cert}, fp: fp, now: t0.Add(25 * time.Hour),
			want: unauth("client certificate has expired or is not yet valid")},
		{name: "not yet valid", chain: []*x509.Certificate{cert}, fp: fp, now: t0.Add(-time.Hour),
			want: unauth("client certificate has expired or is not yet valid")},
		{name: "other certificate of the same CA", chain: []*x509.Certificate{second}, fp: fp, now: t0.Add(time.Hour),
			want: unauth("client certificate does not match the client's registration")},
		{name: "wrong fingerprint", chain: []*x509.Certificate{cert}, fp: strings.Repeat("0", 64), now: t0.Add(time.Hour),
			want: unauth("client certificate does not match the client's registration")},
		{name: "empty fingerprint", chain: []*x509.Certificate{cert}, fp: "", now: t0.Add(time.Hour),
			want: unauth("client certificate does not match the client's registration")},
		{name: "CA certificate itself", chain: []*x509.Certificate{ca.Certificate()}, fp: pki.Fingerprint(ca.Certificate().Raw), now: t0.Add(time.Hour),
			want: unauth("client certificate is a CA certificate")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pki.VerifyClientCert(ca, tt.chain, tt.fp, tt.now)
			if diff := cmp.Diff(tt.want, refusalOf(err)); diff != "" {
				t.Errorf("VerifyClientCert (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}
