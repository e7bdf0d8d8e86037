package httpapi_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/httpapi"
)

func TestOpenAPIFragmentsOrder(t *testing.T) {
	frags := httpapi.OpenAPIFragments()
	if len(frags) < 2 || frags[0].Name != httpapi.OpenAPIBaseFragment {
		t.Fatalf("fragments %v: want %s first and at least one area", fragNames(frags), httpapi.OpenAPIBaseFragment)
	}
	for i := 2; i < len(frags); i++ {
		if frags[i-1].Name >= frags[i].Name {
			t.Errorf("area fragments not in name order: %v", fragNames(frags))
		}
	}
}

func fragNames(frags []httpapi.OpenAPIFragment) []string {
	var out []string
	for _, f := range frags {
		out = append(out, f.Name)
	}
	return out
}

func TestOpenAPIDocumentDeterministic(t *testing.T) {
	a, err := httpapi.OpenAPIDocument(httpapi.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, err := httpapi.OpenAPIDocument(httpapi.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Fatal("two builds of the document differ")
		}
	}
	if !strings.HasPrefix(string(a), "{\n  \"openapi\": \"3.1.") {
		t.Errorf("document does not start with the openapi version: %.40q", a)
	}
}

func TestOpenAPIPlaceholders(t *testing.T) {
	opts := httpapi.Defaults()
	opts.BaseURL, opts.AuthURL, opts.PublicURL = "/platform/v9", "/auth", "https://id.example.com/"
	b, err := httpapi.OpenAPIDocument(opts)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []struct{ URL string }
		Paths   map[string]any
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/platform/v9/auth/tokens/", "/auth/oauth/v1/token"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("path %s missing", p)
		}
	}
	if diff := cmp.Diff("https://id.example.com", doc.Servers[0].URL); diff != "" {
		t.Errorf("server URL (-want +got):\n%s", diff)
	}
	for _, ph := range []string{"{base_url}", "{auth_url}", "{public_url}", "{audit_url}", "{authenticator_url}", "{notification_url}", "{eventstream_url}", "{events_url}", "{provisioning_url}"} {
		if strings.Contains(string(b), ph) {
			t.Errorf("placeholder %s left in the document", ph)
		}
	}
}

func TestMergeOpenAPI(t *testing.T) {
	base := httpapi.OpenAPIFragment{Name: "base.json", Data: []byte(`{"openapi":"3.1.0","info":{"title":"t","version":"1"},"components":{"schemas":{"E":{"type":"object"}}}}`)}
	frag := func(name, data string) httpapi.OpenAPIFragment {
		return httpapi.OpenAPIFragment{Name: name, Data: []byte(data)}
	}
	t.Run("union", func(t *testing.T) {
		b, err := httpapi.MergeOpenAPI(httpapi.Defaults(), []httpapi.OpenAPIFragment{base,
			frag("a.json", `{"paths":{"{base_url}/a":{}},"components":{"schemas":{"A":{}},"responses":{"RA":{"description":"x"}}},"tags":[{"name":"a"}]}`),
			frag("b.json", `{"paths":{"/b":{}},"components":{"schemas":{"B":{}}},"tags":[{"name":"b"}]}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"openapi": "3.1.0", "info": map[string]any{"title": "t", "version": "1"},
			"paths":      map[string]any{"/api/v1/a": map[string]any{}, "/b": map[string]any{}},
			"components": map[string]any{"schemas": map[string]any{"E": map[string]any{"type": "object"}, "A": map[string]any{}, "B": map[string]any{}}, "responses": map[string]any{"RA": map[string]any{"description": "x"}}},
			"tags":       []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("merged document (-want +got):\n%s", diff)
		}
	})
	for _, tc := range []struct {
		name string
		frag httpapi.OpenAPIFragment
		want string
	}{
		{"duplicate path", frag("a.json", `{"paths":{"/b":{}}}`), `path "/b" defined in a.json and z.json`},
		{"duplicate component", frag("a.json", `{"components":{"schemas":{"E":{}}}}`), "component schemas/E defined in base.json and a.json"},
		{"duplicate tag", frag("a.json", `{"tags":[{"name":"b"}]}`), `tag "b" defined in a.json and z.json`},
		{"base key in an area", frag("a.json", `{"info":{}}`), `a.json: top-level key "info" belongs in base.json`},
		{"unknown key", frag("a.json", `{"pathz":{}}`), `a.json: unknown top-level key "pathz"`},
		{"malformed", frag("a.json", `{"paths":`), "a.json: unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := httpapi.MergeOpenAPI(httpapi.Defaults(), []httpapi.OpenAPIFragment{base, tc.frag,
				frag("z.json", `{"paths":{"/b":{}},"tags":[{"name":"b"}]}`)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("embedded fragments have no duplicates", func(t *testing.T) {
		if _, err := httpapi.OpenAPIDocument(httpapi.Defaults()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestOpenAPIConventions checks what every fragment must do (see
// httpapi/openapi/README.md): every path item accepts traceparent, and every
// response declares X-Trace-Id and a JSON body (or none).
func TestOpenAPIConventions(t *testing.T) {
	b, err := httpapi.OpenAPIDocument(httpapi.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	type ref struct {
		Ref string `json:"$ref"`
	}
	type response struct {
		Ref     string `json:"$ref"`
		Headers map[string]json.RawMessage
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct{ Responses map[string]response }
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths {
		var params []ref
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &params); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Contains(params, ref{"#/components/parameters/Traceparent"}) {
			t.Errorf("%s: path item does not list #/components/parameters/Traceparent", path)
		}
		for method, raw := range item {
			if !slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}, method) {
				continue
			}
			var op struct {
				Security  *json.RawMessage
				Responses map[string]response
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			if op.Security == nil {
				t.Errorf("%s %s: no security (use [] for a public operation)", method, path)
			}
			for code, r := range op.Responses {
				if r.Ref != "" {
					r = doc.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
				}
				if _, ok := r.Headers["X-Trace-Id"]; !ok {
					t.Errorf("%s %s %s: response does not declare X-Trace-Id", method, path, code)
				}
			}
		}
	}
}
