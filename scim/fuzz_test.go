package scim_test

import (
	"testing"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/scim"
)

// FuzzPatch decodes a PATCH body and applies it to a user and a group:
// never a panic, every refusal a 400 or 413 with a scimType (400), and
// every accepted result a resource the mapper reads or refuses cleanly.
func FuzzPatch(f *testing.F) {
	for _, s := range []string{
		`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"Replace","path":"active","value":"False"}]}`,
		`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false,"name.givenName":"x"}}]}`,
		`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"Add","path":"emails[type eq \"work\"].value","value":"a@b"}]}`,
		`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"Remove","path":"members","value":[{"value":"u1"}]}]}`,
		`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"remove","path":"members[value eq \"u1\"]"}]}`,
		`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"add","value":{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"manager":"m"}}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ops, err := scim.DecodePatch(body)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		doc, _, err := scim.Patch(scim.Users, scim.UserResource(baseUser(), "https://x"), ops)
		if err != nil {
			checkRefusal(t, err)
		} else if _, err := scim.UserFromResource(doc, baseUser(), true); err != nil {
			checkRefusal(t, err)
		}
		gdoc, _, err := scim.Patch(scim.Groups, scim.GroupResource(baseGroup(), "https://x", false), ops)
		if err != nil {
			checkRefusal(t, err)
		} else if _, err := scim.GroupFromResource(gdoc, baseGroup()); err != nil {
			checkRefusal(t, err)
		}
	})
}

// FuzzNormalize reads a resource body as POST and PUT do.
func FuzzNormalize(f *testing.F) {
	f.Add([]byte(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"x","emails":[{"value":"a","primary":"true"}],"active":"False"}`))
	f.Add([]byte(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"G","members":[{"value":"u1"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		raw, err := scim.Decode(body)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if doc, _, err := scim.Normalize(scim.Users, raw); err != nil {
			checkRefusal(t, err)
		} else if _, err := scim.UserFromResource(doc, scim.User{Active: true}, true); err != nil {
			checkRefusal(t, err)
		}
		if doc, _, err := scim.Normalize(scim.Groups, raw); err != nil {
			checkRefusal(t, err)
		} else if _, err := scim.GroupFromResource(doc, scim.Group{}); err != nil {
			checkRefusal(t, err)
		}
	})
}

func checkRefusal(t *testing.T, err error) {
	t.Helper()
	switch fault.KindOf(err) {
	case fault.Invalid:
		if scim.TypeOf(err) == "" {
			t.Fatalf("400 without a scimType: %v", err)
		}
	case fault.TooLarge:
	default:
		t.Fatalf("refusal of kind %v: %v", fault.KindOf(err), err)
	}
}
