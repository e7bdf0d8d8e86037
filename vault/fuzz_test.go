package vault_test

import (
	"encoding/json"
	"testing"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vault"
)

// FuzzCryptoBodies sends arbitrary JSON bodies to every operation of keys
// of each type: the answer is a result or a client error (400, 403, 409,
// 413), never an internal error or a panic, and a batch keeps one answer
// per item.
func FuzzCryptoBodies(f *testing.F) {
	a, _, _ := twoProcesses(f)
	keys := map[string]string{}
	for _, spec := range []vault.KeySpec{{Algorithm: "AES", Size: 256}, {Algorithm: "HMAC"}, {Algorithm: "ED25519"}, {Algorithm: "EC", Curve: "P-256"}, {Algorithm: "ML-KEM"}, {Algorithm: "X-WING"}, {Algorithm: "ML-DSA", Size: 44}} {
		k, err := a.CreateKey(f.Context(), admin, vault.CreateRequest{Name: spec.Algorithm, KeySpec: spec})
		if err != nil {
			f.Fatal(err)
		}
		keys[spec.Algorithm] = k.ID
	}
	ops := []string{vault.CryptoEncrypt, vault.CryptoDecrypt, vault.CryptoRewrap, vault.CryptoDatakeyWrapped, vault.CryptoDatakeyPlaintext,
		vault.CryptoHMAC, vault.CryptoSign, vault.CryptoVerify, vault.CryptoEncapsulate, vault.CryptoDecapsulate}
	algs := []string{"AES", "HMAC", "ED25519", "EC", "ML-KEM", "X-WING", "ML-DSA"}
	for i, seed := range []string{
		`{"plaintext":"aGk=","associated_data":"YWQ="}`, `{"ciphertext":"lk:v0:AQIDBAUGBwgJCgsMDQ4PEBE"}`, `{"input":"aGk=","output":"jws","jws_header":{"typ":"JWT"}}`,
		`{"input":"aGk=","prehashed":true,"hash_algorithm":"sha2-512"}`, `{"batch_input":[{"plaintext":"aGk=","reference":"r"},{"plaintext":5},null,[]]}`,
		`{"jws":"a.b.c"}`, `{"signature":"lk:v0:AAAA","input":""}`, `{"bits":512}`, `{"context":"Y3R4","input":"aGk="}`, `{"destination_key":"AES","ciphertext":"x"}`,
		`{"key_version":-1}`, `{"batch_input":[]}`, `[]`, `null`,
	} {
		f.Add(uint8(i), uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, op, alg uint8, body []byte) {
		o, k := ops[int(op)%len(ops)], algs[int(alg)%len(algs)]
		out, err := a.Crypto(t.Context(), admin, o, vault.KeyRef{Key: keys[k]}, func(b *vault.Body) error {
			if err := json.Unmarshal(body, b); err != nil {
				return fault.E(fault.Invalid, "malformed JSON", err)
			}
			return nil
		})
		if err != nil {
			if kind := fault.KindOf(err); kind != fault.Invalid && kind != fault.Forbidden && kind != fault.Conflict && kind != fault.TooLarge {
				t.Fatalf("%s with %s: %v (%v)", o, k, err, kind)
			}
			return
		}
		for _, r := range out.Results {
			if r.Err != nil && fault.KindOf(r.Err) == fault.Internal {
				t.Fatalf("%s with %s: item failed internally: %v", o, k, r.Err)
			}
		}
	})
}
