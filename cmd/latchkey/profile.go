package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// profile is what `latchkey login` keeps in credentials.json.
type profile struct {
	URL          string `json:"url"`
	AuthDomain   string `json:"auth_domain"`
	Name         string `json:"name"`
	JWT          string `json:"jwt"`
	RefreshToken string `json:"refresh_token,omitempty"`
}

// profilePath is os.UserConfigDir()/latchkey/credentials.json.
func (a *app) profilePath() (string, error) {
	dir := a.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "latchkey", "credentials.json"), nil
}

// errNoProfile means nobody logged in.
var errNoProfile = errors.New("not logged in: run `latchkey login` or set LATCHKEY_TOKEN")

// readProfile reads the profile, refusing one that others can read (as
// ssh refuses such a private key): exit 3 with the reason.
func (a *app) readProfile() (profile, error) {
	path, err := a.profilePath()
	if err != nil {
		return profile{}, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return profile{}, withCode(exitAuth, errNoProfile)
	}
	if err != nil {
		return profile{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return profile{}, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return profile{}, codef(exitAuth, "%s is readable by others (mode %04o): run chmod 600 %s and log in again", path, st.Mode().Perm(), path)
	}
	var p profile
	if err := json.NewDecoder(f).Decode(&p); err != nil {
		return profile{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// writeProfile writes p to a 0600 temporary file in a 0700 directory and
// renames it over the profile, so a reader never sees half a file.
func (a *app) writeProfile(p profile) error {
	path, err := a.profilePath()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// writeFileAtomic writes b to path, mode 0600, its directory created
// 0700, through a temporary file renamed into place.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".credentials-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
