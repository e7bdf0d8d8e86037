package httpapi_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// TestVaultJWSVerifiedByGoJOSE signs JWS with keys of each JOSE type and
// has go-jose, an independent JOSE implementation, verify them with the
// keys of the vault's JWKS export.
func TestVaultJWSVerifiedByGoJOSE(t *testing.T) {
	v := newVaultEnv(t)
	cases := []struct {
		name string
		key  map[string]any
		sign map[string]any
		alg  jose.SignatureAlgorithm
	}{
		{"ES256", map[string]any{"algorithm": "EC", "curve": "P-256"}, nil, jose.ES256},
		{"ES384", map[string]any{"algorithm": "EC", "curve": "P-384"}, nil, jose.ES384},
		{"PS256", map[string]any{"algorithm": "RSA", "size": 2048}, nil, jose.PS256},
		{"PS512", map[string]any{"algorithm": "RSA", "size": 2048}, map[string]any{"hash_algorithm": "sha2-512"}, jose.PS512},
		{"RS384", map[string]any{"algorithm": "RSA", "size": 2048}, map[string]any{"hash_algorithm": "sha2-384", "signature_algorithm": "pkcs1v15"}, jose.RS384},
		{"EdDSA", map[string]any{"algorithm": "ED25519"}, nil, jose.EdDSA},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"name": tc.name}
			for k, val := range tc.key {
				body[k] = val
			}
			id := v.create(t, body)
			v.op(t, id, "rotate", nil, 201) // the JWKS holds two versions; the kid picks
			payload := `{"sub":"42","aud":"interop"}`
			req := map[string]any{"input": b64s(payload), "output": "jws", "jws_header": map[string]any{"typ": "JWT"}}
			for k, val := range tc.sign {
				req[k] = val
			}
			jws := str(v.op(t, id, "sign", req, 200), "jws")
			r := v.e.Do("GET", keysPath+"/"+id+"/public?format=jwks", nil, bearer(v.tok))
			var set jose.JSONWebKeySet
			if err := json.Unmarshal(r.Body, &set); err != nil {
				t.Fatalf("go-jose cannot read the JWKS %s: %v", r.Body, err)
			}
			parsed, err := jose.ParseSigned(jws, []jose.SignatureAlgorithm{tc.alg})
			if err != nil {
				t.Fatalf("go-jose cannot parse %s: %v", jws, err)
			}
			kid := parsed.Signatures[0].Header.KeyID
			keys := set.Key(kid)
			if len(set.Keys) != 2 || len(keys) != 1 {
				t.Fatalf("kid %q: %d of %d keys", kid, len(keys), len(set.Keys))
			}
			got, err := parsed.Verify(keys[0])
			if err != nil || string(got) != payload {
				t.Fatalf("go-jose: %q, %v", got, err)
			}
			if typ := parsed.Signatures[0].Header.ExtraHeaders["typ"]; typ != "JWT" {
				t.Errorf("typ %v", typ)
			}
			// And the vault verifies go-jose's reading of it.
			if got := v.op(t, id, "verify", map[string]any{"jws": jws}, 200); got["valid"] != true || got["key_version"] != 1.0 {
				t.Errorf("verify = %v", got)
			}
		})
	}
}

