//go:build race

package identity

// raceEnabled: the race detector slows Go code several times and
// assembly not at all, so cost ratios measured under it say nothing of
// the program's, and take many minutes.
const raceEnabled = true
