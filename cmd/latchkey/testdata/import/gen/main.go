// Command gen writes the import fixtures of cmd/latchkey/testdata/import
// (go run ./cmd/latchkey/testdata/import/gen from the repository root).
//
// Where a public test vector exists it is used as it is, converted to the
// source's shape: Kratos's hasher tests (argon2id, pbkdf2-sha256 with
// password "test"), Drepper's SHA-crypt vectors ("Hello world!"),
// libscrypt's scrypt vector ("password"), Firebase's published scrypt
// vector (github.com/firebase/scrypt, "user1password"), the bcrypt vector
// of Kratos's tests ("test"). Keycloak's own algorithms (PBKDF2-SHA512
// with a 64-byte key, argon2 at Keycloak's defaults m=7168 t=5, the
// deprecated hashedSaltedValue form) are made here with Go's crypto/pbkdf2
// and x/crypto/argon2 from fixed salts, since PyPI (argon2-cffi, hashlib
// through gen.py) is out of reach in this sandbox; Auth0's bcrypt cost 10
// with x/crypto/bcrypt.
package main

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func write(name string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	must(err)
	must(os.WriteFile(name, append(b, '\n'), 0o644))
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func unb64(s string) []byte {
	b, err := base64.RawStdEncoding.DecodeString(s)
	must(err)
	return b
}

func str(v any) string {
	b, err := json.Marshal(v)
	must(err)
	return string(b)
}

func keycloakCred(alg string, iter int, key, salt []byte, params map[string][]string) map[string]any {
	if params == nil {
		params = map[string][]string{}
	}
	return map[string]any{
		"id": "cred-" + alg, "type": "password", "createdDate": 1700000000000,
		"secretData":     str(map[string]any{"value": b64(key), "salt": b64(salt), "additionalParameters": map[string]any{}}),
		"credentialData": str(map[string]any{"hashIterations": iter, "algorithm": alg, "additionalParameters": params}),
	}
}

func main() {
	dir := "cmd/latchkey/testdata/import/"
	salt16 := []byte("latchkey-salt-16")

	// Keycloak: kc.sh export --users realm_file's shape.
	sha512key, err := pbkdf2.Key(sha512.New, "kc-sha512-pw", salt16, 210000, 64)
	must(err)
	old, err := pbkdf2.Key(sha256.New, "kc-old-pw", salt16, 27500, 64)
	must(err)
	argon := argon2.IDKey([]byte("kc-argon2-pw"), salt16, 5, 7168, 1, 32)
	users := []map[string]any{
		{"id": "0b1c7d8e-0001-4000-8000-000000000001", "username": "kc-kratos-vector", "email": "vector@example.com", "emailVerified": true,
			"firstName": "Vec", "lastName": "Tor", "enabled": true, "createdTimestamp": 1700000000000,
			"credentials": []any{keycloakCred("pbkdf2-sha256", 100000, unb64("QJxzfvdbHYBpydCbHoFg3GJEqMFULwskiuqiJctoYpI"), unb64("1jP+5Zxpxgtee/iPxGgOz0RfE9/KJuDElP1ley4VxXc"), nil)}},
		{"id": "0b1c7d8e-0002-4000-8000-000000000002", "username": "kc-sha512", "enabled": true, "createdTimestamp": 1700000001000,
			"credentials": []any{keycloakCred("pbkdf2-sha512", 210000, sha512key, salt16, nil)}},
		{"id": "0b1c7d8e-0003-4000-8000-000000000003", "username": "kc-argon2", "enabled": true, "createdTimestamp": 1700000002000,
			"credentials": []any{keycloakCred("argon2", 5, argon, salt16, map[string][]string{"hashLength": {"32"}, "memory": {"7168"}, "type": {"id"}, "version": {"1.3"}, "parallelism": {"1"}})}},
		{"id": "0b1c7d8e-0004-4000-8000-000000000004", "username": "kc-deprecated", "enabled": true,
			"credentials": []any{map[string]any{"type": "password", "hashedSaltedValue": b64(old), "salt": b64(salt16), "hashIterations": 27500, "algorithm": "pbkdf2-sha256"}}},
		{"id": "0b1c7d8e-0005-4000-8000-000000000005", "username": "kc-disabled", "enabled": false,
			"credentials": []any{keycloakCred("pbkdf2-sha256", 100000, unb64("QJxzfvdbHYBpydCbHoFg3GJEqMFULwskiuqiJctoYpI"), unb64("1jP+5Zxpxgtee/iPxGgOz0RfE9/KJuDElP1ley4VxXc"), nil)}},
		{"id": "0b1c7d8e-0006-4000-8000-000000000006", "username": "kc-otp", "enabled": true,
			"credentials": []any{keycloakCred("pbkdf2-sha256", 100000, unb64("QJxzfvdbHYBpydCbHoFg3GJEqMFULwskiuqiJctoYpI"), unb64("1jP+5Zxpxgtee/iPxGgOz0RfE9/KJuDElP1ley4VxXc"), nil),
				map[string]any{"type": "otp", "secretData": `{"value":"c2VjcmV0"}`, "credentialData": `{"subType":"totp","digits":6,"period":30,"algorithm":"HmacSHA1"}`}}},
		{"id": "0b1c7d8e-0007-4000-8000-000000000007", "username": "kc-federated", "enabled": true, "federationLink": "ldap-provider-1"},
	}
	write(dir+"keycloak-realm.json", map[string]any{
		"id": "acme", "realm": "acme", "enabled": true,
		"clients":    []any{map[string]any{"clientId": "account", "redirectUris": []string{"/realms/acme/account/*"}}},
		"users":      users,
		"smtpServer": map[string]any{},
		"attributes": map[string]any{"frontendUrl": ""},
	})

	// Auth0: the password-hash export, NDJSON.
	bc, err := bcrypt.GenerateFromPassword([]byte("auth0-password"), 10)
	must(err)
	a0 := fmt.Sprintf(`{"_id":{"$oid":"60425dc43519d90068f82973"},"email":"zero@example.com","email_verified":true,"passwordHash":%q,"password_set_date":{"$date":"2021-03-05T16:38:28.389Z"},"tenant":"acme","connection":"Username-Password-Authentication","_tmp_is_unique":true}
{"_id":{"$oid":"60425dc43519d90068f82974"},"alt_id":"5f8b3c","email":"kratos@example.com","email_verified":false,"passwordHash":"$2a$12$o6hx.Wog/wvFSkT/Bp/6DOxCtLRTDj7lm9on9suF/WaCGNVHbkfL6","tenant":"acme","connection":"Username-Password-Authentication"}
`, string(bc))
	must(os.WriteFile(dir+"auth0.ndjson", []byte(a0), 0o644))

	// Firebase: auth:export --format=json with the published vector.
	write(dir+"firebase.json", map[string]any{"users": []any{
		map[string]any{"localId": "fbUser1", "email": "user1@example.com", "emailVerified": true, "displayName": "User One",
			"passwordHash": "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==", "salt": "42xEC+ixf3L2lw==",
			"createdAt": "1700000000000", "lastSignedInAt": "1700000100000", "providerUserInfo": []any{}},
		map[string]any{"localId": "fbGoogle", "email": "google@example.com", "emailVerified": true, "createdAt": "1700000000000",
			"providerUserInfo": []any{map[string]any{"providerId": "google.com", "rawId": "1234"}}},
	}})
	must(os.WriteFile(dir+"firebase-hash-config.txt", []byte(`hash_config {
  algorithm: SCRYPT,
  base64_signer_key: jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==,
  base64_salt_separator: Bw==,
  rounds: 8,
  mem_cost: 14,
}
`), 0o644))

	// Kratos: what `kratos import identities` takes.
	ident := func(id, email, hash string) map[string]any {
		return map[string]any{"id": id, "schema_id": "default", "state": "active", "traits": map[string]any{"email": email},
			"verifiable_addresses": []any{map[string]any{"value": email, "verified": true, "via": "email", "status": "completed"}},
			"credentials":          map[string]any{"password": map[string]any{"config": map[string]any{"hashed_password": hash}}}}
	}
	write(dir+"kratos.json", []any{
		ident("8f2c0000-0000-4000-8000-000000000001", "argon@example.com", "$argon2id$v=19$m=32,t=2,p=4$cm94YnRVOW5jZzFzcVE4bQ$MNzk5BtR2vUhrp6qQEjRNw"),
		ident("8f2c0000-0000-4000-8000-000000000002", "scrypt@example.com", "$scrypt$ln=65536,r=8,p=1$MTIzNDU2Nzg$NuB+vs2zc0fb2UzIRwwAV6ZWb3St8+X9IedYI1gQsoo"),
		ident("8f2c0000-0000-4000-8000-000000000003", "crypt@example.com", "$sha512-crypt$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"),
		ident("8f2c0000-0000-4000-8000-000000000004", "md5@example.com", "$md5$CY9rzUYh03PK3k6DJie09g=="),
	})

	// JSONL: the route's own lines, refused forms included.
	must(os.WriteFile(dir+"users.jsonl", []byte(`{"name":"drepper","externalId":"j-1","passwordHash":"$5$rounds=10000$saltstringsaltst$3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA"}
{"name":"plain","externalId":"j-2","password":"plain-password-1","email":"plain@example.com"}
{"name":"ssha","externalId":"j-3","passwordHash":"{ssha512}dOeDLmVpHJThhHeag10Hm2g4T7s3SBE6rGHcXUolXJHVufY4qT782rwZ/0XE6cuLcBZ0KpnwmUzRpAEtZBdv+JYEEtZQs/uC"}
{"name":"unsalted","externalId":"j-4","passwordHash":"{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="}
{"name":"too-costly","externalId":"j-5","passwordHash":"$pbkdf2-sha256$i=2000001,l=32$1jP+5Zxpxgtee/iPxGgOz0RfE9/KJuDElP1ley4VxXc$QJxzfvdbHYBpydCbHoFg3GJEqMFULwskiuqiJctoYpI"}
{"name":"admin-like","externalId":"j-6","roles":["tenant-admin"]}
{"name":"passkey-only","externalId":"j-7"}
`), 0o644))
}
