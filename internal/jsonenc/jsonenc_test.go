package jsonenc_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/latchkey/latchkey/internal/jsonenc"
)

func check(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonenc.AppendString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
		t.Errorf("AppendString(%q) = %q, encoding/json writes %q", s, got, want)
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", "a\"b\\c", "<script>&amp;</script>", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
		"line\u2028para\u2029", "é€😀", "bad\xffutf8\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	} {
		check(t, s)
	}
}

// FuzzAppendString holds AppendString to json.Marshal on any string.
func FuzzAppendString(f *testing.F) {
	f.Add("a<b>&c\u2028\xff\x00\"\\")
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}
