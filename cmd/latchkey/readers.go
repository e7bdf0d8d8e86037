package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// importLine is one line of the import route (API-cli.md), as the
// readers make it.
type importLine struct {
	Name          string     `json:"name"`
	ExternalID    string     `json:"externalId,omitempty"`
	Email         string     `json:"email,omitempty"`
	EmailVerified bool       `json:"emailVerified,omitempty"`
	DisplayName   string     `json:"displayName,omitempty"`
	GivenName     string     `json:"givenName,omitempty"`
	FamilyName    string     `json:"familyName,omitempty"`
	Roles         []string   `json:"roles,omitempty"`
	PasswordHash  string     `json:"passwordHash,omitempty"`
	Password      string     `json:"password,omitempty"`
	CreatedAt     *time.Time `json:"createdAt,omitempty"`
}

// record is one user read from a source: the line to send (raw JSON), or
// the reason the reader itself skips it, and a note for the report.
type record struct {
	line     json.RawMessage
	name     string
	extID    string
	plain    bool   // carries a plaintext password (at most 200 a request)
	skip     string // reason the reader skips the user ("" to send it)
	note     string // said in the report beside the result
	hashless bool   // sent without a password hash
}

// reader reads users from one source, one at a time, never holding the
// whole source in memory.
type reader interface {
	next() (record, error) // io.EOF at the end
}

// firebaseConfig is the hash key that firebase lines name.
type readerOptions struct {
	firebaseKey string // the password-hash key's name
}

func newReader(format string, r io.Reader, opts readerOptions) (reader, error) {
	switch format {
	case "jsonl":
		return &jsonlReader{d: json.NewDecoder(bufio.NewReaderSize(r, 1<<16))}, nil
	case "auth0":
		return &auth0Reader{d: json.NewDecoder(bufio.NewReaderSize(r, 1<<16))}, nil
	case "keycloak":
		return &arrayReader{d: json.NewDecoder(bufio.NewReaderSize(r, 1<<16)), key: "users", conv: keycloakUser}, nil
	case "firebase":
		if opts.firebaseKey == "" {
			return nil, usageError("--format firebase needs --hash-config (the console's hash_config block)")
		}
		return &arrayReader{d: json.NewDecoder(bufio.NewReaderSize(r, 1<<16)), key: "users", conv: func(raw json.RawMessage) (record, error) { return firebaseUser(raw, opts.firebaseKey) }}, nil
	case "kratos":
		return &kratosReader{d: json.NewDecoder(bufio.NewReaderSize(r, 1<<16))}, nil
	}
	return nil, usageError("--format must be keycloak, auth0, firebase, kratos or jsonl, not %q", format)
}

func makeRecord(l importLine) (record, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return record{}, err
	}
	return record{line: b, name: l.Name, extID: l.ExternalID, plain: l.Password != "", hashless: l.PasswordHash == "" && l.Password == ""}, nil
}

// jsonlReader passes the route's own lines through.
type jsonlReader struct{ d *json.Decoder }

