// Package ids generates identifiers shared by every area.
package ids

import (
	"crypto/rand"
	"fmt"
	"regexp"
)

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// NewGUID returns a random (version 4) GUID in lower-case text form.
func NewGUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// IsGUID reports whether s is a GUID in lower-case text form.
func IsGUID(s string) bool { return guidRE.MatchString(s) }
