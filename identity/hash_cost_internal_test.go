//go:build unix

package identity

import (
	"encoding/base64"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
)

// R17 (API-cli.md, Targets): the most expensive accepted parameters of
// each scheme cost at most 40x one argon2id at the platform's parameters
// and at most 128 MiB, measured in the same run; one step past a bound is
// refused.

const (
	maxCostRatio   = 40
	maxCostMemory  = 128 << 20 // bytes
	costTries      = 3
	baselineTries  = 5                        // per try of the costly hash: argon2id's 50 ms is the noisier
	filler16       = "AAAAAAAAAAAAAAAAAAAAAA" // 16 bytes of base64, no padding
	filler32       = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	drepper512Hash = "svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"
	drepper256Hash = "5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"
)

// b64n is n zero bytes in unpadded standard base64.
func b64n(n int) string { return base64.RawStdEncoding.EncodeToString(make([]byte, n)) }

// ab64n is n zero bytes in passlib's adapted base64.
func ab64n(n int) string { return strings.ReplaceAll(b64n(n), "+", ".") }

// costBounds pairs, per bound, the most expensive hash a scheme accepts
// with the same hash one step past that bound. Where a scheme has several
// dimensions (argon2's m, t, p), the most expensive hash sets every one to
// its bound, and each dimension has its own step past.
var costBounds = []struct {
	name     string
	atBound  string   // the most expensive accepted form of the scheme
	past     []string // one step past each of its bounds
	sameCost bool     // costs what another line measures: not timed again
}{
	{
		name:    "argon2id",
		atBound: "$argon2id$v=19$m=131072,t=6,p=16$" + b64n(16) + "$" + b64n(32),
		past: []string{
			"$argon2id$v=19$m=131073,t=6,p=16$" + b64n(16) + "$" + b64n(32),
			"$argon2id$v=19$m=131072,t=7,p=16$" + b64n(16) + "$" + b64n(32), // m·t
			"$argon2id$v=19$m=65536,t=11,p=16$" + b64n(16) + "$" + b64n(32),
			"$argon2id$v=19$m=131072,t=6,p=17$" + b64n(16) + "$" + b64n(32),
		},
	},
	{
		name:     "argon2id, t 10",
		sameCost: true, // less m·t than the line above
		atBound:  "$argon2id$v=19$m=78643,t=10,p=16$" + b64n(16) + "$" + b64n(32),
		past:     []string{"$argon2id$v=19$m=78644,t=10,p=16$" + b64n(16) + "$" + b64n(32)},
	},
	{
		name:     "argon2i",
		sameCost: true, // argon2id's function, with another indexing
		atBound:  "$argon2i$v=19$m=131072,t=6,p=16$" + b64n(16) + "$" + b64n(32),
		past: []string{
			"$argon2i$v=19$m=131073,t=6,p=16$" + b64n(16) + "$" + b64n(32),
			"$argon2i$v=19$m=131072,t=7,p=16$" + b64n(16) + "$" + b64n(32),
			"$argon2i$v=19$m=131072,t=6,p=17$" + b64n(16) + "$" + b64n(32),
		},
	},
	{
		name:    "bcrypt",
		atBound: "$2b$13$" + strings.Repeat("C", 53),
		past:    []string{"$2b$14$" + strings.Repeat("C", 53)},
	},
	{
		name:    "pbkdf2-sha1",
		atBound: "$pbkdf2-sha1$i=2000000,l=20$" + b64n(16) + "$" + b64n(20),
		past: []string{
			"$pbkdf2-sha1$i=2000001,l=20$" + b64n(16) + "$" + b64n(20),
			"$pbkdf2-sha1$i=2000000,l=21$" + b64n(16) + "$" + b64n(21),
		},
	},
	{
		name:    "pbkdf2-sha256",
		atBound: "$pbkdf2-sha256$i=2000000,l=32$" + b64n(16) + "$" + b64n(32),
		past: []string{
			"$pbkdf2-sha256$i=2000001,l=32$" + b64n(16) + "$" + b64n(32),
			"$pbkdf2-sha256$i=2000000,l=33$" + b64n(16) + "$" + b64n(33),
			"$pbkdf2-sha256$2000001$" + ab64n(16) + "$" + ab64n(32),
			"pbkdf2_sha256$2000001$saltsaltsalt$" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
		},
	},
	{
		// Keycloak's 64-byte keys: twice the blocks, so half the iterations.
		name:     "pbkdf2-sha256, 64-byte key",
		sameCost: true,
		atBound:  "$pbkdf2-sha256$i=1000000,l=64$" + b64n(16) + "$" + b64n(64),
		past:     []string{"$pbkdf2-sha256$i=1000001,l=64$" + b64n(16) + "$" + b64n(64)},
	},
	{
		name:    "pbkdf2-sha512",
		atBound: "$pbkdf2-sha512$i=1000000,l=64$" + b64n(16) + "$" + b64n(64),
		past: []string{
			"$pbkdf2-sha512$i=1000001,l=64$" + b64n(16) + "$" + b64n(64),
			"$pbkdf2-sha512$i=1000000,l=65$" + b64n(16) + "$" + b64n(65),
		},
	},
	{
		name:    "scrypt",
		atBound: "$scrypt$ln=17,r=8,p=2$" + b64n(16) + "$" + b64n(32),
		past: []string{
			"$scrypt$ln=18,r=8,p=1$" + b64n(16) + "$" + b64n(32),
			"$scrypt$ln=17,r=9,p=1$" + b64n(16) + "$" + b64n(32),
			"$scrypt$ln=17,r=8,p=3$" + b64n(16) + "$" + b64n(32), // N·r·p
		},
	},
	{
		name:     "scrypt, p 4",
		sameCost: true, // the same N·r·p as above, half the memory
		atBound:  "$scrypt$ln=16,r=8,p=4$" + b64n(16) + "$" + b64n(32),
		past: []string{
			"$scrypt$ln=16,r=8,p=5$" + b64n(16) + "$" + b64n(32),
			"$scrypt$ln=14,r=9,p=4$" + b64n(16) + "$" + b64n(32),
		},
	},
	{
		name:    "firebase-scrypt",
		atBound: "$firescrypt$ln=15,r=8,p=1$" + b64n(16) + "$" + b64n(64) + "$Bw==$" + b64n(64),
		past: []string{
			"$firescrypt$ln=16,r=8,p=1$" + b64n(16) + "$" + b64n(64) + "$Bw==$" + b64n(64),
			"$firescrypt$ln=15,r=9,p=1$" + b64n(16) + "$" + b64n(64) + "$Bw==$" + b64n(64),
		},
	},
	{
		name:    "ssha512",
		atBound: "{SSHA512}" + base64.StdEncoding.EncodeToString(make([]byte, 64+64)),
		past: []string{
			"{SSHA512}" + base64.StdEncoding.EncodeToString(make([]byte, 64+65)),
			"{SSHA512}" + base64.StdEncoding.EncodeToString(make([]byte, 64+3)),
		},
	},
	{
		name:    "sha256-crypt",
		atBound: "$5$rounds=1000000$saltstring$" + drepper256Hash,
		past:    []string{"$5$rounds=1000001$saltstring$" + drepper256Hash},
	},
	{
		name:    "sha512-crypt",
		atBound: "$6$rounds=1000000$saltstring$" + drepper512Hash,
		past:    []string{"$6$rounds=1000001$saltstring$" + drepper512Hash},
	},
}

