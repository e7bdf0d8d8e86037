package identity_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var fast = identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}

func TestDefaultPasswordParamsMeetOWASP(t *testing.T) {
	// OWASP Password Storage Cheat Sheet: argon2id with at least m=19 MiB, t=2, p=1.
	want := identity.PasswordParams{Time: 2, MemoryKiB: 19 * 1024, Threads: 1}
	if !identity.OWASPMinimum().AtLeast(want) {
		t.Fatalf("OWASPMinimum = %+v is weaker than %+v", identity.OWASPMinimum(), want)
	}
	if fast.AtLeast(identity.OWASPMinimum()) {
		t.Fatal("AtLeast accepts test parameters as OWASP strength")
	}
}

func TestHashVerify(t *testing.T) {
	h := identity.NewHasher(fast, 2)
	ctx := context.Background()
	enc, err := h.Hash(ctx, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("encoding = %q", enc)
	}
	enc2, _ := h.Hash(ctx, "correct horse")
	if enc == enc2 {
		t.Fatal("two hashes of one password are equal: salt missing")
	}
	tests := []struct {
		name, enc, pw string
		want          bool
	}{
		{"right", enc, "correct horse", true},
		{"wrong", enc, "correct horsE", false},
		{"unknown user (empty hash)", "", "correct horse", false},
		{"not argon2id", strings.Replace(enc, "argon2id", "argon2i", 1), "correct horse", false},
		{"garbled", "$argon2id$v=19$m=x$y$z", "correct horse", false},
		{"absurd memory", "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$aGFzaA", "x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.Verify(ctx, tt.enc, tt.pw)
			if err != nil || got != tt.want {
				t.Errorf("Verify = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestObjectIDFormats(t *testing.T) {
	id := identity.NewObjectID()
	tests := []struct {
		name, text, format string
		wantErr            bool
	}{
		{"base64 default", id.String(), "", false},
		{"base64 explicit", id.String(), "base64", false},
		{"hex", id.Hex(), "hex", false},
		{"hex given as base64", id.Hex(), "base64", true},
		{"short", "AAAA", "base64", true},
		{"bad hex", "zz", "hex", true},
		{"bad format", id.String(), "octal", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := identity.ParseObjectID(tt.text, tt.format)
			if tt.wantErr {
				if !fault.Is(fault.Invalid, err) {
					t.Fatalf("err = %v, want Invalid", err)
				}
				return
			}
			if err != nil || got != id {
				t.Fatalf("ParseObjectID = %v, %v", got, err)
			}
		})
	}
	if _, err := identity.ParseObjectID(id.String(), "octal"); fault.MessageOf(err) != "Object-Id-Format must be either base64 (default) or hex." {
		t.Errorf("format message = %q", fault.MessageOf(err))
	}
}

func TestThrottleWindow(t *testing.T) {
	th := identity.NewThrottle(3, time.Minute)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 3 {
		th.Fail("k", now)
	}
	if blocked, wait := th.Blocked("k", now.Add(10*time.Second)); !blocked || wait != 50*time.Second {
		t.Fatalf("Blocked = %v, %v", blocked, wait)
	}
	if blocked, _ := th.Blocked("other", now); blocked {
		t.Fatal("unrelated key blocked")
	}
	if blocked, _ := th.Blocked("k", now.Add(time.Minute)); blocked {
		t.Fatal("still blocked after the window")
	}
	th.Fail("j", now)
	th.Succeed("j")
	th.Fail("j", now)
	th.Fail("j", now)
	if blocked, _ := th.Blocked("j", now); blocked {
		t.Fatal("success did not reset failures")
	}
}
