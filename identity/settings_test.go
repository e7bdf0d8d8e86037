package identity_test

import (
	"encoding/json"
	"testing"

	"github.com/latchkey/latchkey/identity"
)

func TestSettingsJSONNeverNullLists(t *testing.T) {
	b, err := json.Marshal(identity.Settings{NotificationRetentionSeconds: 60, WebAuthn: identity.WebAuthn{RPID: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"fidoImportEnabled":false,"planFeatures":[],"notificationRetentionSeconds":60,"webauthn":{"rpId":"x","origins":[]}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back identity.Settings
	if err := json.Unmarshal(b, &back); err != nil || back.WebAuthn.RPID != "x" {
		t.Errorf("round trip: %+v %v", back, err)
	}
}
