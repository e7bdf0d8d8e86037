package events_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/events"
)

func TestCatalog(t *testing.T) {
	types := events.NativeTypes()
	if len(types) < 20 {
		t.Errorf("only %d native types", len(types))
	}
	schema := events.SchemaFields()
	for i, typ := range types {
		if i > 0 && types[i-1].ID >= typ.ID {
			t.Errorf("catalogue not sorted at %s", typ.ID)
		}
		if cat, ok := events.CategoryOf(typ.ID); !ok || cat != typ.Category {
			t.Errorf("%s: category %s, but its hundreds digit gives %s", typ.ID, typ.Category, cat)
		}
		for _, f := range typ.Fields {
			if !slices.Contains(schema, f) {
				t.Errorf("%s uses %q, which is not in the meta-schema", typ.ID, f)
			}
		}
		got, ok := events.LookupType(typ.ID)
		if !ok {
			t.Errorf("LookupType(%s) not found", typ.ID)
		}
		if diff := cmp.Diff(typ, got); diff != "" {
			t.Errorf("LookupType(%s) (-want +got):\n%s", typ.ID, diff)
		}
	}
	for _, id := range []string{"000", "199", "10001", "", "5x7"} {
		if _, ok := events.LookupType(id); ok {
			t.Errorf("LookupType(%q) found a type", id)
		}
	}
	want := []events.Category{"AUTHENTICATION", "CREDENTIAL_VERIFICATION", "CREDENTIAL_MANAGEMENT", "LIFECYCLE",
		"COMMUNICATION", "PROFILE", "CONSENT_MANAGEMENT", "PRIVACY", "ACCESS"}
	if diff := cmp.Diff(want, events.Categories()); diff != "" {
		t.Errorf("Categories (-want +got):\n%s", diff)
	}
	if typ, _ := events.LookupType("507"); typ.Name != "OTP SMS sent" || typ.Category != events.Communication {
		t.Errorf("507 = %+v", typ)
	}
	// Copies: changing a result does not change the catalogue.
	types[0].Fields[0] = "changed"
	if events.NativeTypes()[0].Fields[0] == "changed" {
		t.Error("NativeTypes shares its Fields slices")
	}
}

// catalogDoc renders CATALOG.md from the catalogue and the meta-schema.
func catalogDoc() string {
	var b strings.Builder
	b.WriteString("# Event type catalogue\n\n")
	b.WriteString("Generated from `catalog.go` and `schema/000.schema.json` by `go test ./events -run TestCatalogDoc -update`; do not edit by hand.\n\n")
	b.WriteString("Native event types have 3-digit ids; the hundreds digit gives the category. Applications post types numbered ")
	fmt.Fprintf(&b, "%d and above, and may not use a native category name in `event_type_details.category`. ", events.MinExternalTypeID)
	b.WriteString("Type `000` is the meta-schema: it holds every field below, and no event has it.\n\n")
	b.WriteString("## Categories\n\n| ids | category |\n|---|---|\n")
	for i, c := range events.Categories() {
		fmt.Fprintf(&b, "| %dXX | %s |\n", i+1, c)
	}
	b.WriteString("\n## Native types\n\nEvery type also has `event_type_id`, `event_type_details` (set from this table) and `timestamp`; other fields are dropped.\n\n")
	b.WriteString("| id | name | category | fields |\n|---|---|---|---|\n")
	for _, t := range events.NativeTypes() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.ID, t.Name, t.Category, strings.Join(t.Fields, ", "))
	}
	b.WriteString("\n## Meta-schema fields (type 000)\n\n")
	b.WriteString(strings.Join(events.SchemaFields(), ", "))
	b.WriteString("\n")
	return b.String()
}

func TestCatalogDoc(t *testing.T) {
	got := catalogDoc()
	if *update {
		if err := os.WriteFile("CATALOG.md", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("CATALOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("CATALOG.md is out of date; run go test ./events -run TestCatalogDoc -update (-file +catalogue):\n%s", diff)
	}
}

func TestIsNativeCategory(t *testing.T) {
	for _, c := range []string{"AUTHENTICATION", "privacy", " Access\t", "META_SCHEMA"} {
		if !events.IsNativeCategory(c) {
			t.Errorf("%q is not native", c)
		}
	}
	for _, c := range []string{"", "AUTH", "ACCESS_PARTNER", "MY_CATEGORY"} {
		if events.IsNativeCategory(c) {
			t.Errorf("%q is native", c)
		}
	}
}

// TestSchemaFields pins the meta-schema to the event table of the
// specification (section H).
func TestSchemaFields(t *testing.T) {
	want := []string{"amr", "application_session", "authenticated_user", "authentication", "block", "client_application",
		"count", "device", "email_template", "end_user", "event_type_details", "event_type_id", "group",
		"identifier_value", "location", "message_details", "new_state", "phone_number", "previous_state",
		"processing_purpose", "profile_attribute", "protocol", "service_as_a_client_application", "sms_template",
		"sub_group", "timestamp", "username"}
	if diff := cmp.Diff(want, events.SchemaFields()); diff != "" {
		t.Errorf("meta-schema fields (-spec +schema):\n%s", diff)
	}
}

func TestMetaSchemaIsACopy(t *testing.T) {
	s := events.MetaSchemaJSON()
	if !strings.Contains(string(s), `"https://json-schema.org/draft/2020-12/schema"`) {
		t.Fatalf("not a 2020-12 schema: %.100s", s)
	}
	s[0] = 'x'
	if events.MetaSchemaJSON()[0] == 'x' {
		t.Error("MetaSchemaJSON shares its bytes")
	}
}
