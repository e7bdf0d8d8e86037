package scim_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/scim"
)

func mustJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

func ops(t *testing.T, s string) []scim.Operation {
	t.Helper()
	o, err := scim.DecodePatch([]byte(`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":` + s + `}`))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return o
}

var when = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func baseUser() scim.User {
	return scim.User{ID: "u1", UserName: "bjensen@example.com", ExternalID: "ext-1", DisplayName: "Babs", GivenName: "Barbara",
		FamilyName: "Jensen", Email: "bjensen@example.com", EmailVerified: true, Active: true,
		Profile: map[string]any{"emails": []any{map[string]any{"value": "bjensen@example.com", "type": "work", "primary": true}}},
		Roles:   []string{"user"}, Version: 3, Created: when, LastModified: when}
}

func baseGroup() scim.Group {
	return scim.Group{ID: "g1", DisplayName: "Sales", Members: []scim.Member{{Value: "u1"}, {Value: "u2"}}, Version: 2, Created: when, LastModified: when}
}

// TestPatchUser: each row is what one identity provider sends (Okta,
// Entra ID's default mode, Entra with aadOptscim062020, RFC 7644), and
// what the user must look like after it.
func TestPatchUser(t *testing.T) {
	tests := []struct {
		name    string
		ops     string
		want    func(u *scim.User)
		changed []string
	}{
		{"okta deactivate", `[{"op":"replace","value":{"active":false}}]`,
			func(u *scim.User) { u.Active = false }, []string{"active"}},
		{"entra default deactivate", `[{"op":"Replace","path":"active","value":"False"}]`,
			func(u *scim.User) { u.Active = false }, []string{"active"}},
		{"entra 062020 deactivate", `[{"op":"replace","path":"active","value":false}]`,
			func(u *scim.User) { u.Active = false }, []string{"active"}},
		{"entra reactivate True", `[{"op":"Replace","path":"active","value":"True"}]`,
			func(u *scim.User) {}, nil},
		{"add on a single-valued attribute replaces", `[{"op":"Add","path":"nickName","value":"Babs"}]`,
			func(u *scim.User) { u.Profile["nickName"] = "Babs" }, []string{"nickName"}},
		{"add again replaces", `[{"op":"Add","path":"displayName","value":"B. Jensen"},{"op":"add","path":"displayName","value":"BJ"}]`,
			func(u *scim.User) { u.DisplayName = "BJ" }, []string{"displayName"}},
		{"path case-insensitive", `[{"op":"replace","path":"NAME.GIVENNAME","value":"Babs"}]`,
			func(u *scim.User) { u.GivenName = "Babs" }, []string{"name"}},
		{"entra work email created", `[{"op":"Add","path":"emails[type eq \"home\"].value","value":"b@home.example"}]`,
			func(u *scim.User) {
				u.Profile["emails"] = append(u.Profile["emails"].([]any), map[string]any{"type": "home", "value": "b@home.example"})
			}, []string{"emails"}},
		{"entra work email replaced", `[{"op":"Replace","path":"emails[type eq \"work\"].value","value":"babs@example.com"}]`,
			func(u *scim.User) {
				u.Email, u.EmailVerified = "babs@example.com", true
				u.Profile["emails"] = []any{map[string]any{"value": "babs@example.com", "type": "work", "primary": true}}
			}, []string{"emails"}},
		{"value keys are paths", `[{"op":"replace","value":{"name.givenName":"Babs","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber":"701984"}}]`,
			func(u *scim.User) {
				u.GivenName = "Babs"
				u.Profile["enterprise"] = map[string]any{"employeeNumber": "701984"}
			}, []string{"name", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber"}},
		{"extension object value", `[{"op":"add","value":{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"Sales","manager":{"value":"u9"}}}}]`,
			func(u *scim.User) {
				u.Profile["enterprise"] = map[string]any{"department": "Sales", "manager": map[string]any{"value": "u9"}}
			}, []string{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager"}},
		{"entra manager as an id", `[{"op":"Add","path":"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager","value":"u9"}]`,
			func(u *scim.User) { u.Profile["enterprise"] = map[string]any{"manager": map[string]any{"value": "u9"}} },
			[]string{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager"}},
		{"remove a sub-attribute", `[{"op":"remove","path":"name.familyName"}]`,
			func(u *scim.User) { u.FamilyName = "" }, []string{"name"}},
		{"remove an email by filter", `[{"op":"remove","path":"emails[type eq \"work\"]"}]`,
			func(u *scim.User) { u.Email, u.EmailVerified, u.Profile = "", false, nil }, []string{"emails"}},
		{"remove an absent value succeeds", `[{"op":"remove","path":"emails[type eq \"home\"]"}]`,
			func(u *scim.User) {}, nil},
		{"unknown attribute ignored", `[{"op":"replace","path":"addresses[type eq \"work\"].locality","value":"Oslo"},{"op":"replace","value":{"userType":"Employee"}}]`,
			func(u *scim.User) {}, nil},
		{"unchanged id ignored", `[{"op":"replace","value":{"id":"u1","displayName":"New"}}]`,
			func(u *scim.User) { u.DisplayName = "New" }, []string{"displayName"}},
		{"password is written, never kept in the document", `[{"op":"replace","path":"password","value":"n3w-Secret!"}]`,
			func(u *scim.User) { u.Password = "n3w-Secret!" }, []string{"password"}},
		{"phone numbers replaced", `[{"op":"replace","path":"phoneNumbers","value":[{"value":"+47 1","type":"mobile"}]}]`,
			func(u *scim.User) {
				u.Profile["phoneNumbers"] = []any{map[string]any{"value": "+47 1", "type": "mobile"}}
			}, []string{"phoneNumbers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := baseUser()
			doc := scim.UserResource(old, "https://x/scim/v2")
			got, res, err := scim.Patch(scim.Users, doc, ops(t, tt.ops))
			if err != nil {
				t.Fatal(err)
			}
			u, err := scim.UserFromResource(got, old, true)
			if err != nil {
				t.Fatal(err)
			}
			want := baseUser()
			tt.want(&want)
			if diff := cmp.Diff(want, u); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.changed, res.Changed); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(scim.UserResource(baseUser(), "https://x/scim/v2"), doc); diff != "" {
				t.Errorf("Patch changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestPatchGroup(t *testing.T) {
	members := func(ids ...string) []scim.Member {
		var m []scim.Member
		for _, id := range ids {
			m = append(m, scim.Member{Value: id})
		}
		return m
	}
	tests := []struct {
		name string
		ops  string
		want []scim.Member
		dn   string
	}{
		{"entra default remove listed members", `[{"op":"Remove","path":"members","value":[{"value":"u1"}]}]`, members("u2"), ""},
		{"entra 062020 remove by filter", `[{"op":"remove","path":"members[value eq \"u2\"]"}]`, members("u1"), ""},
		{"add members array", `[{"op":"add","path":"members","value":[{"value":"u3"},{"value":"u4"}]}]`, members("u1", "u2", "u3", "u4"), ""},
		{"add a member twice succeeds", `[{"op":"Add","path":"members","value":[{"value":"u1"}]}]`, members("u1", "u2"), ""},
		{"remove an absent member succeeds", `[{"op":"remove","path":"members[value eq \"u9\"]"}]`, members("u1", "u2"), ""},
		{"entra default remove an absent member", `[{"op":"Remove","path":"members","value":[{"value":"u9"}]}]`, members("u1", "u2"), ""},
		{"replace members", `[{"op":"replace","path":"members","value":[{"value":"u5"}]}]`, members("u5"), ""},
		{"remove every member", `[{"op":"remove","path":"members"}]`, nil, ""},
		{"okta rename with the unchanged id", `[{"op":"replace","value":{"id":"g1","displayName":"New"}}]`, members("u1", "u2"), "New"},
		{"okta members add and remove in one request", `[{"op":"remove","path":"members[value eq \"u1\"]"},{"op":"add","path":"members","value":[{"value":"u7","display":"x"}]}]`, members("u2", "u7"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := scim.GroupResource(baseGroup(), "https://x/scim/v2", false)
			got, _, err := scim.Patch(scim.Groups, doc, ops(t, tt.ops))
			if err != nil {
				t.Fatal(err)
			}
			g, err := scim.GroupFromResource(got, baseGroup())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, g.Members); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			dn := tt.dn
			if dn == "" {
				dn = "Sales"
			}
			if g.DisplayName != dn {
				t.Errorf("displayName %q, want %q", g.DisplayName, dn)
			}
		})
	}
}

// TestPatchRefused: bad operations get RFC 7644's scimType and change
// nothing, however many operations before them applied.
func TestPatchRefused(t *testing.T) {
	tests := []struct {
		name     string
		rt       *scim.ResourceType
		ops      string
		scimType string
	}{
		{"remove without path", scim.Users, `[{"op":"remove"}]`, scim.TypeNoTarget},
		{"bad op", scim.Users, `[{"op":"move","path":"active"}]`, scim.TypeInvalidSyntax},
		{"bad path", scim.Users, `[{"op":"replace","path":"emails[type eq","value":"x"}]`, scim.TypeInvalidPath},
		{"filter on a single-valued attribute", scim.Users, `[{"op":"replace","path":"userName[value eq \"x\"]","value":"x"}]`, scim.TypeInvalidPath},
		{"id changed", scim.Users, `[{"op":"replace","value":{"id":"u2"}}]`, scim.TypeMutability},
		{"id by path", scim.Users, `[{"op":"replace","path":"id","value":"u1"}]`, scim.TypeMutability},
		{"meta", scim.Users, `[{"op":"replace","path":"meta.version","value":"W/\"9\""}]`, scim.TypeMutability},
		{"groups", scim.Users, `[{"op":"add","path":"groups","value":[{"value":"g1"}]}]`, scim.TypeMutability},
		{"roles", scim.Users, `[{"op":"add","path":"roles","value":[{"value":"tenant-admin"}]}]`, scim.TypeMutability},
		{"boolean from a number", scim.Users, `[{"op":"replace","path":"active","value":0}]`, scim.TypeInvalidValue},
		{"string for a non-boolean stays a string only", scim.Users, `[{"op":"replace","path":"displayName","value":false}]`, scim.TypeInvalidValue},
		{"too long", scim.Users, `[{"op":"replace","path":"userName","value":"` + string(make([]byte, 0)) + long(300) + `"}]`, scim.TypeInvalidValue},
		{"userName removed", scim.Users, `[{"op":"remove","path":"userName"}]`, scim.TypeInvalidValue},
		{"no value of the filter to replace", scim.Users, `[{"op":"replace","path":"emails[value co \"zzz\"].type","value":"home"}]`, scim.TypeNoTarget},
		{"two primaries", scim.Users, `[{"op":"add","path":"emails[type eq \"home\"]","value":{"value":"h@x","primary":true}}]`, scim.TypeInvalidValue},
		{"atomic: a good op then a bad one", scim.Users, `[{"op":"replace","path":"active","value":false},{"op":"replace","path":"id","value":"x"}]`, scim.TypeMutability},
		{"group displayName removed", scim.Groups, `[{"op":"remove","path":"displayName"}]`, scim.TypeInvalidValue},
		{"no path, not an object", scim.Users, `[{"op":"replace","value":"x"}]`, scim.TypeInvalidValue},
		{"unfilterable in a value filter", scim.Users, `[{"op":"remove","path":"emails[nothing eq \"x\"]"}]`, scim.TypeInvalidPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if tt.rt == scim.Users {
				doc = scim.UserResource(baseUser(), "https://x/scim/v2")
			} else {
				doc = scim.GroupResource(baseGroup(), "https://x/scim/v2", false)
			}
			got, _, err := scim.Patch(tt.rt, doc, ops(t, tt.ops))
			if err == nil || got != nil {
				t.Fatalf("Patch = %v, %v; want an error", got, err)
			}
			if scim.TypeOf(err) != tt.scimType {
				t.Errorf("scimType %q, want %q (%v)", scim.TypeOf(err), tt.scimType, err)
			}
			if !fault.Is(fault.Invalid, err) {
				t.Errorf("kind %v", fault.KindOf(err))
			}
		})
	}
}

func long(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}

func TestDecodePatch(t *testing.T) {
	for _, tt := range []struct {
		body, scimType string
	}{
		{`{"Operations":[{"op":"add","path":"x","value":1}]}`, scim.TypeInvalidSyntax},
		{`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[]}`, scim.TypeInvalidSyntax},
		{`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[1]}`, scim.TypeInvalidSyntax},
		{`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"path":"x"}]}`, scim.TypeInvalidSyntax},
		{`{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"add","path":3}]}`, scim.TypeInvalidPath},
		{`[1]`, scim.TypeInvalidSyntax},
		{`{} {}`, scim.TypeInvalidSyntax},
	} {
		if _, err := scim.DecodePatch([]byte(tt.body)); scim.TypeOf(err) != tt.scimType {
			t.Errorf("%s: %v, want %s", tt.body, err, tt.scimType)
		}
	}
	var many []byte
	many = append(many, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[`...)
	for i := range 1001 {
		if i > 0 {
			many = append(many, ',')
		}
		many = append(many, `{"op":"add","path":"nickName","value":"x"}`...)
	}
	many = append(many, "]}"...)
	if _, err := scim.DecodePatch(many); !fault.Is(fault.TooLarge, err) {
		t.Errorf("1001 operations: %v, want too large", err)
	}
}
