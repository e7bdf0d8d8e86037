package scim

import (
	"strings"

	"github.com/latchkey/latchkey/filter"
)

// Schema URNs (RFC 7643 §8.7, RFC 7644 §3).
const (
	URNUser                  = "urn:ietf:params:scim:schemas:core:2.0:User"
	URNGroup                 = "urn:ietf:params:scim:schemas:core:2.0:Group"
	URNEnterpriseUser        = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
	URNSchema                = "urn:ietf:params:scim:schemas:core:2.0:Schema"
	URNResourceType          = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	URNServiceProviderConfig = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	URNListResponse          = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	URNSearchRequest         = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
	URNPatchOp               = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	URNError                 = "urn:ietf:params:scim:api:messages:2.0:Error"
)

// Attribute types, mutabilities and returned values of RFC 7643 §2.
const (
	TypeString    = "string"
	TypeBoolean   = "boolean"
	TypeDecimal   = "decimal"
	TypeInteger   = "integer"
	TypeDateTime  = "dateTime"
	TypeReference = "reference"
	TypeComplex   = "complex"

	ReadOnly  = "readOnly"
	ReadWrite = "readWrite"
	Immutable = "immutable"
	WriteOnly = "writeOnly"

	ReturnedAlways  = "always"
	ReturnedNever   = "never"
	ReturnedDefault = "default"
)

// Attribute is an attribute definition as /Schemas shows it (RFC 7643 §7),
// plus what the server enforces beyond it.
type Attribute struct {
	Name            string      `json:"name"`
	Type            string      `json:"type"`
	MultiValued     bool        `json:"multiValued"`
	Description     string      `json:"description"`
	Required        bool        `json:"required"`
	CaseExact       bool        `json:"caseExact"`
	Mutability      string      `json:"mutability"`
	Returned        string      `json:"returned"`
	Uniqueness      string      `json:"uniqueness"`
	CanonicalValues []string    `json:"canonicalValues,omitempty"`
	ReferenceTypes  []string    `json:"referenceTypes,omitempty"`
	SubAttributes   []Attribute `json:"subAttributes,omitempty"`

	// MaxLength bounds a string's length in bytes; 0 means 1024.
	MaxLength int `json:"-"`
	// Unfilterable attributes are refused in filters (invalidFilter).
	Unfilterable bool `json:"-"`
}

// maxLen is the longest string the attribute takes.
func (a Attribute) maxLen() int {
	if a.MaxLength > 0 {
		return a.MaxLength
	}
	return 1024
}

// sub finds a sub-attribute ignoring case.
func (a Attribute) sub(name string) (Attribute, bool) {
	for _, s := range a.SubAttributes {
		if strings.EqualFold(s.Name, name) {
			return s, true
		}
	}
	return Attribute{}, false
}

// Schema is a schema resource (RFC 7643 §7).
type Schema struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Attributes  []Attribute `json:"attributes"`
}

func (s *Schema) attr(name string) (Attribute, bool) {
	for _, a := range s.Attributes {
		if strings.EqualFold(a.Name, name) {
			return a, true
		}
	}
	return Attribute{}, false
}

// ResourceType is a resource type (RFC 7643 §6): its core schema and
// extensions.
type ResourceType struct {
	ID         string
	Name       string
	Endpoint   string
	Core       *Schema
	Extensions []*Schema
	// Filter resolves filters against canonical resource documents (the
	// PATCH engine's value filters and tests); StoreFilter against the
	// documents stores keep (see UserDocument and GroupDocument).
	Filter      *filter.Schema
	StoreFilter *filter.Schema
}

// extension finds an extension schema by URN, ignoring case.
func (rt *ResourceType) extension(urn string) (*Schema, bool) {
	for _, x := range rt.Extensions {
		if strings.EqualFold(x.ID, urn) {
			return x, true
		}
	}
	return nil, false
}

// Schemas lists the schemas of every resource type, as /Schemas does.
func Schemas() []*Schema { return []*Schema{userSchema, enterpriseSchema, groupSchema} }

// ResourceTypes lists the resource types, as /ResourceTypes does.
func ResourceTypes() []*ResourceType { return []*ResourceType{Users, Groups} }

func str(name, desc string, caseExact bool, mut string) Attribute {
	return Attribute{Name: name, Type: TypeString, Description: desc, CaseExact: caseExact, Mutability: mut, Returned: ReturnedDefault, Uniqueness: "none"}
}

func multi(name, desc string, subs ...Attribute) Attribute {
	return Attribute{Name: name, Type: TypeComplex, MultiValued: true, Description: desc, Mutability: ReadWrite, Returned: ReturnedDefault, Uniqueness: "none", SubAttributes: subs}
}

