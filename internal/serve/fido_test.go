package serve

import (
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/authenticator/authenticatortest"
)

func TestLoadFIDOMetadata(t *testing.T) {
	if mds, err := loadFIDOMetadata("", ""); mds != nil || err != nil {
		t.Fatalf("no file: %v %v", mds, err)
	}
	d := authenticatortest.New("example.com", "https://example.com")
	d.Register("eA", authenticatortest.FormatPackedX5C) // makes its root
	blob, root, err := authenticatortest.MetadataBLOB(authenticatortest.MetadataEntry{AAGUID: "01020304-0506-0708-090a-0b0c0d0e0f10", Root: d.RootCert, Status: "FIDO_CERTIFIED"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	blobFile, pemFile, b64File := filepath.Join(dir, "blob.jwt"), filepath.Join(dir, "root.pem"), filepath.Join(dir, "root.b64")
	der, _ := base64.StdEncoding.DecodeString(root)
	os.WriteFile(blobFile, blob, 0o600)
	os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(b64File, []byte(root+"\n"), 0o600)
	for _, rf := range []string{pemFile, b64File} {
		if mds, err := loadFIDOMetadata(blobFile, rf); err != nil || mds == nil {
			t.Errorf("root %s: %v", filepath.Base(rf), err)
		}
	}
	// Against the FIDO Alliance root, a BLOB signed by a test root fails.
	if _, err := loadFIDOMetadata(blobFile, ""); err == nil {
		t.Error("a test BLOB verified against the production root")
	}
}
