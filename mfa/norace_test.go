//go:build !race

package mfa_test

const raceEnabled = false
