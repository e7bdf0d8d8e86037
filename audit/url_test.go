package audit_test

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/fault"
)

func TestURLSigner(t *testing.T) {
	clk := clocktest.New(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC))
	key := bytes.Repeat([]byte{7}, 32)
	s := audit.NewURLSigner(key, clk)
	link, exp := s.Issue("/audit/v1/archives/", "job 1", "tenant-a")
	if want := clk.Now().Add(audit.URLValidity); !exp.Equal(want) {
		t.Fatalf("expiry %v, want %v", exp, want)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/audit/v1/archives/job 1" || u.RawPath != "" && !strings.HasPrefix(u.EscapedPath(), "/audit/v1/archives/job%201") {
		t.Fatalf("path %q", u.Path)
	}
	q := u.Query()
	parts := func(edit func(url.Values) string) (string, url.Values) {
		c := url.Values{}
		for k, v := range q {
			c[k] = append([]string(nil), v...)
		}
		job := "job 1"
		if edit != nil {
			if j := edit(c); j != "" {
				job = j
			}
		}
		return job, c
	}
	flip := func(s string) string {
		b := []byte(s)
		if b[0] == 'A' {
			b[0] = 'B'
		} else {
			b[0] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name    string
		advance time.Duration
		edit    func(url.Values) string
		want    fault.Kind
		ok      bool
	}{
		{"fresh", 0, nil, 0, true},
		{"just before expiry", audit.URLValidity - time.Second, nil, 0, true},
		{"at expiry", audit.URLValidity, nil, fault.Expired, false},
		{"long expired", 30 * 24 * time.Hour, nil, fault.Expired, false},
		{"other job", 0, func(url.Values) string { return "job 2" }, fault.Forbidden, false},
		{"other tenant", 0, func(v url.Values) string { v.Set("tenant", "tenant-b"); return "" }, fault.Forbidden, false},
		{"expiry extended", 0, func(v url.Values) string { v.Set("expires", "9999999999"); return "" }, fault.Forbidden, false},
		{"expiry with sign", 0, func(v url.Values) string { v.Set("expires", "+"+v.Get("expires")); return "" }, fault.Forbidden, false},
		{"expiry not a number", 0, func(v url.Values) string { v.Set("expires", "soon"); return "" }, fault.Forbidden, false},
		{"signature flipped", 0, func(v url.Values) string { v.Set("sig", flip(v.Get("sig"))); return "" }, fault.Forbidden, false},
		{"signature missing", 0, func(v url.Values) string { v.Del("sig"); return "" }, fault.Forbidden, false},
		{"signature not base64", 0, func(v url.Values) string { v.Set("sig", "!!"); return "" }, fault.Forbidden, false},
		// The same 32 bytes leniently, with the last character's unused
		// low bits set (a link ending in A still opening with B).
		{"signature's unused bits changed", 0, func(v url.Values) string { v.Set("sig", twinLast(v.Get("sig"))); return "" }, fault.Forbidden, false},
		// encoding/base64 skips line breaks even in strict mode (%0A).
		{"signature with a line break", 0, func(v url.Values) string { s := v.Get("sig"); v.Set("sig", s[:5]+"\n"+s[5:]); return "" }, fault.Forbidden, false},
		{"signature padded", 0, func(v url.Values) string { v.Set("sig", v.Get("sig")+"="); return "" }, fault.Forbidden, false},
		{"expired and tampered", 48 * time.Hour, func(v url.Values) string { v.Set("tenant", "x"); return "" }, fault.Forbidden, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktest.New(clk.Now().Add(tc.advance))
			v := audit.NewURLSigner(key, c)
			job, q := parts(tc.edit)
			err := v.VerifyQuery(job, q)
			if (err == nil) != tc.ok {
				t.Fatalf("Verify = %v, want ok=%v", err, tc.ok)
			}
			if err != nil {
				if diff := cmp.Diff(tc.want, fault.KindOf(err)); diff != "" {
					t.Errorf("kind (-want +got):\n%s", diff)
				}
			}
		})
	}
	t.Run("other key", func(t *testing.T) {
		other := audit.NewURLSigner(bytes.Repeat([]byte{8}, 32), clk)
		if err := other.VerifyQuery("job 1", q); !fault.Is(fault.Forbidden, err) {
			t.Errorf("Verify with another key = %v, want forbidden", err)
		}
	})
}

// twinLast changes the last character of unpadded base64url text to the
// one that differs from it only in the lowest of its 6 bits: for a 32-byte
// value an unused bit, so the text decodes to the same bytes leniently.
func twinLast(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[i^1])
}

// TestURLSignerIntegrityLinks checks that an archive link and an integrity
// link of the same job, tenant and expiry are not interchangeable.
func TestURLSignerIntegrityLinks(t *testing.T) {
	clk := clocktest.New(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC))
	s := audit.NewURLSigner(bytes.Repeat([]byte{7}, 32), clk)
	exp := clk.Now().Add(time.Hour)
	archive, err := url.Parse(s.Sign("/audit/v1/archives", "j1", "t1", exp))
	if err != nil {
		t.Fatal(err)
	}
	integrity, err := url.Parse(s.SignIntegrity("/audit/v1/archives", "j1", "t1", exp))
	if err != nil {
		t.Fatal(err)
	}
	if integrity.Path != "/audit/v1/archives/j1/integrity" {
		t.Errorf("integrity path %q", integrity.Path)
	}
	if err := s.VerifyIntegrityQuery("j1", integrity.Query()); err != nil {
		t.Errorf("integrity link refused: %v", err)
	}
	if err := s.VerifyQuery("j1", archive.Query()); err != nil {
		t.Errorf("archive link refused: %v", err)
	}
	if err := s.VerifyIntegrityQuery("j1", archive.Query()); !fault.Is(fault.Forbidden, err) {
		t.Errorf("archive link opens the integrity file: %v", err)
	}
	if err := s.VerifyQuery("j1", integrity.Query()); !fault.Is(fault.Forbidden, err) {
		t.Errorf("integrity link opens the archive: %v", err)
	}
}
