package b64

import (
	"encoding/base64"
	"testing"
)

func TestStrictRefusesOtherSpellings(t *testing.T) {
	mac := make([]byte, 32)
	for i := range mac {
		mac[i] = byte(i * 7)
	}
	good := base64.RawURLEncoding.EncodeToString(mac)
	last := good[len(good)-1]
	// The last of 43 characters carries 2 unused bits: the next letter
	// differs only in them.
	flipped := good[:len(good)-1] + string(rune(last+1))
	for name, s := range map[string]string{
		"unused bits set":  flipped,
		"line feed":        good[:10] + "\n" + good[10:],
		"carriage return":  good[:10] + "\r" + good[10:],
		"trailing newline": good + "\n",
		"padding":          good + "=",
		"lone newline":     "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if b, err := URL(s); err == nil {
				t.Fatalf("URL(%q) = %x, want an error", s, b)
			}
		})
	}
	b, err := URL(good)
	if err != nil || string(b) != string(mac) {
		t.Fatalf("URL(good) = %x, %v", b, err)
	}
}

func FuzzStrict(f *testing.F) {
	for _, s := range []string{"", "AA", "AB", "aGk", "aGk=", "\r", "a\nGk", "-_8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.StdEncoding, base64.RawStdEncoding} {
			if b, err := Strict(enc, s); err == nil && enc.EncodeToString(b) != s {
				t.Fatalf("%q decoded to %x, which encodes as %q", s, b, enc.EncodeToString(b))
			}
		}
	})
}
