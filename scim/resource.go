package scim

import (
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/filter"
)

// MaxEmails bounds a user's emails.
const MaxEmails = 10

// User is what SCIM reads and writes of a Latchkey user: the fields the
// user record keeps in columns, and Profile, the other SCIM attributes as
// stored JSON (name's other parts, nickName, title, locale, emails,
// phoneNumbers, and the enterprise extension under "enterprise").
type User struct {
	ID            string // the user id's text form
	UserName      string
	ExternalID    string
	DisplayName   string
	GivenName     string
	FamilyName    string
	Email         string // the primary email's value
	EmailVerified bool
	Active        bool
	Profile       map[string]any
	// Password is set by a write that carries one, "" otherwise; it is
	// never read back.
	Password     string
	Groups       []GroupRef
	Roles        []string
	Version      int64
	Created      time.Time
	LastModified time.Time
}

// GroupRef names a group a user belongs to.
type GroupRef struct {
	ID          string
	DisplayName string
}

// Group is a SCIM group as Latchkey keeps it.
type Group struct {
	ID           string
	DisplayName  string
	ExternalID   string
	Members      []Member
	Version      int64
	Created      time.Time
	LastModified time.Time
}

// Member is a member of a group: a user.
type Member struct {
	Value   string // the user id's text form
	Display string // the user's name, filled when read
}

// ETag is the entity tag of a resource version: W/"<n>", also its
// meta.version.
func ETag(version int64) string { return `W/"` + strconv.FormatInt(version, 10) + `"` }

// ParseETag reads an If-Match or If-None-Match value: a list of entity
// tags (weak or strong) or "*". It returns the versions named and whether
// "*" was given; ok false when the header names no tag it can read.
func ParseETag(h string) (versions []int64, star bool, ok bool) {
	for _, part := range strings.Split(h, ",") {
		part = strings.TrimSpace(part)
		if part == "*" {
			star = true
			continue
		}
		part = strings.TrimPrefix(part, "W/")
		if len(part) < 2 || part[0] != '"' || part[len(part)-1] != '"' {
			continue
		}
		if n, err := strconv.ParseInt(part[1:len(part)-1], 10, 64); err == nil {
			versions = append(versions, n)
		}
	}
	return versions, star, star || len(versions) > 0
}

func scimTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func meta(resourceType, location string, version int64, created, modified time.Time) map[string]any {
	return map[string]any{
		"resourceType": resourceType,
		"created":      scimTime(created),
		"lastModified": scimTime(modified),
		"location":     location,
		"version":      ETag(version),
	}
}

// UserResource writes u as a SCIM User resource; base is the SCIM base URL
// (for meta.location and $ref).
func UserResource(u User, base string) map[string]any {
	doc := map[string]any{}
	for k, v := range u.Profile {
		if k == "enterprise" {
			continue
		}
		doc[k] = clone(v)
	}
	if ent, ok := u.Profile["enterprise"].(map[string]any); ok && len(ent) > 0 {
		doc[URNEnterpriseUser] = clone(ent)
	}
	schemas := []any{URNUser}
	if _, ok := doc[URNEnterpriseUser]; ok {
		schemas = append(schemas, URNEnterpriseUser)
	}
	doc["schemas"] = schemas
	doc["id"] = u.ID
	doc["userName"] = u.UserName
	doc["active"] = u.Active
	setString(doc, "externalId", u.ExternalID)
	setString(doc, "displayName", u.DisplayName)
	name, _ := doc["name"].(map[string]any)
	if name == nil {
		name = map[string]any{}
	}
	setString(name, "givenName", u.GivenName)
	setString(name, "familyName", u.FamilyName)
	if len(name) > 0 {
		doc["name"] = name
	}
	if u.Email != "" && doc["emails"] == nil {
		doc["emails"] = []any{map[string]any{"value": u.Email, "primary": true}}
	}
	if len(u.Groups) > 0 {
		groups := make([]any, 0, len(u.Groups))
		for _, g := range u.Groups {
			groups = append(groups, map[string]any{"value": g.ID, "display": g.DisplayName, "$ref": base + "/Groups/" + g.ID, "type": "direct"})
		}
		doc["groups"] = groups
	}
	if len(u.Roles) > 0 {
		roles := make([]any, 0, len(u.Roles))
		for _, r := range u.Roles {
			roles = append(roles, map[string]any{"value": r})
		}
		doc["roles"] = roles
	}
	doc["meta"] = meta("User", base+"/Users/"+u.ID, u.Version, u.Created, u.LastModified)
	return doc
}

