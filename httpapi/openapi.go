package httpapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/fault"
)

// The OpenAPI 3.1 document is kept as one fragment per area in
// httpapi/openapi/: base.json holds openapi, info, servers and the
// components every area shares (error bodies, security schemes, the
// traceparent parameter, common headers); every other *.json file holds one
// area's paths and components (and optionally tags). MergeOpenAPI joins
// them: paths, every components map and tags are unions, and a key defined
// twice is an error.
//
// Fragments are written with the placeholders of the specification and
// API.md ({base_url}, {auth_url}, {audit_url}, {authenticator_url},
// {notification_url}, {eventstream_url}, {events_url}, {provisioning_url})
// plus {public_url}; they are replaced in every key and string by the
// Options' values, so the document served by a Server describes the paths
// that Server registers.
//
//go:embed openapi/*.json
var openAPIFS embed.FS

// OpenAPIBaseFragment is the name of the fragment holding the document's
// shared parts; it is merged first.
const OpenAPIBaseFragment = "base.json"

// OpenAPIFragment is one file of the OpenAPI document.
type OpenAPIFragment struct {
	Name string // file name, e.g. "platform.json"
	Data []byte // JSON text
}

// OpenAPIFragments returns the embedded fragments: base.json first, then the
// area fragments in name order.
func OpenAPIFragments() []OpenAPIFragment {
	entries, err := fs.ReadDir(openAPIFS, "openapi")
	if err != nil {
		panic(err) // the directory is embedded; it cannot be missing
	}
	var out []OpenAPIFragment
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".json" {
			continue
		}
		b, err := openAPIFS.ReadFile("openapi/" + e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, OpenAPIFragment{Name: e.Name(), Data: b})
	}
	slices.SortStableFunc(out, func(a, b OpenAPIFragment) int {
		switch {
		case a.Name == b.Name:
			return 0
		case a.Name == OpenAPIBaseFragment:
			return -1
		case b.Name == OpenAPIBaseFragment:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// OpenAPIDocument returns the OpenAPI document describing the routes a
// Server built with opts registers: the embedded fragments merged by
// MergeOpenAPI.
func OpenAPIDocument(opts Options) ([]byte, error) {
	return MergeOpenAPI(opts, OpenAPIFragments())
}

// baseKeys are the top-level keys only the base fragment may set; area
// fragments may set areaKeys.
var (
	baseKeys = []string{"openapi", "info", "servers", "security", "externalDocs", "jsonSchemaDialect", "webhooks"}
	areaKeys = []string{"paths", "components", "tags"}
)

// MergeOpenAPI merges fragments into one document. The first fragment is the
// base: it alone may set openapi, info, servers and the other document-wide
// keys. Every fragment may add paths, components and tags. The result is
// deterministic (keys sorted, tags in fragment order); a path, a component of
// the same kind and name, or a tag defined twice is an error, as
// is an unknown top-level key.
func MergeOpenAPI(opts Options, frags []OpenAPIFragment) ([]byte, error) {
	if len(frags) == 0 {
		return nil, fmt.Errorf("openapi: no fragments")
	}
	repl := placeholderReplacer(opts)
	doc := map[string]any{}
	paths := map[string]any{}
	components := map[string]map[string]any{}
	var tags []any
	tagFrom := map[string]string{}
	pathFrom := map[string]string{}
	compFrom := map[string]string{}

	for i, f := range frags {
		var raw map[string]any
		dec := json.NewDecoder(bytes.NewReader(f.Data))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", f.Name, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("openapi: %s: data after the JSON object", f.Name)
		}
		fr, _ := substitute(raw, repl).(map[string]any)
		for k, v := range fr {
			switch {
			case slices.Contains(areaKeys, k):
			case slices.Contains(baseKeys, k) || strings.HasPrefix(k, "x-"):
				if i != 0 {
					return nil, fmt.Errorf("openapi: %s: top-level key %q belongs in %s", f.Name, k, frags[0].Name)
				}
				doc[k] = v
				continue
			default:
				return nil, fmt.Errorf("openapi: %s: unknown top-level key %q", f.Name, k)
			}
			switch k {
			case "paths":
				m, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("openapi: %s: paths is not an object", f.Name)
				}
				for p, item := range m {
					if prev, dup := pathFrom[p]; dup {
						return nil, fmt.Errorf("openapi: path %q defined in %s and %s", p, prev, f.Name)
					}
					pathFrom[p] = f.Name
					paths[p] = item
				}
			case "components":
				m, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("openapi: %s: components is not an object", f.Name)
				}
				for kind, sub := range m {
					sm, ok := sub.(map[string]any)
					if !ok {
						return nil, fmt.Errorf("openapi: %s: components.%s is not an object", f.Name, kind)
					}
					if components[kind] == nil {
						components[kind] = map[string]any{}
					}
					for name, c := range sm {
						key := kind + "/" + name
						if prev, dup := compFrom[key]; dup {
							return nil, fmt.Errorf("openapi: component %s/%s defined in %s and %s", kind, name, prev, f.Name)
						}
						compFrom[key] = f.Name
						components[kind][name] = c
					}
				}
			case "tags":
				l, ok := v.([]any)
				if !ok {
					return nil, fmt.Errorf("openapi: %s: tags is not an array", f.Name)
				}
				for _, t := range l {
					tm, _ := t.(map[string]any)
					name, _ := tm["name"].(string)
					if name == "" {
						return nil, fmt.Errorf("openapi: %s: a tag has no name", f.Name)
					}
					if prev, dup := tagFrom[name]; dup {
						return nil, fmt.Errorf("openapi: tag %q defined in %s and %s", name, prev, f.Name)
					}
					tagFrom[name] = f.Name
					tags = append(tags, t)
				}
			}
		}
	}
	if _, ok := doc["openapi"]; !ok {
		return nil, fmt.Errorf("openapi: %s sets no openapi version", frags[0].Name)
	}
	doc["paths"] = paths
	if len(components) > 0 {
		doc["components"] = components
	}
	if len(tags) > 0 {
		doc["tags"] = tags
	}
	return encodeDocument(doc)
}

