package identity_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// The vectors below were made by other implementations: Kratos's hasher
// tests (ory/kratos hash/hasher_test.go), Drepper's SHA-crypt reference
// (glibc and libxcrypt test tables), Firebase's published scrypt vector
// (github.com/firebase/scrypt), libscrypt through pg_pwhash, a Python
// {SSHA512} implementation's test, and the OpenBSD bcrypt vectors.
var foreignVectors = []struct {
	name, hash, password, scheme string
}{
	{"kratos bcrypt", "$2a$12$o6hx.Wog/wvFSkT/Bp/6DOxCtLRTDj7lm9on9suF/WaCGNVHbkfL6", "test", identity.SchemeBcrypt},
	{"openbsd bcrypt", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW", "U*U", identity.SchemeBcrypt},
	{"kratos argon2id t=2", "$argon2id$v=19$m=32,t=2,p=4$cm94YnRVOW5jZzFzcVE4bQ$MNzk5BtR2vUhrp6qQEjRNw", "test", identity.SchemeArgon2id},
	{"kratos argon2id t=5", "$argon2id$v=19$m=32,t=5,p=4$cm94YnRVOW5jZzFzcVE4bQ$fBxypOL0nP/zdPE71JtAV71i487LbX3fJI5PoTN6Lp4", "test", identity.SchemeArgon2id},
	{"kratos argon2i", "$argon2i$v=19$m=65536,t=3,p=4$kk51rW/vxIVCYn+EG4kTSg$NyT88uraJ6im6dyha/M5jhXvpqlEdlS/9fEm7ScMb8c", "test", identity.SchemeArgon2i},
	{"kratos pbkdf2-sha256", "$pbkdf2-sha256$i=100000,l=32$1jP+5Zxpxgtee/iPxGgOz0RfE9/KJuDElP1ley4VxXc$QJxzfvdbHYBpydCbHoFg3GJEqMFULwskiuqiJctoYpI", "test", identity.SchemePBKDF2SHA256},
	{"kratos pbkdf2-sha512", "$pbkdf2-sha512$i=100000,l=32$bdHBpn7OWOivJMVJypy2UqR0UnaD5prQXRZevj/05YU$+wArTfv1a+bNGO1iZrmEdVjhA+lL11wF4/IxpgYfPwc", "test", identity.SchemePBKDF2SHA512},
	{"drepper sha256 default rounds", "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5", "Hello world!", identity.SchemeSHA256Crypt},
	{"drepper sha256 rounds=5000", "$5$rounds=5000$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5", "Hello world!", identity.SchemeSHA256Crypt},
	{"drepper sha256 rounds=10000", "$5$rounds=10000$saltstringsaltst$3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA", "Hello world!", identity.SchemeSHA256Crypt},
	{"drepper sha256 long salt", "$5$rounds=5000$toolongsaltstrin$Un/5jzAHMgOGZ5.mWJpuVolil07guHPvOW8mGRcvxa5", "This is just a test", identity.SchemeSHA256Crypt},
	{"drepper sha512 default rounds", "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1", "Hello world!", identity.SchemeSHA512Crypt},
	{"kanidm crypt sha512", "{crypt}$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1", "Hello world!", identity.SchemeSHA512Crypt},
	{"python crypt sha512 rounds=1000", "$6$rounds=1000$salt$NqhXojlgP5NLvJojBnjQD87i66jhb8s3bZord3hSZoIgbCJqUfJdp7pclsLBBqgn02fAtd/vn4lieLeX5J.h90", "pass", identity.SchemeSHA512Crypt},
	{"libscrypt scrypt", "$scrypt$ln=16,r=8,p=1$MTIzNDU2Nzg$NuB+vs2zc0fb2UzIRwwAV6ZWb3St8+X9IedYI1gQsoo", "password", identity.SchemeScrypt},
	{"python ssha512", "{ssha512}dOeDLmVpHJThhHeag10Hm2g4T7s3SBE6rGHcXUolXJHVufY4qT782rwZ/0XE6cuLcBZ0KpnwmUzRpAEtZBdv+JYEEtZQs/uC", "password", identity.SchemeSSHA512},
}

func newTestHasher() *identity.Hasher {
	return identity.NewHasher(identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, 2)
}

// TestForeignHashesVerify: every vector verifies with its password and
// is refused with another, and the hash's scheme is named; a verified
// foreign hash comes with its argon2id replacement, which verifies too.
func TestForeignHashesVerify(t *testing.T) {
	if testing.Short() {
		// Seconds of bcrypt, scrypt and PBKDF2 on one goroutine: the race
		// detector (CI's -short run) multiplies them and finds nothing;
		// go test ./... runs it.
		t.Skip("password hashing on one goroutine; skipped in -short")
	}
	h := newTestHasher()
	ctx := context.Background()
	for _, v := range foreignVectors {
		t.Run(v.name, func(t *testing.T) {
			scheme, err := identity.ParsePasswordHash(v.hash)
			if err != nil || scheme != v.scheme {
				t.Fatalf("ParsePasswordHash = %q, %v; want %q", scheme, err, v.scheme)
			}
			res, err := h.Check(ctx, v.hash, v.password, nil)
			if err != nil || !res.OK {
				t.Fatalf("Check(right password) = %+v, %v", res, err)
			}
			if res.Upgrade == "" {
				t.Fatal("a foreign hash that verified has no argon2id replacement")
			}
			if again, err := h.Check(ctx, res.Upgrade, v.password, nil); err != nil || !again.OK || again.Upgrade != "" {
				t.Errorf("the replacement: %+v, %v", again, err)
			}
			if res, err := h.Check(ctx, v.hash, v.password+"x", nil); err != nil || res.OK || res.Upgrade != "" {
				t.Errorf("Check(wrong password) = %+v, %v", res, err)
			}
		})
	}
}

// TestFirebaseScryptVector: Firebase's published vector, through a named
// key and through Kratos's $firescrypt$ form that carries the key.
func TestFirebaseScryptVector(t *testing.T) {
	const (
		signer = "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA=="
		salt   = "42xEC+ixf3L2lw=="
		want   = "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="
	)
	sk, _ := base64.StdEncoding.DecodeString(signer)
	sb, _ := base64.StdEncoding.DecodeString(salt)
	key := identity.FirebaseKey{SignerKey: sk, SaltSeparator: []byte{7}, Rounds: 8, MemCost: 14}
	got, err := identity.FirebaseScrypt([]byte("user1password"), sb, key)
	if err != nil || base64.StdEncoding.EncodeToString(got) != want {
		t.Fatalf("FirebaseScrypt = %s, %v; want %s", base64.StdEncoding.EncodeToString(got), err, want)
	}
	named := "$firebase-scrypt$k=default$" + salt + "$" + want
	lookup := func(_ context.Context, name string) (identity.FirebaseKey, error) {
		if name != "default" {
			return identity.FirebaseKey{}, fault.E(fault.NotFound, "no such key")
		}
		return key, nil
	}
	h := newTestHasher()
	if res, err := h.Check(t.Context(), named, "user1password", lookup); err != nil || !res.OK || res.Upgrade == "" || res.Scheme != identity.SchemeFirebaseScrypt {
		t.Errorf("named key: %+v, %v", res, err)
	}
	if res, err := h.Check(t.Context(), named, "user2password", lookup); err != nil || res.OK {
		t.Errorf("named key, wrong password: %+v, %v", res, err)
	}
	other := "$firebase-scrypt$k=other$" + salt + "$" + want
	if res, err := h.Check(t.Context(), other, "user1password", lookup); err != nil || res.OK {
		t.Errorf("unknown key: %+v, %v", res, err)
	}
	kratos := "$firescrypt$ln=14,r=8,p=1$" + salt + "$" + want + "$Bw==$" + signer
	if res, err := h.Check(t.Context(), kratos, "user1password", nil); err != nil || !res.OK {
		t.Errorf("kratos form: %+v, %v", res, err)
	}
}

// TestRefusedHashes: weak forms and one step past each bound are refused
// with their code, before anything runs.
func TestRefusedHashes(t *testing.T) {
	for _, tc := range []struct{ name, hash, code string }{
		{"unsalted sha1 (kanidm)", "{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=", "weak_hash"},
		{"unsalted md5 (kratos)", "$md5$CY9rzUYh03PK3k6DJie09g==", "weak_hash"},
		{"md5crypt", "$1$rasmusle$rISCgZzpwk3UhDidwXvin0", "weak_hash"},
		{"apr1", "$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/", "weak_hash"},
		{"des crypt", "rl.3StKT.4T8M", "weak_hash"},
		{"bare md5", "5f4dcc3b5aa765d61d8327deb882cf99", "weak_hash"},
		{"nt hash", "$NT$8846f7eaee8fb117ad06bdd830b7586c", "weak_hash"},
		{"phpass", "$P$984478476IagS59wHZvyQMArzfx58u.", "weak_hash"},
		{"ssha without salt", "{SSHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=", "weak_hash"},
		{"bcrypt cost 15 (kratos)", "$2a$15$GRvRO2nrpYTEuPQX6AieaOlZ4.7nMGsXpt.QWMev1zrP86JNspZbO", "hash_cost_exceeded"},
		{"argon2 m past 128 MiB", "$argon2id$v=19$m=131073,t=1,p=1$cm94YnRVOW5jZzFzcVE4bQ$MNzk5BtR2vUhrp6qQEjRNw", "hash_cost_exceeded"},
		{"argon2 t past 10", "$argon2id$v=19$m=64,t=11,p=1$cm94YnRVOW5jZzFzcVE4bQ$MNzk5BtR2vUhrp6qQEjRNw", "hash_cost_exceeded"},
		{"argon2 p past 16", "$argon2id$v=19$m=1024,t=1,p=17$cm94YnRVOW5jZzFzcVE4bQ$MNzk5BtR2vUhrp6qQEjRNw", "hash_cost_exceeded"},
		{"pbkdf2-sha256 past 2M", "$pbkdf2-sha256$i=2000001,l=32$1jP+5Zxpxgtee/iPxGgOz0RfE9/KJuDElP1ley4VxXc$QJxzfvdbHYBpydCbHoFg3GJEqMFULwskiuqiJctoYpI", "hash_cost_exceeded"},
		{"pbkdf2-sha512 past 1M", "$pbkdf2-sha512$i=1000001,l=32$bdHBpn7OWOivJMVJypy2UqR0UnaD5prQXRZevj/05YU$+wArTfv1a+bNGO1iZrmEdVjhA+lL11wF4/IxpgYfPwc", "hash_cost_exceeded"},
		{"scrypt ln past 17", "$scrypt$ln=18,r=8,p=1$MTIzNDU2Nzg$NuB+vs2zc0fb2UzIRwwAV6ZWb3St8+X9IedYI1gQsoo", "hash_cost_exceeded"},
		{"scrypt r past 8", "$scrypt$ln=14,r=9,p=1$MTIzNDU2Nzg$NuB+vs2zc0fb2UzIRwwAV6ZWb3St8+X9IedYI1gQsoo", "hash_cost_exceeded"},
		{"scrypt p past 4", "$scrypt$ln=14,r=8,p=5$MTIzNDU2Nzg$NuB+vs2zc0fb2UzIRwwAV6ZWb3St8+X9IedYI1gQsoo", "hash_cost_exceeded"},
		{"scrypt N written as ln (kratos)", "$scrypt$ln=16384,r=8,p=1$MTIzNDU2Nzg$NuB+vs2zc0fb2UzIRwwAV6ZWb3St8+X9IedYI1gQsoo", "unsupported_hash"},
		{"sha512-crypt past 1M rounds", "$6$rounds=1000001$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1", "hash_cost_exceeded"},
		{"firescrypt mem_cost past 15", "$firescrypt$ln=16,r=8,p=1$42xEC+ixf3L2lw==$lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==$Bw==$Bw==", "hash_cost_exceeded"},
		{"firescrypt rounds past 8", "$firescrypt$ln=14,r=9,p=1$42xEC+ixf3L2lw==$lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==$Bw==$Bw==", "hash_cost_exceeded"},
		{"ssha salt past 64 bytes", "{SSHA}" + base64.StdEncoding.EncodeToString(make([]byte, 20+65)), "unsupported_hash"},
		{"argon2d", "$argon2d$v=19$m=64,t=1,p=1$cm94YnRVOW5jZzFzcVE4bQ$MNzk5BtR2vUhrp6qQEjRNw", "unsupported_hash"},
		{"garbage", "hunter2", "unsupported_hash"},
		{"empty", "", "unsupported_hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := identity.ParsePasswordHash(tc.hash)
			if got := identity.HashErrorCode(err); got != tc.code || !fault.Is(fault.Invalid, err) {
				t.Errorf("ParsePasswordHash = %v (code %q), want code %q", err, got, tc.code)
			}
		})
	}
}

// TestCheckUpgradesWeakArgon2id: an argon2id weaker than the configured
// one is replaced too; one as strong is not.
func TestCheckUpgradesWeakArgon2id(t *testing.T) {
	weak := newTestHasher()
	strong := identity.NewHasher(identity.PasswordParams{Time: 2, MemoryKiB: 128, Threads: 1}, 2)
	ctx := t.Context()
	old, err := weak.Hash(ctx, "a-password-1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := strong.Check(ctx, old, "a-password-1", nil)
	if err != nil || !res.OK || res.Upgrade == "" {
		t.Fatalf("weaker argon2id: %+v, %v", res, err)
	}
	if res, err := strong.Check(ctx, res.Upgrade, "a-password-1", nil); err != nil || !res.OK || res.Upgrade != "" {
		t.Errorf("as strong: %+v, %v", res, err)
	}
	if res, err := strong.Check(ctx, "", "a-password-1", nil); err != nil || res.OK {
		t.Errorf("no hash: %+v, %v", res, err)
	}
}
