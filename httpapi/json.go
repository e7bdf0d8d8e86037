package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/fault"
)

// MaxJSONDepth bounds the nesting of request bodies, so a deeply nested
// document cannot make a decoder recurse far.
const MaxJSONDepth = 32

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if v == nil {
		return
	}
	e := jsonEncoders.Get().(*jsonEncoder)
	e.buf.Reset()
	e.enc.Encode(v)
	w.Write(e.buf.Bytes())
	if e.buf.Cap() <= maxPooledJSON {
		jsonEncoders.Put(e)
	}
}

// jsonEncoder is writeJSON's encoder and buffer, recycled: every answer
// would otherwise allocate both and grow the buffer several times, and
// the ResponseWriter copies what it is given.
type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var jsonEncoders = sync.Pool{New: func() any {
	e := new(jsonEncoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooledJSON bounds the buffers kept for reuse, so that one large
// answer does not pin its memory in the pool.
const maxPooledJSON = 64 << 10

// encodeJSON is writeJSON's body: v as JSON, HTML characters unescaped,
// with a final newline.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return b.Bytes()
}

// jsonAnswer is how a creating route with an Idempotency-Key answers the
// result its service prepared (idempotency.EncodeAnswer): as writeJSON
// would with status, byte for byte, so the answer kept in the write's
// transaction is the answer sent.
func jsonAnswer(status int) func(v any) (int, string, []byte) {
	return func(v any) (int, string, []byte) { return status, "application/json", encodeJSON(v) }
}

// readBody reads the (already size-limited) body.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, fault.E(fault.TooLarge, "request body too large", err)
		}
		return nil, fault.E(fault.Invalid, "cannot read request body", err)
	}
	return b, nil
}

// decodeJSON reads a JSON object body into v. Unknown fields are ignored;
// malformed JSON, a wrong content type, excessive depth or trailing data are
// fault.Invalid; an oversized body is fault.TooLarge.
func decodeJSON(r *http.Request, v any) error {
	b, err := readTypedBody(r)
	if err != nil {
		return err
	}
	return unmarshalJSON(b, v)
}

// readTypedBody checks the content type and reads the body, whose JSON
// checkJSON has yet to check.
func readTypedBody(r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, fault.E(fault.Invalid, "Content-Type must be application/json")
		}
	}
	return readBody(r)
}

func unmarshalJSON(b []byte, v any) error {
	if err := checkJSON(b); err != nil {
		return err
	}
	return decodeChecked(b, v)
}

// checkJSON refuses an empty body, a null one, and excessive depth.
func checkJSON(b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return fault.E(fault.Invalid, "request body is empty")
	}
	if err := refuseNull(b); err != nil {
		return err
	}
	return checkDepth(b, MaxJSONDepth)
}

// decodeChecked decodes a body checkJSON passed into v.
func decodeChecked(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "body"
			}
			return fault.E(fault.Invalid, fault.Field(field), "field "+field+" must be of type "+jsonType(te.Type.Kind().String()), err)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fault.E(fault.Invalid, "malformed JSON at byte "+itoa(se.Offset), err)
		}
		return fault.E(fault.Invalid, "malformed JSON", err)
	}
	if dec.More() {
		return fault.E(fault.Invalid, "unexpected data after the JSON value")
	}
	return nil
}

// refuseNull refuses a body that is the JSON null: every JSON route takes
// an object (or, for event posts, an array), and decoding null into one
// would leave it as if the body had been {}.
func refuseNull(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return fault.E(fault.Invalid, "request body must be a JSON object, not null")
	}
	return nil
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	case "ptr", "interface":
		return "value"
	default:
		return "number"
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// checkDepth scans JSON text and refuses nesting deeper than max.
func checkDepth(b []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return fault.E(fault.Invalid, "JSON nested too deeply")
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// queryInt reads an optional integer query parameter; absent means def.
func queryInt(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fault.E(fault.Invalid, fault.Field(name), name+" must be an integer")
	}
	return n, nil
}