// opensslIn runs openssl in dir, failing the test on an error.
func opensslIn(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("openssl", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// byokBlob wraps file material in dir for the wrapping key wrapping.pem
// with openssl alone, as docs/vault.md tells users to: RSA-OAEP-SHA-256 of
// a random AES-256 key, then AES-KWP (RFC 5649) of the material.
func byokBlob(t *testing.T, dir, material string) string {
	t.Helper()
	opensslIn(t, dir, "rand", "-out", "eph.key", "32")
	opensslIn(t, dir, "pkeyutl", "-encrypt", "-pubin", "-inkey", "wrapping.pem", "-in", "eph.key", "-out", "eph.wrapped",
		"-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256")
	eph, _ := os.ReadFile(filepath.Join(dir, "eph.key"))
	opensslIn(t, dir, "enc", "-id-aes256-wrap-pad", "-iv", "A65959A6", "-K", hex.EncodeToString(eph), "-in", material, "-out", "material.wrapped")
	a, _ := os.ReadFile(filepath.Join(dir, "eph.wrapped"))
	b, _ := os.ReadFile(filepath.Join(dir, "material.wrapped"))
	return base64.StdEncoding.EncodeToString(append(a, b...))
}

// TestVaultBYOKWithOpenSSL imports keys wrapped by openssl (an EC key, an
// AES key), uses them, and checks the other side: a signature verifies
// under the openssl key's public half, a ciphertext opens offline with the
// raw AES key and the documented additional data, and an export unwraps
// with openssl back to the material.
func TestVaultBYOKWithOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	v := newVaultEnv(t)
	dir := t.TempDir()
	wk := v.do(t, "GET", "/api/v1/vault/wrapping-key", nil, 200)
	if err := os.WriteFile(filepath.Join(dir, "wrapping.pem"), []byte(str(wk, "publicKey")), 0o600); err != nil {
		t.Fatal(err)
	}
	// An EC P-256 key.
	opensslIn(t, dir, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec.pem")
	opensslIn(t, dir, "pkcs8", "-topk8", "-nocrypt", "-in", "ec.pem", "-outform", "DER", "-out", "ec.der")
	ec := v.create(t, map[string]any{"name": "byok-ec", "algorithm": "EC", "curve": "P-256", "wrappedMaterial": byokBlob(t, dir, "ec.der")})
	got := v.do(t, "GET", keysPath+"/"+ec, nil, 200)
	if got["origin"] != "imported" || got["state"] != "Active" {
		t.Fatalf("imported key %v", got)
	}
	sig := str(v.op(t, ec, "sign", map[string]any{"input": b64s("byok"), "marshaling_algorithm": "asn1"}, 200), "signature")
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sig, "lk:v0:"))
	pemPub := opensslIn(t, dir, "pkey", "-in", "ec.pem", "-pubout")
	blk, _ := pem.Decode(pemPub)
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("byok"))
	if !ecdsa.VerifyASN1(pub.(*ecdsa.PublicKey), sum[:], raw) {
		t.Fatal("the imported key's signature does not verify under openssl's public key")
	}
	if v.do(t, "GET", keysPath+"/"+ec+"/public", nil, 200)["publicKey"] != string(pemPub) {
		t.Error("the imported key's public key is not openssl's")
	}
	// An AES-256 key, exportable.
	opensslIn(t, dir, "rand", "-out", "aes.key", "32")
	aesKey, _ := os.ReadFile(filepath.Join(dir, "aes.key"))
	blob := byokBlob(t, dir, "aes.key")
	id := v.create(t, map[string]any{"name": "byok-aes", "algorithm": "AES", "size": 256, "exportable": true, "wrappedMaterial": blob})
	ct := str(v.op(t, id, "encrypt", map[string]any{"plaintext": b64s("offline"), "associated_data": b64s("row")}, 200), "ciphertext")
	body, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(ct, "lk:v0:"))
	tenant, _ := hex.DecodeString(strings.ReplaceAll(v.tn.ID, "-", ""))
	keyID, _ := hex.DecodeString(strings.ReplaceAll(id, "-", ""))
	if body[0] != 1 || !bytes.Equal(body[1:17], keyID) {
		t.Fatalf("envelope head %x", body[:17])
	}
	ad := append([]byte("lk\x01"), tenant...)
	ad = append(ad, keyID...)
	ad = binary.BigEndian.AppendUint32(ad, 0)
	ad = append(ad, "row"...)
	block, _ := aes.NewCipher(aesKey)
	gcm, _ := cipher.NewGCM(block)
	pt, err := gcm.Open(nil, body[17:29], body[29:], ad)
	if err != nil || string(pt) != "offline" {
		t.Fatalf("offline decryption with the documented additional data: %q, %v", pt, err)
	}
	// Export for an RSA-3072 key made by openssl; unwrap with openssl.
	opensslIn(t, dir, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:3072", "-out", "mine.pem")
	minePub := opensslIn(t, dir, "pkey", "-in", "mine.pem", "-pubout")
	out := v.op(t, id, "export", map[string]any{"wrappingKey": string(minePub)}, 200)
	exported, _ := base64.StdEncoding.DecodeString(out["versions"].([]any)[0].(map[string]any)["wrappedMaterial"].(string))
	os.WriteFile(filepath.Join(dir, "x.eph"), exported[:384], 0o600)
	os.WriteFile(filepath.Join(dir, "x.kwp"), exported[384:], 0o600)
	opensslIn(t, dir, "pkeyutl", "-decrypt", "-inkey", "mine.pem", "-in", "x.eph", "-out", "x.key",
		"-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256")
	eph, _ := os.ReadFile(filepath.Join(dir, "x.key"))
	opensslIn(t, dir, "enc", "-d", "-id-aes256-wrap-pad", "-iv", "A65959A6", "-K", hex.EncodeToString(eph), "-in", "x.kwp", "-out", "x.material")
	if back, _ := os.ReadFile(filepath.Join(dir, "x.material")); !bytes.Equal(back, aesKey) {
		t.Fatal("openssl's unwrapping of the export is not the imported key")
	}
	// Refusals: a blob for another key, another OAEP hash, the wrong type.
	other := byokBlob(t, dir, "ec.der")
	v.do(t, "POST", keysPath, map[string]any{"name": "x1", "algorithm": "AES", "size": 256, "wrappedMaterial": other}, 400)
	opensslIn(t, dir, "pkeyutl", "-encrypt", "-pubin", "-inkey", "wrapping.pem", "-in", "eph.key", "-out", "eph.sha1",
		"-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha1")
	a, _ := os.ReadFile(filepath.Join(dir, "eph.sha1"))
	b, _ := os.ReadFile(filepath.Join(dir, "material.wrapped"))
	v.do(t, "POST", keysPath, map[string]any{"name": "x2", "algorithm": "EC", "curve": "P-256", "wrappedMaterial": base64.StdEncoding.EncodeToString(append(a, b...))}, 400)
	v.do(t, "POST", keysPath, map[string]any{"name": "x3", "algorithm": "AES", "size": 256, "wrappedMaterial": "bm90IGEgYmxvYg=="}, 400)
	// An imported version; a rotated wrapping key still takes its previous version for 24 hours.
	prev := str(wk, "kid")
	v.do(t, "POST", "/api/v1/vault/wrapping-key/rotate", nil, 201)
	if ver := v.do(t, "POST", keysPath+"/"+id+"/versions", map[string]any{"wrappedMaterial": blob, "wrappingKid": prev}, 201); ver["version"] != 1.0 {
		t.Errorf("imported version %v", ver)
	}
	v.do(t, "POST", keysPath+"/"+id+"/versions", map[string]any{"wrappedMaterial": blob}, 400) // wrapped for the old version, not the current
	v.advance(24 * 60 * 60 * 1e9)
	v.do(t, "POST", keysPath+"/"+id+"/versions", map[string]any{"wrappedMaterial": blob, "wrappingKid": prev}, 400)
	v.op(t, id, "rotate", nil, 409) // imported keys import versions
}
