package scim

import (
	"strings"

	"github.com/latchkey/latchkey/fault"
)

// ServiceProviderConfig is the /ServiceProviderConfig resource (RFC 7643
// §5): PATCH, filters (at most MaxResults), sorting, ETags and password
// changes supported; bulk not; bearer tokens.
func ServiceProviderConfig(base string) map[string]any {
	return map[string]any{
		"schemas":          []string{URNServiceProviderConfig},
		"documentationUri": "https://github.com/latchkey/latchkey/blob/main/docs/scim.md",
		"patch":            map[string]any{"supported": true},
		"bulk":             map[string]any{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":           map[string]any{"supported": true, "maxResults": MaxResults},
		"changePassword":   map[string]any{"supported": true},
		"sort":             map[string]any{"supported": true},
		"etag":             map[string]any{"supported": true},
		"authenticationSchemes": []map[string]any{{
			"type": "oauthbearertoken", "name": "OAuth Bearer Token", "primary": true,
			"description": "An API key of area scim, or an access token of the tenant with scope scim:provisioning, as a bearer token.",
			"specUri":     "https://www.rfc-editor.org/info/rfc6750",
		}},
		"meta": map[string]any{"resourceType": "ServiceProviderConfig", "location": base + "/ServiceProviderConfig"},
	}
}

// ResourceTypeResource is a /ResourceTypes resource.
func ResourceTypeResource(rt *ResourceType, base string) map[string]any {
	ext := []map[string]any{}
	for _, x := range rt.Extensions {
		ext = append(ext, map[string]any{"schema": x.ID, "required": false})
	}
	return map[string]any{
		"schemas":          []string{URNResourceType},
		"id":               rt.ID,
		"name":             rt.Name,
		"endpoint":         rt.Endpoint,
		"description":      rt.Core.Description,
		"schema":           rt.Core.ID,
		"schemaExtensions": ext,
		"meta":             map[string]any{"resourceType": "ResourceType", "location": base + "/ResourceTypes/" + rt.ID},
	}
}

// SchemaResource is a /Schemas resource.
func SchemaResource(s *Schema, base string) map[string]any {
	return map[string]any{
		"schemas":     []string{URNSchema},
		"id":          s.ID,
		"name":        s.Name,
		"description": s.Description,
		"attributes":  s.Attributes,
		"meta":        map[string]any{"resourceType": "Schema", "location": base + "/Schemas/" + s.ID},
	}
}

// FindResourceType finds a resource type by id (User, Group), ignoring case.
func FindResourceType(id string) (*ResourceType, error) {
	for _, rt := range ResourceTypes() {
		if strings.EqualFold(rt.ID, id) {
			return rt, nil
		}
	}
	return nil, fault.E(fault.NotFound, "no resource type "+id)
}

// FindSchema finds a schema by URN, ignoring case.
func FindSchema(urn string) (*Schema, error) {
	for _, s := range Schemas() {
		if strings.EqualFold(s.ID, urn) {
			return s, nil
		}
	}
	return nil, fault.E(fault.NotFound, "no schema "+urn)
}