func setString(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// UserFromResource reads a User resource (as Normalize or Patch leave it)
// into old's place: the fields SCIM writes are replaced, the others (id,
// version, times, groups, roles) kept. A resource without active keeps
// old's (a PUT that forgets it must not disable a user; create passes
// Active true). emailsVerified is the tenant's scim.emailsVerified
// setting: whether the primary email counts as verified.
func UserFromResource(doc map[string]any, old User, emailsVerified bool) (User, error) {
	u := old
	u.Password = ""
	userName, _ := doc["userName"].(string)
	if strings.TrimSpace(userName) == "" {
		return User{}, errorf(TypeInvalidValue, "userName is required")
	}
	u.UserName = userName
	u.ExternalID, _ = doc["externalId"].(string)
	u.DisplayName, _ = doc["displayName"].(string)
	if a, ok := doc["active"].(bool); ok {
		u.Active = a
	}
	u.Password, _ = doc["password"].(string)
	profile := map[string]any{}
	u.GivenName, u.FamilyName = "", ""
	if name, ok := doc["name"].(map[string]any); ok {
		rest := map[string]any{}
		for k, v := range name {
			switch k {
			case "givenName":
				u.GivenName, _ = v.(string)
			case "familyName":
				u.FamilyName, _ = v.(string)
			default:
				rest[k] = v
			}
		}
		if len(rest) > 0 {
			profile["name"] = rest
		}
	}
	for _, k := range []string{"nickName", "title", "locale", "phoneNumbers"} {
		if v, ok := doc[k]; ok {
			profile[k] = clone(v)
		}
	}
	u.Email, u.EmailVerified = "", false
	if emails, ok := doc["emails"].([]any); ok && len(emails) > 0 {
		if len(emails) > MaxEmails {
			return User{}, errorf(TypeInvalidValue, "emails holds at most %d values", MaxEmails)
		}
		profile["emails"] = clone(emails)
		u.Email = primaryValue(emails)
		u.EmailVerified = u.Email != "" && emailsVerified
		if u.Email == old.Email && old.EmailVerified {
			u.EmailVerified = true // verified by an admin or an earlier link: still so
		}
	}
	if ent, ok := doc[URNEnterpriseUser].(map[string]any); ok && len(ent) > 0 {
		profile["enterprise"] = clone(ent)
	}
	if len(profile) == 0 {
		profile = nil
	}
	u.Profile = profile
	return u, nil
}

// primaryValue is the value of the element marked primary, else of the
// first element with a value.
func primaryValue(list []any) string {
	first := ""
	for _, el := range list {
		m, _ := el.(map[string]any)
		v, _ := m["value"].(string)
		if v == "" {
			continue
		}
		if m["primary"] == true {
			return v
		}
		if first == "" {
			first = v
		}
	}
	return first
}

// UserDocument is the document that filters on users read (the paths of
// Users.StoreFilter): Profile, with the column-held attributes at their
// paths and meta's times in filter.TimeLayout. A store that keeps the
// columns apart compiles filters with the same paths mapped to them.
func UserDocument(u User) map[string]any {
	doc := map[string]any{}
	for k, v := range u.Profile {
		doc[k] = v
	}
	doc["id"] = u.ID
	doc["userName"] = u.UserName
	doc["active"] = u.Active
	setString(doc, "externalId", u.ExternalID)
	setString(doc, "displayName", u.DisplayName)
	if u.GivenName != "" || u.FamilyName != "" {
		name := map[string]any{}
		if n, ok := doc["name"].(map[string]any); ok {
			for k, v := range n {
				name[k] = v
			}
		}
		setString(name, "givenName", u.GivenName)
		setString(name, "familyName", u.FamilyName)
		doc["name"] = name
	}
	doc["meta"] = map[string]any{"created": u.Created.UTC().Format(filter.TimeLayout), "lastModified": u.LastModified.UTC().Format(filter.TimeLayout)}
	return doc
}

// GroupResource writes g as a SCIM Group resource; without members when
// excludeMembers (Entra reads groups so).
func GroupResource(g Group, base string, excludeMembers bool) map[string]any {
	doc := map[string]any{
		"schemas":     []any{URNGroup},
		"id":          g.ID,
		"displayName": g.DisplayName,
		"meta":        meta("Group", base+"/Groups/"+g.ID, g.Version, g.Created, g.LastModified),
	}
	setString(doc, "externalId", g.ExternalID)
	if !excludeMembers {
		members := make([]any, 0, len(g.Members))
		for _, m := range g.Members {
			el := map[string]any{"value": m.Value, "$ref": base + "/Users/" + m.Value, "type": "User"}
			setString(el, "display", m.Display)
			members = append(members, el)
		}
		doc["members"] = members
	}
	return doc
}

// GroupFromResource reads a Group resource into old's place. Members must
// be users: an element whose type is not User is refused (invalidValue);
// whether each names a user of the tenant is the store's to check.
func GroupFromResource(doc map[string]any, old Group) (Group, error) {
	g := old
	name, _ := doc["displayName"].(string)
	if strings.TrimSpace(name) == "" {
		return Group{}, errorf(TypeInvalidValue, "displayName is required")
	}
	g.DisplayName = name
	g.ExternalID, _ = doc["externalId"].(string)
	g.Members = nil
	list, _ := doc["members"].([]any)
	seen := map[string]bool{}
	for _, el := range list {
		m, _ := el.(map[string]any)
		if t, ok := m["type"].(string); ok && t != "User" {
			return Group{}, errorf(TypeInvalidValue, "members are users: a member of type %q is refused", t)
		}
		v, _ := m["value"].(string)
		if v == "" {
			return Group{}, errorf(TypeInvalidValue, "each member needs a value")
		}
		if !seen[v] {
			seen[v] = true
			g.Members = append(g.Members, Member{Value: v})
		}
	}
	return g, nil
}

// GroupDocument is the document that filters on groups read.
func GroupDocument(g Group) map[string]any {
	doc := map[string]any{
		"id":          g.ID,
		"displayName": g.DisplayName,
		"meta":        map[string]any{"created": g.Created.UTC().Format(filter.TimeLayout), "lastModified": g.LastModified.UTC().Format(filter.TimeLayout)},
	}
	setString(doc, "externalId", g.ExternalID)
	return doc
}
