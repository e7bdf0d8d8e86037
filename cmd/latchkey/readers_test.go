package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/identity"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/import")

// knownPasswords are the fixtures' users' passwords (testdata/import/gen).
var knownPasswords = map[string]string{
	"kc-kratos-vector":   "test",
	"kc-sha512":          "kc-sha512-pw",
	"kc-argon2":          "kc-argon2-pw",
	"kc-deprecated":      "kc-old-pw",
	"kc-otp":             "test",
	"zero@example.com":   "auth0-password",
	"kratos@example.com": "test",
	"user1@example.com":  "user1password",
	"argon@example.com":  "test",
	"scrypt@example.com": "password",
	"crypt@example.com":  "Hello world!",
	"drepper":            "Hello world!",
	"ssha":               "password",
}

const fixtureFirebaseKey = "firebase-fixture"

// readAll reads a fixture with a format's reader: one golden line per
// user, the line sent or the reader's reason to skip it.
func readAll(t *testing.T, format, file string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata/import", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := newReader(format, f, readerOptions{firebaseKey: fixtureFirebaseKey})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		rec, err := rd.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		line := string(rec.line)
		if rec.skip != "" {
			line = `{"skip":` + string(mustJSON(rec.skip)) + `,"line":` + line + `}`
		}
		if rec.note != "" {
			line += "\t# " + rec.note
		}
		out = append(out, line)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestReadersGolden: each format's fixture read into the import route's
// lines, compared with its golden file, and every converted hash checked
// by identity's verifier with the user's known password, so both the
// conversion and the check meet hashes made by other implementations.
func TestReadersGolden(t *testing.T) {
	t.Parallel()
	hc, err := os.ReadFile("testdata/import/firebase-hash-config.txt")
	if err != nil {
		t.Fatal(err)
	}
	fcfg, err := parseHashConfig(hc)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(_ context.Context, name string) (identity.FirebaseKey, error) {
		if name != fixtureFirebaseKey {
			return identity.FirebaseKey{}, errors.New("unknown key")
		}
		return identity.FirebaseKey{SignerKey: fcfg.SignerKey, SaltSeparator: fcfg.SaltSeparator, Rounds: fcfg.Rounds, MemCost: fcfg.MemCost}, nil
	}
	h := identity.NewHasher(identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, 2)
	for _, tc := range []struct{ format, file string }{
		{"keycloak", "keycloak-realm.json"},
		{"auth0", "auth0.ndjson"},
		{"firebase", "firebase.json"},
		{"kratos", "kratos.json"},
		{"jsonl", "users.jsonl"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			got := readAll(t, tc.format, tc.file)
			golden := filepath.Join("testdata/import", tc.format+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(strings.Split(strings.TrimSuffix(string(want), "\n"), "\n"), got); d != "" {
				t.Errorf("lines (-golden +got):\n%s", d)
			}
			checked := 0
			for _, line := range got {
				line, _, _ = strings.Cut(line, "\t# ")
				var l importLine
				if err := json.NewDecoder(bytes.NewReader([]byte(line))).Decode(&l); err != nil || l.PasswordHash == "" {
					continue
				}
				pw, ok := knownPasswords[l.Name]
				if !ok {
					continue
				}
				res, err := h.Check(t.Context(), l.PasswordHash, pw, keys)
				if err != nil || !res.OK {
					t.Errorf("%s: %s does not verify with its password: %+v %v", l.Name, l.PasswordHash, res, err)
				}
				if res, _ := h.Check(t.Context(), l.PasswordHash, pw+"x", keys); res.OK {
					t.Errorf("%s: verifies with a wrong password", l.Name)
				}
				checked++
			}
			if checked == 0 {
				t.Error("no hash checked")
			}
		})
	}
}

// FuzzReaders: no reader panics or loops on any input.
func FuzzReaders(f *testing.F) {
	for _, file := range []string{"keycloak-realm.json", "auth0.ndjson", "firebase.json", "kratos.json", "users.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata/import", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"users":[{"credentials":[{"type":"password","secretData":"{","credentialData":"x"}]}]}`))
	f.Add([]byte(`[[[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, format := range []string{"keycloak", "auth0", "firebase", "kratos", "jsonl"} {
			rd, err := newReader(format, bytes.NewReader(b), readerOptions{firebaseKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10000; i++ {
				if _, err := rd.next(); err != nil {
					break
				}
			}
		}
	})
}

func TestParseHashConfigRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"hash_config {\n  algorithm: SCRYPT,\n}",
		"hash_config {\n  algorithm: HMAC_SHA256,\n  base64_signer_key: AA==,\n  base64_salt_separator: Bw==,\n  rounds: 8,\n  mem_cost: 14,\n}",
		"hash_config {\n  algorithm: SCRYPT,\n  base64_signer_key: !!,\n  base64_salt_separator: Bw==,\n  rounds: 8,\n  mem_cost: 14,\n}",
	} {
		if _, err := parseHashConfig([]byte(in)); err == nil {
			t.Errorf("accepted %q", in)
		}
	}
}

func TestKratosHash(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"$scrypt$ln=16384,r=8,p=1$c2FsdA$aGFzaA": "$scrypt$ln=14,r=8,p=1$c2FsdA$aGFzaA",
		"$scrypt$ln=14,r=8,p=1$c2FsdA$aGFzaA":    "$scrypt$ln=14,r=8,p=1$c2FsdA$aGFzaA",
		"$scrypt$ln=100,r=8,p=1$c2FsdA$aGFzaA":   "$scrypt$ln=100,r=8,p=1$c2FsdA$aGFzaA", // not a power of two: the route says why
		"$sha512-crypt$salt$hash":                "$6$salt$hash",
		"$sha256-crypt$rounds=5000$salt$hash":    "$5$rounds=5000$salt$hash",
		"$2a$10$x":                               "$2a$10$x",
	} {
		if got := kratosHash(in); got != want {
			t.Errorf("kratosHash(%q) = %q, want %q", in, got, want)
		}
	}
}
