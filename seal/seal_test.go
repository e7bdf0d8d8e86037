package seal_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/latchkey/latchkey/seal"
)

func TestSealOpen(t *testing.T) {
	s, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("private key bytes")
	box := s.Seal("jwt-key:1", secret)
	if bytes.Contains(box, secret) {
		t.Fatal("sealed value contains the plaintext")
	}
	got, err := s.Open("jwt-key:1", box)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _ := seal.New(seal.NewKey())
	tampered := append([]byte(nil), box...)
	tampered[len(tampered)-1] ^= 1
	for name, try := range map[string]func() ([]byte, error){
		"wrong purpose": func() ([]byte, error) { return s.Open("jwt-key:2", box) },
		"wrong key":     func() ([]byte, error) { return other.Open("jwt-key:1", box) },
		"tampered":      func() ([]byte, error) { return s.Open("jwt-key:1", tampered) },
		"truncated":     func() ([]byte, error) { return s.Open("jwt-key:1", box[:5]) },
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := try(); !errors.Is(err, seal.ErrOpen) {
				t.Fatalf("err = %v, want ErrOpen", err)
			}
		})
	}
}

func TestSubKeyAndParse(t *testing.T) {
	k := seal.NewKey()
	s, _ := seal.New(k)
	if bytes.Equal(s.SubKey("a"), s.SubKey("b")) {
		t.Fatal("subkeys of different purposes are equal")
	}
	parsed, err := seal.ParseKey(base64.StdEncoding.EncodeToString(k) + "\n")
	if err != nil || !bytes.Equal(parsed, k) {
		t.Fatalf("ParseKey = %x, %v", parsed, err)
	}
	if _, err := seal.ParseKey("short"); err == nil {
		t.Fatal("ParseKey accepted a short key")
	}
	if _, err := seal.New([]byte("short")); err == nil {
		t.Fatal("New accepted a short key")
	}
}
