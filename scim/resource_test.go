package scim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/scim"
)

// TestCreateAndPut reads bodies as Okta and Entra send them on create and
// replace.
func TestCreateAndPut(t *testing.T) {
	body := mustJSON(t, `{
		"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
		"USERNAME": "Test.User@example.com",
		"Active": "True",
		"name": {"givenName": "Test", "familyName": "User", "middleName": "Q", "nickname": "ignored"},
		"emails": [{"primary": true, "value": "test.user@example.com", "type": "work"}],
		"externalId": "00u1",
		"id": "chosen-by-client",
		"groups": [{"value": "g1"}],
		"password": "Secr3t!",
		"addresses": [{"locality": "Oslo"}],
		"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "Eng", "costCenter": "x"}
	}`)
	doc, ignored, err := scim.Normalize(scim.Users, body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"addresses", "name.nickname", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:costCenter"}, ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	u, err := scim.UserFromResource(doc, scim.User{ID: "new", Active: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := scim.User{ID: "new", UserName: "Test.User@example.com", ExternalID: "00u1", GivenName: "Test", FamilyName: "User",
		Email: "test.user@example.com", EmailVerified: true, Active: true, Password: "Secr3t!",
		Profile: map[string]any{
			"name":       map[string]any{"middleName": "Q"},
			"emails":     []any{map[string]any{"primary": true, "value": "test.user@example.com", "type": "work"}},
			"enterprise": map[string]any{"department": "Eng"},
		}}
	if diff := cmp.Diff(want, u); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
	// Okta AIW's PUT without active leaves active as it was.
	u.Active = false
	put := mustJSON(t, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"Test.User@example.com","displayName":"T"}`)
	doc, _, err = scim.Normalize(scim.Users, put)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := scim.UserFromResource(doc, u, false)
	if err != nil {
		t.Fatal(err)
	}
	if u2.Active || u2.DisplayName != "T" || u2.GivenName != "" || u2.Email != "" || u2.Password != "" {
		t.Errorf("after PUT: %+v", u2)
	}
	// The email stays verified when it is the same address, with the
	// tenant's scim.emailsVerified off.
	u.EmailVerified = true
	u3, _ := scim.UserFromResource(scim.UserResource(u, ""), u, false)
	if !u3.EmailVerified {
		t.Error("a verified email lost its verification on an unchanged write")
	}
}

func TestNormalizeRefused(t *testing.T) {
	for _, tt := range []struct{ name, body, scimType string }{
		{"no schemas", `{"userName":"x"}`, scim.TypeInvalidSyntax},
		{"wrong schemas", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"userName":"x"}`, scim.TypeInvalidSyntax},
		{"wrong type", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":7}`, scim.TypeInvalidValue},
		{"two primaries", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"x","emails":[{"value":"a","primary":true},{"value":"b","primary":true}]}`, scim.TypeInvalidValue},
		{"extension not an object", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"x","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":"x"}`, scim.TypeInvalidValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := scim.Normalize(scim.Users, mustJSON(t, tt.body)); scim.TypeOf(err) != tt.scimType {
				t.Errorf("%v, want %s", err, tt.scimType)
			}
		})
	}
	doc, _, _ := scim.Normalize(scim.Users, mustJSON(t, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"]}`))
	if _, err := scim.UserFromResource(doc, scim.User{}, true); scim.TypeOf(err) != scim.TypeInvalidValue {
		t.Errorf("missing userName: %v", err)
	}
	emails := `[`
	for i := range 11 {
		if i > 0 {
			emails += ","
		}
		emails += `{"value":"a` + string(rune('a'+i)) + `@x"}`
	}
	doc, _, _ = scim.Normalize(scim.Users, mustJSON(t, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"x","emails":`+emails+`]}`))
	if _, err := scim.UserFromResource(doc, scim.User{}, true); scim.TypeOf(err) != scim.TypeInvalidValue {
		t.Errorf("11 emails: %v", err)
	}
	gdoc, _, _ := scim.Normalize(scim.Groups, mustJSON(t, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"G","members":[{"value":"g2","type":"Group"}]}`))
	if _, err := scim.GroupFromResource(gdoc, scim.Group{}); scim.TypeOf(err) != scim.TypeInvalidValue {
		t.Errorf("group as member: %v", err)
	}
}

func TestETag(t *testing.T) {
	if got := scim.ETag(7); got != `W/"7"` {
		t.Errorf("ETag = %s", got)
	}
	for _, tt := range []struct {
		h    string
		vers []int64
		any  bool
		ok   bool
	}{
		{`W/"7"`, []int64{7}, false, true},
		{`"7", W/"8"`, []int64{7, 8}, false, true},
		{`*`, nil, true, true},
		{`7`, nil, false, false},
		{`W/"x"`, nil, false, false},
	} {
		v, a, ok := scim.ParseETag(tt.h)
		if !cmp.Equal(v, tt.vers) || a != tt.any || ok != tt.ok {
			t.Errorf("ParseETag(%s) = %v %v %v", tt.h, v, a, ok)
		}
	}
}
