// Package jsonenc appends JSON strings exactly as encoding/json writes
// them, for the few hot encoders written by hand (the audit chain's
// canonical record, the claims of issued tokens) whose bytes must not
// differ from encoding/json's.
package jsonenc

import "unicode/utf8"

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string, byte for byte as json.Marshal
// writes a string: '"', '\\' and control characters escaped (\b, \f, \n,
// \r and \t by name), '<', '>' and '&' escaped as HTML-safe \u00XX, U+2028
// and U+2029 escaped, and each byte that is not part of valid UTF-8
// written as \ufffd.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