// typed is the value, display, type and primary sub-attributes that emails
// and phone numbers share (RFC 7643 §4.1.2).
func typed(valueDesc string, types ...string) []Attribute {
	t := str("type", "A label: "+strings.Join(types, ", ")+".", false, ReadWrite)
	t.CanonicalValues = types
	return []Attribute{
		str("value", valueDesc, false, ReadWrite),
		str("display", "A human-readable name.", false, ReadWrite),
		t,
		{Name: "primary", Type: TypeBoolean, Description: "The primary value; at most one.", Mutability: ReadWrite, Returned: ReturnedDefault},
	}
}

func ref(name, desc string, mut string, refTypes ...string) Attribute {
	return Attribute{Name: name, Type: TypeReference, Description: desc, CaseExact: true, Mutability: mut, Returned: ReturnedDefault, Uniqueness: "none", ReferenceTypes: refTypes}
}

var userSchema = &Schema{ID: URNUser, Name: "User", Description: "User Account", Attributes: []Attribute{
	{Name: "id", Type: TypeString, Description: "Latchkey's user id.", CaseExact: true, Mutability: ReadOnly, Returned: ReturnedAlways, Uniqueness: "server"},
	{Name: "externalId", Type: TypeString, Description: "The provisioning client's id of the user; unique per tenant.", CaseExact: true, Mutability: ReadWrite, Returned: ReturnedDefault, Uniqueness: "server"},
	{Name: "userName", Type: TypeString, Description: "The user's sign-in name; unique per tenant, ignoring case.", Required: true, Mutability: ReadWrite, Returned: ReturnedAlways, Uniqueness: "server", MaxLength: 256},
	{Name: "name", Type: TypeComplex, Description: "The components of the user's name.", Mutability: ReadWrite, Returned: ReturnedDefault, Uniqueness: "none", SubAttributes: []Attribute{
		str("formatted", "The full name.", false, ReadWrite),
		str("familyName", "The family name.", false, ReadWrite),
		str("givenName", "The given name.", false, ReadWrite),
		str("middleName", "The middle name.", false, ReadWrite),
		str("honorificPrefix", "Honorific prefix, e.g. Ms.", false, ReadWrite),
		str("honorificSuffix", "Honorific suffix, e.g. III.", false, ReadWrite),
	}},
	str("displayName", "The name shown to people.", false, ReadWrite),
	str("nickName", "A casual name.", false, ReadWrite),
	str("title", "The user's title, e.g. Vice President.", false, ReadWrite),
	str("locale", "Locale, e.g. en-US.", false, ReadWrite),
	{Name: "active", Type: TypeBoolean, Description: "false refuses every sign-in and token of the user.", Mutability: ReadWrite, Returned: ReturnedDefault},
	{Name: "password", Type: TypeString, Description: "Set only; stored as an argon2id hash, never returned.", CaseExact: true, Mutability: WriteOnly, Returned: ReturnedNever, Unfilterable: true, MaxLength: 1024},
	multi("emails", "E-mail addresses; the primary one is the user's email (at most 10).", typed("The address.", "work", "home", "other")...),
	multi("phoneNumbers", "Phone numbers.", typed("The number.", "work", "home", "mobile", "fax", "pager", "other")...),
	{Name: "groups", Type: TypeComplex, MultiValued: true, Description: "The groups the user belongs to; read-only.", Mutability: ReadOnly, Returned: ReturnedDefault, Unfilterable: true, SubAttributes: []Attribute{
		str("value", "The group's id.", true, ReadOnly),
		ref("$ref", "The group's URI.", ReadOnly, "Group"),
		str("display", "The group's displayName.", false, ReadOnly),
		str("type", "direct.", false, ReadOnly),
	}},
	{Name: "roles", Type: TypeComplex, MultiValued: true, Description: "Latchkey roles, the user's and its groups'; read-only (an administrator maps groups to roles).", Mutability: ReadOnly, Returned: ReturnedDefault, Unfilterable: true, SubAttributes: []Attribute{
		str("value", "The role.", true, ReadOnly),
	}},
}}

var enterpriseSchema = &Schema{ID: URNEnterpriseUser, Name: "EnterpriseUser", Description: "Enterprise User", Attributes: []Attribute{
	str("employeeNumber", "The employee number.", true, ReadWrite),
	str("department", "The department.", false, ReadWrite),
	{Name: "manager", Type: TypeComplex, Description: "The user's manager.", Mutability: ReadWrite, Returned: ReturnedDefault, SubAttributes: []Attribute{
		str("value", "The manager's id.", true, ReadWrite),
		ref("$ref", "The manager's URI.", ReadWrite, "User"),
		str("displayName", "The manager's name.", false, ReadOnly),
	}},
}}

