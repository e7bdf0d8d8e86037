//go:build race

package mfa_test

// raceEnabled: the race detector slows Go code several times and
// argon2id's assembly not at all, so timings under it say nothing of the
// program's.
const raceEnabled = true
