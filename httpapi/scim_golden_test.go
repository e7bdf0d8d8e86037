package httpapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

var updateSCIMGolden = flag.Bool("update-scim", false, "rewrite testdata/scim/*.golden")

// scimStep is one request of an identity provider's sequence. Paths and
// bodies may name earlier answers' ids as {user} and {group}.
type scimStep struct {
	method, path string
	body         string
	want         int
	save         string // "user" or "group": remember the answer's id
}

// runSCIMGolden plays steps against a fresh tenant and compares the
// answers (ids and the key replaced by placeholders) with a golden file.
func runSCIMGolden(t *testing.T, name string, steps []scimStep) {
	e := latchkeytest.New(t)
	a := e.NewTenant("Acme")
	key := "Authorization: Bearer " + e.APIKey(a, "", identity.AreaSCIM)
	ids := map[string]string{}
	var out bytes.Buffer
	for i, st := range steps {
		path, body := st.path, st.body
		for k, v := range ids {
			path = strings.ReplaceAll(path, "{"+k+"}", v)
			body = strings.ReplaceAll(body, "{"+k+"}", v)
		}
		var b any
		if body != "" {
			b = json.RawMessage(body)
		}
		r := e.Do(st.method, path, b, key, "Content-Type: application/scim+json")
		if r.Status != st.want {
			t.Errorf("step %d %s %s: status %d, want %d: %s", i+1, st.method, path, r.Status, st.want, r.Body)
		}
		if st.save != "" {
			ids[st.save] = r.JSON()["id"].(string)
		}
		fmt.Fprintf(&out, "%d. %s %s\n%d", i+1, st.method, st.path, r.Status)
		for _, h := range []string{"ETag", "Location"} {
			if v := r.Header.Get(h); v != "" {
				fmt.Fprintf(&out, " %s: %s", h, v)
			}
		}
		out.WriteString("\n")
		if len(r.Body) > 0 {
			var v any
			if err := json.Unmarshal(r.Body, &v); err != nil {
				t.Fatalf("step %d: %s: %v", i+1, r.Body, err)
			}
			// Without sortBy the order is by id, which is random: the
			// golden file lists the page by name.
			if m, ok := v.(map[string]any); ok {
				if l, ok := m["Resources"].([]any); ok {
					slices.SortFunc(l, func(a, b any) int {
						return strings.Compare(fmt.Sprint(a.(map[string]any)["userName"], a.(map[string]any)["displayName"]),
							fmt.Sprint(b.(map[string]any)["userName"], b.(map[string]any)["displayName"]))
					})
				}
			}
			pretty, _ := json.MarshalIndent(v, "", "  ")
			out.Write(pretty)
			out.WriteString("\n")
		}
		out.WriteString("\n")
	}
	got := out.String()
	for k, v := range ids {
		got = strings.ReplaceAll(got, v, "{"+k+"}")
	}
	// Users the tenant had before the sequence (its administrator).
	got = regexp.MustCompile(`("id": "|"value": "|/Users/)[A-Za-z0-9_-]{22}"`).ReplaceAllString(got, `$1{other}"`)
	golden := filepath.Join("testdata", "scim", name+".golden")
	if *updateSCIMGolden {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestSCIMGolden -update-scim)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", golden, d)
	}
}

// TestSCIMGoldenOkta plays what Okta sends: its SCIM 2.0 spec test
// (count/startIndex lists, userName lookups of a known and a random user,
// an unknown id, a duplicate create), then provisioning as Okta does it:
// create, PUT without active (AIW), deactivate by PATCH, groups renamed
// with their id and members pushed by PATCH. Okta never deletes users.
func TestSCIMGoldenOkta(t *testing.T) {
	const user = `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"jdoe@example.com","name":{"givenName":"John","familyName":"Doe"},
		"emails":[{"primary":true,"value":"jdoe@example.com","type":"work"}],"displayName":"John Doe","locale":"en-US","externalId":"00ujl29u0le5T6Aj10h7","groups":[],"password":"1mz050nq-Secret","active":true}`
	runSCIMGolden(t, "okta", []scimStep{
		{method: "POST", path: "/scim/v2/Users", body: user, want: 201, save: "user"},
		{method: "GET", path: "/scim/v2/Users?count=2&startIndex=1", want: 200},
		{method: "GET", path: "/scim/v2/Groups?count=100&startIndex=1", want: 200},
		{method: "GET", path: "/scim/v2/Users?filter=userName%20eq%20%22jdoe%40example.com%22&startIndex=1&count=100", want: 200},
		{method: "GET", path: "/scim/v2/Users?filter=userName%20eq%20%22c3e1e5c0-random%40example.com%22&startIndex=1&count=100", want: 200},
		{method: "GET", path: "/scim/v2/Users/010101010101010101010101", want: 404},
		{method: "POST", path: "/scim/v2/Users", body: user, want: 409},
		{method: "GET", path: "/scim/v2/Users/{user}", want: 200},
		{method: "PUT", path: "/scim/v2/Users/{user}", body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"id":"{user}","userName":"jdoe@example.com",
			"name":{"givenName":"Johnny","familyName":"Doe"},"emails":[{"primary":true,"value":"jdoe@example.com","type":"work"}],"displayName":"Johnny Doe","locale":"en-US","externalId":"00ujl29u0le5T6Aj10h7","groups":[]}`, want: 200},
		{method: "PATCH", path: "/scim/v2/Users/{user}", body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`, want: 200},
		{method: "POST", path: "/scim/v2/Groups", body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"Test SCIMv2","members":[]}`, want: 201, save: "group"},
		{method: "PATCH", path: "/scim/v2/Groups/{group}", body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"add","path":"members","value":[{"value":"{user}","display":"jdoe@example.com"}]}]}`, want: 200},
		{method: "PATCH", path: "/scim/v2/Groups/{group}", body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"id":"{group}","displayName":"Test SCIMv2 renamed"}}]}`, want: 200},
		{method: "PATCH", path: "/scim/v2/Groups/{group}", body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"remove","path":"members[value eq \"{user}\"]"}]}`, want: 200},
		{method: "DELETE", path: "/scim/v2/Groups/{group}", want: 204},
	})
}