var groupSchema = &Schema{ID: URNGroup, Name: "Group", Description: "Group", Attributes: []Attribute{
	{Name: "id", Type: TypeString, Description: "Latchkey's group id.", CaseExact: true, Mutability: ReadOnly, Returned: ReturnedAlways, Uniqueness: "server"},
	{Name: "externalId", Type: TypeString, Description: "The provisioning client's id of the group.", CaseExact: true, Mutability: ReadWrite, Returned: ReturnedDefault, Uniqueness: "none"},
	{Name: "displayName", Type: TypeString, Description: "The group's name; unique per tenant, ignoring case.", Required: true, Mutability: ReadWrite, Returned: ReturnedAlways, Uniqueness: "server", MaxLength: 256},
	{Name: "members", Type: TypeComplex, MultiValued: true, Description: "The group's members: users only.", Mutability: ReadWrite, Returned: ReturnedDefault, Unfilterable: true, SubAttributes: []Attribute{
		str("value", "The member's id.", true, Immutable),
		ref("$ref", "The member's URI.", Immutable, "User"),
		str("display", "The member's name.", false, ReadOnly),
		{Name: "type", Type: TypeString, Description: "User.", Mutability: Immutable, Returned: ReturnedDefault, CanonicalValues: []string{"User"}},
	}},
}}

// Users is the User resource type, with the enterprise extension.
var Users = &ResourceType{ID: "User", Name: "User", Endpoint: "/Users", Core: userSchema, Extensions: []*Schema{enterpriseSchema},
	Filter: filterSchema(userSchema, enterpriseSchema, false), StoreFilter: filterSchema(userSchema, enterpriseSchema, true)}

// Groups is the Group resource type.
var Groups = &ResourceType{ID: "Group", Name: "Group", Endpoint: "/Groups", Core: groupSchema,
	Filter: filterSchema(groupSchema, nil, false), StoreFilter: filterSchema(groupSchema, nil, true)}

// metaAttr is the common attribute meta (RFC 7643 §3.1): every resource
// has it, no schema lists it, and clients never change it.
var metaAttr = Attribute{Name: "meta", Type: TypeComplex, Mutability: ReadOnly, Returned: ReturnedDefault, SubAttributes: []Attribute{
	str("resourceType", "", true, ReadOnly), str("created", "", true, ReadOnly), str("lastModified", "", true, ReadOnly),
	str("location", "", true, ReadOnly), str("version", "", true, ReadOnly),
}}

// Filterable meta attributes, in canonical documents.
var metaAttrs = []string{"created", "lastModified"}

// filterSchema derives a filter schema from the resource's schemas. With
// store, paths are those of the stored documents: the enterprise
// extension's attributes under "enterprise", meta.* under "meta".
func filterSchema(core, ext *Schema, store bool) *filter.Schema {
	var attrs []filter.Attribute
	add := func(prefix string, storePrefix filter.Path, a Attribute) {
		name := prefix + a.Name
		st := append(append(filter.Path{}, storePrefix...), a.Name)
		fa := filter.Attribute{Name: name, Store: st, MultiValued: a.MultiValued, CaseExact: a.CaseExact,
			Unfilterable: a.Unfilterable && store || a.Mutability == WriteOnly, EqOnly: a.Name == "id"}
		attrs = append(attrs, fa)
		for _, s := range a.SubAttributes {
			if s.Name == "$ref" {
				continue // never stored: derived from the id
			}
			sp := append(append(filter.Path{}, st...), s.Name)
			if a.MultiValued {
				sp = filter.Path{s.Name} // inside an element
			}
			attrs = append(attrs, filter.Attribute{Name: name + "." + s.Name, Store: sp, CaseExact: s.CaseExact, Unfilterable: fa.Unfilterable})
		}
	}
	for _, a := range core.Attributes {
		add("", nil, a)
	}
	if ext != nil {
		sp := filter.Path{ext.ID}
		if store {
			sp = filter.Path{"enterprise"}
		}
		for _, a := range ext.Attributes {
			add(ext.ID+":", sp, a)
		}
	}
	if !store { // stores keep meta's times as columns of time, which filters do not compare
		for _, m := range metaAttrs {
			attrs = append(attrs, filter.Attribute{Name: "meta." + m, Store: filter.Path{"meta", m}, CaseExact: true})
		}
	}
	return filter.NewSchema(core.ID, attrs...)
}
