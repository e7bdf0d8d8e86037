package events

import (
	"slices"
	"strings"
)

// Category groups native event types. The category of a native type is given
// by the hundreds digit of its 3-digit id (1XX AUTHENTICATION, ...), and the
// category names are reserved: an external event that claims one of them in
// event_type_details.category is rejected (posting rule 3).
type Category string

// The native categories, in id order. MetaSchema is the category of the fake
// type 000 only; it is not a category any event can have.
const (
	MetaSchema             Category = "META_SCHEMA"             // 000
	Authentication         Category = "AUTHENTICATION"          // 1XX
	CredentialVerification Category = "CREDENTIAL_VERIFICATION" // 2XX
	CredentialManagement   Category = "CREDENTIAL_MANAGEMENT"   // 3XX
	Lifecycle              Category = "LIFECYCLE"               // 4XX
	Communication          Category = "COMMUNICATION"           // 5XX
	Profile                Category = "PROFILE"                 // 6XX
	ConsentManagement      Category = "CONSENT_MANAGEMENT"      // 7XX
	Privacy                Category = "PRIVACY"                 // 8XX
	Access                 Category = "ACCESS"                  // 9XX
)

// categoryByDigit is indexed by the hundreds digit of a native id.
var categoryByDigit = [10]Category{
	MetaSchema, Authentication, CredentialVerification, CredentialManagement,
	Lifecycle, Communication, Profile, ConsentManagement, Privacy, Access,
}

// Categories returns the native categories 1XX to 9XX in id order. The result
// is a fresh slice the caller may modify.
func Categories() []Category {
	return slices.Clone(categoryByDigit[1:])
}

// CategoryOf returns the category a 3-digit native id belongs to by its
// hundreds digit, and false when id is not three ASCII digits or is 000.
func CategoryOf(id string) (Category, bool) {
	if len(id) != 3 || !isDigits(id) || id == MetaSchemaTypeID {
		return "", false
	}
	return categoryByDigit[id[0]-'0'], true
}

// IsNativeCategory reports whether name is one of the service's own category
// names, ignoring case and surrounding space, so that "authentication " is
// caught as well as "AUTHENTICATION". The meta-schema's pseudo category counts
// as native too.
func IsNativeCategory(name string) bool {
	name = strings.TrimSpace(name)
	for _, c := range categoryByDigit {
		if strings.EqualFold(name, string(c)) {
			return true
		}
	}
	return false
}

// MetaSchemaTypeID is the id of the fake type whose schema holds every event
// field. No event has this type.
const MetaSchemaTypeID = "000"

// Type describes one native event type.
type Type struct {
	ID       string   // 3 ASCII digits; the hundreds digit gives Category
	Name     string   // human name, stored in event_type_details.name
	Category Category // stored in event_type_details.category
	// Fields lists the top-level attributes of the meta-schema this type
	// uses, besides event_type_id, event_type_details and timestamp, which
	// every type has. ValidateNative drops any other attribute.
	Fields []string
}

// Fields shared by many types, to keep the table readable.
var (
	userCtx   = []string{"end_user", "device", "location", "client_application"}
	loginCtx  = append(slices.Clone(userCtx), "authentication", "protocol", "username", "identifier_value")
	adminCtx  = []string{"end_user", "authenticated_user", "service_as_a_client_application", "location"}
	groupCtx  = append(slices.Clone(adminCtx), "group", "sub_group")
	emailCtx  = []string{"end_user", "message_details", "email_template"}
	smsCtx    = []string{"end_user", "message_details", "sms_template", "phone_number"}
	consentCx = []string{"end_user", "processing_purpose", "client_application", "previous_state", "new_state"}
)

func with(base []string, more ...string) []string {
	return append(slices.Clone(base), more...)
}