// entraSteps is what Microsoft Entra ID sends, in its default mode or with
// aadOptscim062020 (compliant): Test Connection's random lookups, the
// lookup by externalId before a create, the create with the enterprise
// extension, PATCH updates and deactivation, groups read without members
// and their members added and removed by PATCH, then the delete.
func entraSteps(compliant bool) []scimStep {
	q := ""
	replace, add, remove, falseV := `"Replace"`, `"Add"`, `"Remove"`, `"False"`
	removeMember := `{"op":"Remove","path":"members","value":[{"value":"{user}"}]}`
	if compliant {
		q = "?aadOptscim062020"
		replace, add, remove, falseV = `"replace"`, `"add"`, `"remove"`, `false`
		removeMember = `{"op":"remove","path":"members[value eq \"{user}\"]"}`
	}
	_ = remove
	return []scimStep{
		{method: "GET", path: "/scim/v2/Users?filter=userName+eq+%22ce3c5e0c-51c4-4f3a-9a1a-3b5b1e0f2d7a%22", want: 200},
		{method: "GET", path: "/scim/v2/Groups?excludedAttributes=members&filter=displayName+eq+%2290ca5c4c-8b9e-4e2a-bf68-6f2b8f2b0e5d%22", want: 200},
		{method: "GET", path: "/scim/v2/Users?filter=externalId+eq+%2200aa00aa-00aa-00aa-00aa-00aa00aa00aa%22", want: 200},
		{method: "POST", path: "/scim/v2/Users" + q, save: "user", want: 201, body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
			"externalId":"00aa00aa-00aa-00aa-00aa-00aa00aa00aa","userName":"Test_User_ab6490ee@contoso.com","active":true,"displayName":"Test User",
			"emails":[{"primary":true,"type":"work","value":"Test_User_ab6490ee@contoso.com"}],"meta":{"resourceType":"User"},
			"name":{"formatted":"Test User","familyName":"User","givenName":"Test"},"title":"Engineer",
			"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"employeeNumber":"1234","department":"R&D","manager":{"value":"m-1"}},"roles":[]}`},
		{method: "GET", path: "/scim/v2/Users?filter=userName+eq+%22test_user_ab6490ee%40contoso.com%22", want: 200},
		{method: "PATCH", path: "/scim/v2/Users/{user}" + q, want: 200, body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[
			{"op":` + replace + `,"path":"displayName","value":"Test User Renamed"},
			{"op":` + add + `,"path":"emails[type eq \"work\"].value","value":"renamed@contoso.com"},
			{"op":` + add + `,"path":"nickName","value":"Testy"},
			{"op":` + replace + `,"path":"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager","value":"m-2"}]}`},
		{method: "POST", path: "/scim/v2/Groups" + q, save: "group", want: 201, body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"externalId":"8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159","displayName":"Group1DisplayName","members":[]}`},
		{method: "GET", path: "/scim/v2/Groups/{group}?excludedAttributes=members", want: 200},
		{method: "PATCH", path: "/scim/v2/Groups/{group}" + q, want: 200, body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":` + add + `,"path":"members","value":[{"value":"{user}"}]}]}`},
		{method: "GET", path: "/scim/v2/Users/{user}", want: 200},
		{method: "PATCH", path: "/scim/v2/Groups/{group}" + q, want: 200, body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[` + removeMember + `]}`},
		{method: "PATCH", path: "/scim/v2/Users/{user}" + q, want: 200, body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":` + replace + `,"path":"active","value":` + falseV + `}]}`},
		{method: "GET", path: "/scim/v2/Users?filter=externalId+eq+%2200aa00aa-00aa-00aa-00aa-00aa00aa00aa%22", want: 200},
		{method: "DELETE", path: "/scim/v2/Groups/{group}", want: 204},
		{method: "DELETE", path: "/scim/v2/Users/{user}", want: 204},
		{method: "GET", path: "/scim/v2/Users/{user}", want: 404},
	}
}

func TestSCIMGoldenEntra(t *testing.T) { runSCIMGolden(t, "entra", entraSteps(false)) }

func TestSCIMGoldenEntraCompliant(t *testing.T) {
	runSCIMGolden(t, "entra-aadOptscim062020", entraSteps(true))
}