func (r *jsonlReader) next() (record, error) {
	var raw json.RawMessage
	if err := r.d.Decode(&raw); err != nil {
		return record{}, err
	}
	var l importLine
	if err := json.Unmarshal(raw, &l); err != nil {
		// Sent as it is: the route answers it as an invalid line.
		return record{line: compact(raw)}, nil
	}
	return record{line: compact(raw), name: l.Name, extID: l.ExternalID, plain: l.Password != "", hashless: l.PasswordHash == "" && l.Password == ""}, nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// arrayReader streams the elements of a top-level object's array member
// (Keycloak's and Firebase's "users") with json.Decoder.Token, skipping
// the other members value by value.
type arrayReader struct {
	d       *json.Decoder
	key     string
	conv    func(json.RawMessage) (record, error)
	inArray bool
	done    bool
}

func (r *arrayReader) next() (record, error) {
	for !r.inArray {
		if r.done {
			return record{}, io.EOF
		}
		if err := r.seek(); err != nil {
			return record{}, err
		}
	}
	if !r.d.More() {
		if _, err := r.d.Token(); err != nil { // ]
			return record{}, err
		}
		r.inArray = false
		return r.next()
	}
	var raw json.RawMessage
	if err := r.d.Decode(&raw); err != nil {
		return record{}, err
	}
	return r.conv(raw)
}

// seek moves to the next member named key in the top-level object.
func (r *arrayReader) seek() error {
	for {
		t, err := r.d.Token()
		if errors.Is(err, io.EOF) {
			r.done = true
			return nil
		}
		if err != nil {
			return err
		}
		switch v := t.(type) {
		case json.Delim:
			if v == '{' || v == '}' {
				continue
			}
			return fmt.Errorf("unexpected %v at the top level", v)
		case string:
			if v == r.key {
				t, err := r.d.Token()
				if err != nil {
					return err
				}
				if t != json.Delim('[') {
					return fmt.Errorf("%q is not an array", r.key)
				}
				r.inArray = true
				return nil
			}
			if err := skipValue(r.d); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected %v at the top level", v)
		}
	}
}

// skipValue reads one value token by token, so a large member that is
// not wanted (a realm's clients) is never held whole.
func skipValue(d *json.Decoder) error {
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return err
		}
		if dl, ok := t.(json.Delim); ok {
			if dl == '{' || dl == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// keycloakUser converts one user of a Keycloak realm export.
func keycloakUser(raw json.RawMessage) (record, error) {
	var u struct {
		ID               string `json:"id"`
		Username         string `json:"username"`
		Email            string `json:"email"`
		EmailVerified    bool   `json:"emailVerified"`
		FirstName        string `json:"firstName"`
		LastName         string `json:"lastName"`
		Enabled          *bool  `json:"enabled"`
		CreatedTimestamp int64  `json:"createdTimestamp"`
		FederationLink   string `json:"federationLink"`
		Credentials      []struct {
			Type           string `json:"type"`
			SecretData     string `json:"secretData"`
			CredentialData string `json:"credentialData"`
			// The deprecated form (Keycloak before 7).
			HashedSaltedValue string `json:"hashedSaltedValue"`
			Salt              string `json:"salt"`
			HashIterations    int    `json:"hashIterations"`
			Algorithm         string `json:"algorithm"`
		} `json:"credentials"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return record{}, fmt.Errorf("a Keycloak user: %w", err)
	}
	l := importLine{Name: u.Username, ExternalID: u.ID, Email: u.Email, EmailVerified: u.EmailVerified && u.Email != "",
		GivenName: u.FirstName, FamilyName: u.LastName, DisplayName: strings.TrimSpace(u.FirstName + " " + u.LastName)}
	if u.CreatedTimestamp > 0 {
		t := time.UnixMilli(u.CreatedTimestamp).UTC()
		l.CreatedAt = &t
	}
	var note []string
	for _, c := range u.Credentials {
		if c.Type != "password" {
			note = append(note, "its "+c.Type+" credential is not imported")
			continue
		}
		var (
			value, salt, alg string
			iter             int
			params           map[string][]string
		)
		if c.SecretData != "" {
			var sd struct {
				Value string `json:"value"`
				Salt  string `json:"salt"`
			}
			var cd struct {
				HashIterations       int                 `json:"hashIterations"`
				Algorithm            string              `json:"algorithm"`
				AdditionalParameters map[string][]string `json:"additionalParameters"`
			}
			if err := json.Unmarshal([]byte(c.SecretData), &sd); err != nil {
				return record{}, fmt.Errorf("user %s: secretData: %w", u.Username, err)
			}
			if c.CredentialData != "" {
				if err := json.Unmarshal([]byte(c.CredentialData), &cd); err != nil {
					return record{}, fmt.Errorf("user %s: credentialData: %w", u.Username, err)
				}
			}
			value, salt, alg, iter, params = sd.Value, sd.Salt, cd.Algorithm, cd.HashIterations, cd.AdditionalParameters
		} else {
			value, salt, alg, iter = c.HashedSaltedValue, c.Salt, c.Algorithm, c.HashIterations
		}
		h, err := keycloakHash(alg, iter, value, salt, params)
		if err != nil {
			// Sent as it is, so the route says why per line.
			h = err.Error()
		}
		l.PasswordHash = h
	}
	if u.FederationLink != "" && l.PasswordHash == "" {
		note = append(note, "federated user: its password stays in the federation provider")
	}
	rec, err := makeRecord(l)
	if err != nil {
		return record{}, err
	}
	if u.Enabled != nil && !*u.Enabled {
		rec.skip = "disabled in Keycloak"
	}
	rec.note = strings.Join(note, "; ")
	return rec, nil
}

// keycloakHash writes a Keycloak password credential as a hash string the
// route takes: PBKDF2 in PHC form with the key length of the value (32
// and 64 bytes both occur), argon2 in PHC form from its parameters.
func keycloakHash(alg string, iter int, value, salt string, params map[string][]string) (string, error) {
	key, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return "", fmt.Errorf("$keycloak$%s$value-not-base64", alg)
	}
	s, err := base64.StdEncoding.DecodeString(salt)
	if err != nil {
		return "", fmt.Errorf("$keycloak$%s$salt-not-base64", alg)
	}
	enc := base64.RawStdEncoding.EncodeToString
	switch alg {
	case "pbkdf2", "pbkdf2-sha256", "pbkdf2-sha512":
		scheme := "pbkdf2-sha1"
		if alg != "pbkdf2" {
			scheme = alg
		}
		return fmt.Sprintf("$%s$i=%d,l=%d$%s$%s", scheme, iter, len(key), enc(s), enc(key)), nil
	case "argon2":
		get := func(k, def string) string {
			if v := params[k]; len(v) > 0 {
				return v[0]
			}
			return def
		}
		typ := get("type", "id")
		if get("version", "1.3") != "1.3" {
			return "", fmt.Errorf("$argon2%s$v=16$unsupported-version", typ)
		}
		return fmt.Sprintf("$argon2%s$v=19$m=%s,t=%d,p=%s$%s$%s", typ, get("memory", "7168"), iter, get("parallelism", "1"), enc(s), enc(key)), nil
	}
	return "", fmt.Errorf("$keycloak-%s$unsupported", alg)
}

// auth0Reader reads Auth0's password-hash export: NDJSON, bcrypt.
type auth0Reader struct{ d *json.Decoder }

func (r *auth0Reader) next() (record, error) {
	var u struct {
		ID struct {
			OID string `json:"$oid"`
		} `json:"_id"`
		AltID         string `json:"alt_id"`
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
		PasswordHash  string `json:"passwordHash"`
	}
	if err := r.d.Decode(&u); err != nil {
		return record{}, err
	}
	id := u.AltID
	if id == "" {
		id = u.ID.OID
	}
	l := importLine{Name: u.Email, Email: u.Email, EmailVerified: u.EmailVerified, PasswordHash: u.PasswordHash}
	if id != "" {
		l.ExternalID = "auth0|" + id
	}
	return makeRecord(l)
}

// firebaseUser converts one user of `firebase auth:export --format=json`;
// its hash names the tenant's password-hash key made from --hash-config.
func firebaseUser(raw json.RawMessage, key string) (record, error) {
	var u struct {
		LocalID       string `json:"localId"`
		Email         string `json:"email"`
		EmailVerified bool   `json:"emailVerified"`
		DisplayName   string `json:"displayName"`
		PasswordHash  string `json:"passwordHash"`
		Salt          string `json:"salt"`
		CreatedAt     string `json:"createdAt"`
		Disabled      bool   `json:"disabled"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return record{}, fmt.Errorf("a Firebase user: %w", err)
	}
	name := u.Email
	if name == "" {
		name = u.LocalID
	}
	l := importLine{Name: name, ExternalID: u.LocalID, Email: u.Email, EmailVerified: u.EmailVerified, DisplayName: u.DisplayName}
	if ms, err := strconv.ParseInt(u.CreatedAt, 10, 64); err == nil && ms > 0 {
		t := time.UnixMilli(ms).UTC()
		l.CreatedAt = &t
	}
	if u.PasswordHash != "" {
		l.PasswordHash = "$firebase-scrypt$k=" + key + "$" + u.Salt + "$" + u.PasswordHash
	}
	rec, err := makeRecord(l)
	if err != nil {
		return record{}, err
	}
	if u.PasswordHash == "" {
		rec.note = "Firebase exported no password hash: imported without a password"
	}
	if u.Disabled {
		rec.skip = "disabled in Firebase"
	}
	return rec, nil
}

// kratosReader reads what `kratos import identities` takes: identities,
// one JSON value after another or in arrays.
type kratosReader struct {
	d       *json.Decoder
	inArray bool
}

var kratosScryptLN = regexp.MustCompile(`^\$scrypt\$ln=(\d+),`)

func (r *kratosReader) next() (record, error) {
	if r.inArray && !r.d.More() {
		if _, err := r.d.Token(); err != nil {
			return record{}, err
		}
		r.inArray = false
	}
	if !r.inArray {
		var first byte
		for {
			if !r.d.More() {
				// Drain: io.EOF at the end of the input.
				if _, err := r.d.Token(); err != nil {
					return record{}, err
				}
				continue
			}
			break
		}
		// Peek through the buffered input: an array opens with '['.
		rest := r.d.Buffered()
		b := make([]byte, 1)
		for {
			if _, err := rest.Read(b); err != nil {
				break
			}
			if b[0] != ' ' && b[0] != '\n' && b[0] != '\r' && b[0] != '\t' && b[0] != ',' {
				first = b[0]
				break
			}
		}
		if first == '[' {
			if _, err := r.d.Token(); err != nil {
				return record{}, err
			}
			r.inArray = true
			return r.next()
		}
	}
	var id struct {
		ID     string `json:"id"`
		State  string `json:"state"`
		Traits struct {
			Email string `json:"email"`
			Name  any    `json:"name"`
		} `json:"traits"`
		VerifiableAddresses []struct {
			Value    string `json:"value"`
			Verified bool   `json:"verified"`
		} `json:"verifiable_addresses"`
		Credentials struct {
			Password struct {
				Config struct {
					HashedPassword string `json:"hashed_password"`
					Password       string `json:"password"`
				} `json:"config"`
			} `json:"password"`
		} `json:"credentials"`
		CreatedAt *time.Time `json:"created_at"`
	}
	if err := r.d.Decode(&id); err != nil {
		return record{}, err
	}
	l := importLine{Name: id.Traits.Email, ExternalID: id.ID, Email: id.Traits.Email, CreatedAt: id.CreatedAt,
		PasswordHash: kratosHash(id.Credentials.Password.Config.HashedPassword), Password: id.Credentials.Password.Config.Password}
	for _, a := range id.VerifiableAddresses {
		if strings.EqualFold(a.Value, id.Traits.Email) && a.Verified {
			l.EmailVerified = true
		}
	}
	switch n := id.Traits.Name.(type) {
	case string:
		l.DisplayName = n
	case map[string]any:
		l.GivenName, _ = n["first"].(string)
		l.FamilyName, _ = n["last"].(string)
		l.DisplayName = strings.TrimSpace(l.GivenName + " " + l.FamilyName)
	}
	rec, err := makeRecord(l)
	if err != nil {
		return record{}, err
	}
	if id.State == "inactive" {
		rec.skip = "inactive in Kratos"
	}
	return rec, nil
}

// kratosHash keeps Kratos's hashes as they are, except $scrypt$ where
// Kratos writes N instead of log2 N, and $sha512-crypt$ / $sha256-crypt$,
// which become $6$ / $5$.
func kratosHash(h string) string {
	if m := kratosScryptLN.FindStringSubmatch(h); m != nil {
		if n, err := strconv.ParseUint(m[1], 10, 64); err == nil && n > 31 && n&(n-1) == 0 {
			return "$scrypt$ln=" + strconv.Itoa(bits.TrailingZeros64(n)) + "," + h[len(m[0]):]
		}
	}
	if rest, ok := strings.CutPrefix(h, "$sha512-crypt$"); ok {
		return "$6$" + rest
	}
	if rest, ok := strings.CutPrefix(h, "$sha256-crypt$"); ok {
		return "$5$" + rest
	}
	return h
}