// nativeTypes is the catalogue, sorted by ID. CATALOG.md shows the same list;
// TestCatalogDoc keeps the two in step.
var nativeTypes = []Type{
	{"101", "Login succeeded", Authentication, with(loginCtx, "application_session", "amr")},
	{"102", "Login failed", Authentication, with(loginCtx, "count")},
	{"103", "Logout", Authentication, with(userCtx, "application_session")},
	{"104", "Session expired", Authentication, []string{"end_user", "application_session", "client_application"}},
	{"105", "Token issued", Authentication, []string{"end_user", "client_application", "service_as_a_client_application", "application_session", "authentication", "protocol"}},
	{"201", "Password verified", CredentialVerification, with(userCtx, "amr")},
	{"202", "Password verification failed", CredentialVerification, with(userCtx, "amr", "count")},
	{"203", "OTP verified", CredentialVerification, with(userCtx, "amr", "phone_number")},
	{"204", "OTP verification failed", CredentialVerification, with(userCtx, "amr", "phone_number", "count")},
	{"205", "FIDO assertion verified", CredentialVerification, with(userCtx, "amr")},
	{"301", "Authenticator registered", CredentialManagement, with(userCtx, "amr", "new_state")},
	{"302", "Authenticator state changed", CredentialManagement, with(adminCtx, "amr", "previous_state", "new_state")},
	{"303", "Authenticator deleted", CredentialManagement, with(adminCtx, "amr", "previous_state")},
	{"304", "Password changed", CredentialManagement, with(userCtx, "authenticated_user")},
	{"305", "Password reset", CredentialManagement, with(adminCtx, "identifier_value")},
	{"401", "User created", Lifecycle, with(adminCtx, "username", "new_state")},
	{"402", "User deleted", Lifecycle, with(adminCtx, "username", "previous_state")},
	{"403", "User blocked", Lifecycle, with(adminCtx, "block", "previous_state", "new_state")},
	{"404", "User unblocked", Lifecycle, with(adminCtx, "block", "previous_state", "new_state")},
	{"405", "User added to group", Lifecycle, groupCtx},
	{"406", "User removed from group", Lifecycle, groupCtx},
	{"501", "Email sent", Communication, emailCtx},
	{"502", "Email delivery failed", Communication, with(emailCtx, "count")},
	{"506", "OTP email sent", Communication, emailCtx},
	{"507", "OTP SMS sent", Communication, smsCtx},
	{"508", "SMS delivery failed", Communication, with(smsCtx, "count")},
	{"601", "Profile attribute updated", Profile, with(adminCtx, "profile_attribute")},
	{"602", "Identifier changed", Profile, with(adminCtx, "identifier_value", "profile_attribute")},
	{"701", "Consent given", ConsentManagement, consentCx},
	{"702", "Consent withdrawn", ConsentManagement, consentCx},
	{"801", "Personal data exported", Privacy, with(adminCtx, "processing_purpose")},
	{"802", "Personal data erased", Privacy, with(adminCtx, "processing_purpose")},
	{"901", "Access granted", Access, []string{"end_user", "client_application", "application_session", "authentication", "location"}},
	{"902", "Access denied", Access, []string{"end_user", "client_application", "authentication", "location", "count"}},
}

// NativeTypes returns the catalogue of native event types sorted by id. The
// result is a deep copy the caller may modify.
func NativeTypes() []Type {
	out := make([]Type, len(nativeTypes))
	for i, t := range nativeTypes {
		t.Fields = slices.Clone(t.Fields)
		out[i] = t
	}
	return out
}

// LookupType returns the native type with the given 3-digit id. It reports
// false for unknown ids and for the meta-schema id 000.
func LookupType(id string) (Type, bool) {
	i, ok := slices.BinarySearchFunc(nativeTypes, id, func(t Type, id string) int {
		return strings.Compare(t.ID, id)
	})
	if !ok {
		return Type{}, false
	}
	t := nativeTypes[i]
	t.Fields = slices.Clone(t.Fields)
	return t, true
}

// IsNativeID reports whether id has the shape of a native id (three ASCII
// digits), whether or not the catalogue holds it.
func IsNativeID(id string) bool { return len(id) == 3 && isDigits(id) }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