// TestCostBoundsStepPast: each scheme's most expensive form is accepted,
// and one step past each of its bounds is refused, before anything runs.
func TestCostBoundsStepPast(t *testing.T) {
	for _, b := range costBounds {
		t.Run(b.name, func(t *testing.T) {
			if _, err := parsePasswordHash(b.atBound); err != nil {
				t.Errorf("at the bound: %v", err)
			}
			for _, p := range b.past {
				_, err := parsePasswordHash(p)
				if code := HashErrorCode(err); code != "hash_cost_exceeded" && code != "unsupported_hash" {
					t.Errorf("%s: code %q (%v), want it refused", p, code, err)
				}
			}
		})
	}
}

// cpuTime is the process's user and system CPU time: the cost of a hash
// across every thread it uses (argon2's lanes run in parallel), and less
// sensitive than the wall clock to the other processes on a shared machine.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure returns the CPU time and the bytes allocated of one call.
func measure(t *testing.T, f func()) (time.Duration, uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := cpuTime(t)
	f()
	d := cpuTime(t) - start
	runtime.ReadMemStats(&after)
	return d, after.TotalAlloc - before.TotalAlloc
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestCostBoundsRatio measures, in one run, one argon2id at the
// platform's parameters (OWASPMinimum, latchkey.New's default) against
// each scheme's most expensive accepted hash: the median CPU time of a few
// tries, interleaved so that the machine's load falls on both alike, must
// be at most 40x, and the memory a check declares to the hashing slots
// must be at most 128 MiB and cover what it allocates.
func TestCostBoundsRatio(t *testing.T) {
	if testing.Short() {
		t.Skip("about a minute of CPU: runs without -short")
	}
	if raceEnabled {
		t.Skip("cost ratios under the race detector are not the program's (go test ./... measures them)")
	}
	p := OWASPMinimum()
	salt := make([]byte, saltLen)
	baseline := func() { argon2.IDKey([]byte("a-password"), salt, p.Time, p.MemoryKiB, p.Threads, keyLen) }
	baseline() // warm up
	for _, b := range costBounds {
		if b.sameCost {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			h, err := parsePasswordHash(b.atBound)
			if err != nil {
				t.Fatal(err)
			}
			if kh, ok := h.(keyedHash); ok && kh.keyName() != "" {
				t.Fatalf("%s names a key; use a form that carries it", b.atBound)
			}
			var base, cost []time.Duration
			var allocated uint64
			for range costTries {
				for range baselineTries {
					d, _ := measure(t, baseline)
					base = append(base, d)
				}
				d, a := measure(t, func() { h.verify([]byte("a-password")) })
				cost = append(cost, d)
				allocated = max(allocated, a)
			}
			ratio := float64(median(cost)) / float64(median(base))
			declared := uint64(h.memoryKiB()) << 10
			t.Logf("%s: %v CPU against argon2id's %v: %.1fx; declares %d KiB, allocates %d KiB",
				b.name, median(cost), median(base), ratio, declared>>10, allocated>>10)
			if ratio > maxCostRatio {
				t.Errorf("%s costs %.1fx one argon2id (m=%d KiB, t=%d), over %dx", b.name, ratio, p.MemoryKiB, p.Time, maxCostRatio)
			}
			if declared > maxCostMemory {
				t.Errorf("%s declares %d MiB, over %d MiB", b.name, declared>>20, maxCostMemory>>20)
			}
			// The slots weigh a check by what it declares: a memory-hard
			// one must not allocate more (1 MiB of slack for the code
			// around it). SHA-crypt's library allocates as it goes, but
			// its garbage is never live at once, so it is not compared.
			if declared > 1<<20 && allocated > declared+1<<20 {
				t.Errorf("%s allocates %d KiB but declares %d KiB to the hashing slots", b.name, allocated>>10, declared>>10)
			}
		})
	}
}
