// Command latchkey is Latchkey's operator command (API-cli.md): it runs the
// server (serve), and drives a running one: login, tenants, users and their
// bulk import with password hashes, OAuth clients, vault keys, audit
// exports and their offline verification, migrations, and any route (api).
//
//	latchkey serve --data ./data
//	latchkey login --url http://127.0.0.1:8080 --name admin
//	latchkey tenant create Acme --code ACME
//	latchkey user import --tenant ACME --format keycloak realm-users-0.json
//
// Credentials come from the environment (LATCHKEY_URL, LATCHKEY_TOKEN,
// LATCHKEY_CLIENT_ID, LATCHKEY_CLIENT_SECRET) or the 0600 profile that
// login writes; no flag carries a secret. See docs/cli.md.
package main

import (
	"os"
)

func main() {
	os.Exit(Main())
}
