package events

import (
	"bytes"
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed schema/000.schema.json
var metaSchema000 []byte

// MetaSchemaJSON returns a copy of the JSON Schema (draft 2020-12) of the fake
// event type 000: every attribute an event may carry. It is the one source of
// truth for validation and for which attributes are kept, and may be served
// to applications that post events; CATALOG.md lists its fields.
func MetaSchemaJSON() []byte { return bytes.Clone(metaSchema000) }

// metaSchemaURL is the $id of the meta-schema.
const metaSchemaURL = "https://latchkey.invalid/schemas/events/000.json"

// shape is the tree of known attributes read from the schema: the pruning
// walk keeps only attributes that appear in it, and rewrites date-time
// strings to TimeLayout.
type shape struct {
	props    map[string]*shape // object properties; nil for non-objects
	items    *shape            // array items
	dateTime bool              // string with format date-time
}

type compiled struct {
	schema *jsonschema.Schema
	shape  *shape
}

// metaSchema compiles the meta-schema once. The schema is embedded and tested,
// so a failure is a programming error and panics.
var metaSchema = sync.OnceValue(func() compiled {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(metaSchema000))
	if err != nil {
		panic(fmt.Sprintf("events: embedded meta-schema: %v", err))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(metaSchemaURL, doc); err != nil {
		panic(fmt.Sprintf("events: embedded meta-schema: %v", err))
	}
	sch, err := c.Compile(metaSchemaURL)
	if err != nil {
		panic(fmt.Sprintf("events: embedded meta-schema: %v", err))
	}
	root, _ := doc.(map[string]any)
	defs, _ := root["$defs"].(map[string]any)
	return compiled{schema: sch, shape: buildShape(root, defs, 0)}
})

// buildShape reads the property tree of a schema node, following local
// "#/$defs/name" references.
func buildShape(node map[string]any, defs map[string]any, depth int) *shape {
	if depth > 16 {
		panic("events: meta-schema nests too deeply")
	}
	if ref, ok := node["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		def, ok := defs[name].(map[string]any)
		if !found || !ok {
			panic("events: meta-schema: unsupported $ref " + ref)
		}
		return buildShape(def, defs, depth+1)
	}
	s := &shape{}
	if f, _ := node["format"].(string); f == "date-time" {
		s.dateTime = true
	}
	if props, ok := node["properties"].(map[string]any); ok {
		s.props = make(map[string]*shape, len(props))
		for name, p := range props {
			pm, _ := p.(map[string]any)
			s.props[name] = buildShape(pm, defs, depth+1)
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		s.items = buildShape(items, defs, depth+1)
	}
	return s
}

// SchemaFields returns the top-level attribute names of the meta-schema.
func SchemaFields() []string {
	var out []string
	for name := range metaSchema().shape.props {
		out = append(out, name)
	}
	return sortStrings(out)
}