// topOrder is the order of the document's top-level keys in the output;
// other keys (x-...) follow in name order.
var topOrder = []string{"openapi", "info", "jsonSchemaDialect", "servers", "security", "tags", "externalDocs", "paths", "webhooks", "components"}

// encodeDocument writes doc as indented JSON with its top-level keys in
// topOrder and every nested object's keys sorted.
func encodeDocument(doc map[string]any) ([]byte, error) {
	keys := slices.Collect(maps.Keys(doc))
	slices.SortFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(topOrder, a), slices.Index(topOrder, b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return strings.Compare(a, b)
	})
	var buf bytes.Buffer
	buf.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			buf.WriteString(",")
		}
		var v bytes.Buffer
		enc := json.NewEncoder(&v)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{k: doc[k]}); err != nil {
			return nil, fmt.Errorf("openapi: %w", err)
		}
		// Strip the one-key object's braces: "{\n  \"k\": ...\n  }\n".
		b := bytes.TrimSpace(v.Bytes())
		b = bytes.TrimSpace(b[1 : len(b)-1])
		buf.WriteString("\n  ")
		buf.Write(b)
	}
	buf.WriteString("\n}\n")
	return buf.Bytes(), nil
}

// placeholderReplacer replaces the spec's address placeholders by opts' values.
func placeholderReplacer(opts Options) *strings.Replacer {
	d := Defaults()
	public := strings.TrimSuffix(opts.PublicURL, "/")
	if public == "" {
		public = d.PublicURL
	}
	return strings.NewReplacer(
		"{public_url}", public,
		"{base_url}", opts.BaseURL,
		"{auth_url}", opts.AuthURL,
		"{audit_url}", opts.AuditURL,
		"{authenticator_url}", opts.AuthenticatorURL,
		"{notification_url}", opts.NotificationURL,
		"{eventstream_url}", opts.EventStreamURL,
		"{events_url}", opts.EventsURL,
		"{provisioning_url}", opts.ProvisioningURL,
	)
}

// substitute applies r to every string and object key of v.
func substitute(v any, r *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		return r.Replace(x)
	case []any:
		for i := range x {
			x[i] = substitute(x[i], r)
		}
		return x
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[r.Replace(k)] = substitute(e, r)
		}
		return m
	}
	return v
}

// openAPIHandler builds the document once, when the route is registered,
// and serves it. A document that cannot be built (a broken fragment, which
// the package's tests catch) is answered with a 500.
func (s *Server) openAPIHandler() handlerFunc {
	doc, err := OpenAPIDocument(s.opts)
	if err != nil {
		s.log.Error("cannot build the OpenAPI document", "err", err)
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		if err != nil {
			return fault.E(fault.Internal, err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
		return nil
	}
}
