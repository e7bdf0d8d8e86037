package authenticator

// Messages of the specification's error table (area C), verbatim.
const (
	MsgTenantCodeEmpty      = "The tenantCode cannot be null or empty."
	MsgUserIDEmpty          = "The userId cannot be null or empty."
	MsgAuthenticatorIDEmpty = "The authenticatorId cannot be null or empty."
	MsgObjectIDFormat       = "Object-Id-Format must be either base64 (default) or hex."
	MsgAuthenticatorIDB64   = "The authenticatorId is not base64URL encoded."
	MsgPageIndex            = "The page index must be greater than or equal to 0 (parameter pageIndex)."
	MsgPageSize             = "The page size must be between 1 and 20 (parameter pageSize)."
	MsgAuthenticatorNull    = "Authenticator cannot be null."
	MsgAttestationB64       = "AttestationObject is not base64URL encoded."
	MsgClientDataB64        = "ClientDataJson is not base64URL encoded."
	MsgUserIDFormat         = "User Identifier Format."
	MsgOperationNotAllowed  = "Operation Not Allowed Exception."
	MsgUserIDFormatDelete   = "The User Identifier Format Exception."
	MsgPlan                 = "Your current product plan does not include this functionality."
	MsgImportDisabled       = "Unable to import the FIDO authenticator, because importing via the API is disabled on the access management console."
	MsgTenantNotFound       = "The tenant code does not exist."
	MsgUserNotFound         = "base64 or hex userId was not found."
	MsgAuthenticatorMissing = "The authenticator ID was not found."
	MsgInUse                = "The authenticator is already in use."
	MsgNoPermission         = "You do not have permission to access this tenant."
	MsgServiceException     = "Authenticator Service Exception."
)

// Messages of rules the error table gives no text for; they are sent in
// the validation body {errors:{field:[message]}} or as the detail of a 403.
const (
	MsgOnlyFIDO          = "Only FIDO authenticators are supported."
	MsgFriendlyNameBlank = "The friendly name cannot be blank or empty."
	MsgDeleteOwnImported = "An authenticator imported through the API cannot be deleted with an API key bound to its own user."
	MsgStateValue        = "The state must be active, pending or suspended."
)
