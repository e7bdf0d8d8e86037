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
	const want = `{"fidoImportEnabled":false,"planFeatures":[],"notificationRetentionSeconds":60,"webauthn":{"rpId":"x","origins":[]},"maxTokensPerUser":16,"mfa":{"mode":"optional","requiredRoles":[],"level":"mfa","enrollmentGraceDays":7}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back identity.Settings
	if err := json.Unmarshal(b, &back); err != nil || back.WebAuthn.RPID != "x" {
		t.Errorf("round trip: %+v %v", back, err)
	}
}

// Settings stored before maxTokensPerUser existed read back with its
// default; a set value is kept.
func TestSettingsMaxTokensPerUserDefault(t *testing.T) {
	var old identity.Settings
	if err := json.Unmarshal([]byte(`{"fidoImportEnabled":true,"planFeatures":[],"notificationRetentionSeconds":60,"webauthn":{"rpId":"x","origins":[]}}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.MaxTokensPerUser != identity.DefaultMaxTokensPerUser || old.TokensPerUser() != 16 {
		t.Errorf("stored without the setting: %d, want 16", old.MaxTokensPerUser)
	}
	var set identity.Settings
	if err := json.Unmarshal([]byte(`{"maxTokensPerUser":3}`), &set); err != nil || set.TokensPerUser() != 3 {
		t.Errorf("set to 3: %d %v", set.MaxTokensPerUser, err)
	}
	if (identity.Settings{}).TokensPerUser() != 16 {
		t.Error("zero settings: want the default")
	}
}
