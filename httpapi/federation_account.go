package httpapi

// accountIdentitiesPath is the signed-in user's page of linked identities.
const accountIdentitiesPath = "/oauth/v1/account/identities"
