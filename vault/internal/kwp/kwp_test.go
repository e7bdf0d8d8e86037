package kwp_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/vault/internal/kwp"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRFC5649 checks the two examples of RFC 5649 §6, both ways.
func TestRFC5649(t *testing.T) {
	kek := "5840df6e29b02af1 ab493b705bf16ea1 ae8338f4dcc176a8"
	tests := []struct{ name, key, wrapped string }{
		{"20 octets", "c37b7e6492584340 bed1220780894115 5068f738", "138bdeaa9b8fa7fc 61f97742e72248ee 5ae6ae5360d1ae6a 5f54f373fa543b6a"},
		{"7 octets", "466f7250617369", "afbeb0f07dfbf541 9200f2ccb50bb24f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kwp.Wrap(unhex(t, kek), unhex(t, tt.key))
			if err != nil || !bytes.Equal(got, unhex(t, tt.wrapped)) {
				t.Fatalf("Wrap = %x, %v; want %s", got, err, tt.wrapped)
			}
			back, err := kwp.Unwrap(unhex(t, kek), got)
			if err != nil || !bytes.Equal(back, unhex(t, tt.key)) {
				t.Fatalf("Unwrap = %x, %v", back, err)
			}
		})
	}
}

// TestWycheproof runs Wycheproof's AES-KWP vectors
// (testvectors_v1/aes_kwp_test.json of C2SP/wycheproof, Apache 2.0): valid
// ones must wrap to ct and unwrap back, invalid ones must not unwrap.
// Wycheproof marks wraps of keys under 128 bits "acceptable"; they are
// wrapped and unwrapped like valid ones here (an imported HMAC key is at
// least 32 bytes anyway, and refused above the wrap).
func TestWycheproof(t *testing.T) {
	raw, err := os.ReadFile("testdata/wycheproof_aes_kwp_test.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		NumberOfTests int
		TestGroups    []struct {
			KeySize int
			Tests   []struct {
				TcID                          int
				Comment, Key, Msg, Ct, Result string
			}
		}
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, g := range file.TestGroups {
		for _, tc := range g.Tests {
			ran++
			t.Run(strconv.Itoa(tc.TcID), func(t *testing.T) {
				key, msg, ct := unhex(t, tc.Key), unhex(t, tc.Msg), unhex(t, tc.Ct)
				got, err := kwp.Unwrap(key, ct)
				switch tc.Result {
				case "valid", "acceptable":
					if err != nil || !bytes.Equal(got, msg) {
						t.Fatalf("%s: Unwrap = %x, %v; want %x", tc.Comment, got, err, msg)
					}
					wrapped, err := kwp.Wrap(key, msg)
					if err != nil || !bytes.Equal(wrapped, ct) {
						t.Fatalf("%s: Wrap = %x, %v; want %x", tc.Comment, wrapped, err, ct)
					}
				default:
					if err == nil {
						t.Fatalf("%s: invalid vector unwrapped to %x", tc.Comment, got)
					}
				}
			})
		}
	}
	if ran != file.NumberOfTests || ran < 250 {
		t.Fatalf("ran %d vectors of %d", ran, file.NumberOfTests)
	}
}

func TestRoundTripLengths(t *testing.T) {
	kek := bytes.Repeat([]byte{7}, 32)
	for n := 1; n <= 70; n++ {
		msg := bytes.Repeat([]byte{byte(n)}, n)
		w, err := kwp.Wrap(kek, msg)
		if err != nil {
			t.Fatal(err)
		}
		if want := 8 + (n+7)/8*8; len(w) != want {
			t.Fatalf("len(Wrap(%d bytes)) = %d, want %d", n, len(w), want)
		}
		got, err := kwp.Unwrap(kek, w)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes: %x, %v", n, got, err)
		}
		w[len(w)-1] ^= 1
		if _, err := kwp.Unwrap(kek, w); err != kwp.ErrUnwrap {
			t.Fatalf("%d bytes altered: %v", n, err)
		}
	}
	if _, err := kwp.Wrap(kek, nil); err == nil {
		t.Error("Wrap of nothing succeeded")
	}
}

func FuzzUnwrap(f *testing.F) {
	kek := bytes.Repeat([]byte{9}, 32)
	w, _ := kwp.Wrap(kek, []byte("sixteen byte key"))
	f.Add(w)
	f.Add(make([]byte, 16))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := kwp.Unwrap(kek, b)
		if err == nil {
			back, err := kwp.Wrap(kek, got)
			if err != nil || !bytes.Equal(back, b) {
				t.Fatalf("unwrapped %x but it wraps to %x, %v", got, back, err)
			}
		}
	})
}
