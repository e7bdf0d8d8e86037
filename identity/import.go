package identity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

// Bulk import of users with their password hashes (API-cli.md).

// Limits of one import request: over them the request is refused whole
// (fault.TooLarge), before anything is written.
const (
	MaxImportLines          = 10_000
	MaxImportBytes          = 16 << 20
	MaxImportLineBytes      = 64 << 10
	MaxImportPasswordLines  = 200 // plaintext passwords hashed here (Kratos's limit)
	ImportBatch             = 500 // lines committed per transaction
	ActionUserImport        = "user.import"
	ActionUserImportBatch   = "user.import.batch"
	OnConflictSkip          = "skip"
	OnConflictUpdate        = "update"
	OnConflictFail          = "fail"
	ImportCreated           = "created"
	ImportUpdated           = "updated"
	ImportUnchanged         = "unchanged"
	ImportSkipped           = "skipped"
	ImportFailed            = "failed"
	importCodeInvalid       = "invalid"
	importCodeRole          = "role_not_importable"
	importCodeConflict      = "conflict"
	importCodeDuplicate     = "duplicate_in_request"
	importCodeHashKey       = "hash_key_unknown"
	importCodeUnsupportedPw = "unsupported_hash"
)

// ImportLine is one user of an import, as the NDJSON line names it.
type ImportLine struct {
	Name          string    `json:"name"`
	ExternalID    string    `json:"externalId"`
	Email         string    `json:"email"`
	EmailVerified bool      `json:"emailVerified"`
	DisplayName   string    `json:"displayName"`
	GivenName     string    `json:"givenName"`
	FamilyName    string    `json:"familyName"`
	Roles         []string  `json:"roles"`
	PasswordHash  string    `json:"passwordHash"`
	Password      string    `json:"password"`
	CreatedAt     time.Time `json:"createdAt"`
}

// ImportError is why a line failed: {code, field, message}.
type ImportError struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ImportResult is the answer for one line, in order, numbered from 1.
type ImportResult struct {
	Line   int          `json:"line"`
	Status string       `json:"status"`
	ID     string       `json:"id,omitempty"`
	Error  *ImportError `json:"error,omitempty"`
}

// ImportSummary counts the results of a request.
type ImportSummary struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Skipped   int `json:"skipped"`
	Failed    int `json:"failed"`
}

func (s *ImportSummary) add(status string) {
	switch status {
	case ImportCreated:
		s.Created++
	case ImportUpdated:
		s.Updated++
	case ImportUnchanged:
		s.Unchanged++
	case ImportSkipped:
		s.Skipped++
	default:
		s.Failed++
	}
}

// ImportOptions are the request's query.
type ImportOptions struct {
	OnConflict string // skip (default), update or fail
	DryRun     bool
}

// UserImporter is implemented by stores that can import users: creates
// and updates of one batch with their audit records, in one transaction
// (fault.Conflict when a user's name, ignoring case, or externalId clashes
// with another's, or an updated user is gone; then nothing is written).
type UserImporter interface {
	ImportUsers(ctx context.Context, creates, updates []User, recs []*audit.Record) error
}

// ImportLookup is implemented by stores that read the existing users of
// a whole import batch at once: those of the tenant whose externalId is
// among externalIDs or whose name is among names. One query a batch
// instead of one or two a line is most of P19's import rate on SQLite.
type ImportLookup interface {
	LookupImportUsers(ctx context.Context, tenantID string, externalIDs, names []string) ([]User, error)
}

// importFinder answers prepareLine's reads: from a batch's lookup when
// the store has one, else from the store line by line.
type importFinder struct {
	st            Store
	tenantID      string
	batch         bool
	byExt, byName map[string]User
}

func (f *importFinder) byExternalID(ctx context.Context, id string) (User, error) {
	if !f.batch {
		return f.st.GetUserByExternalID(ctx, f.tenantID, id)
	}
	if u, ok := f.byExt[id]; ok {
		return u, nil
	}
	return User{}, fault.E(fault.NotFound, "user not found")
}

func (f *importFinder) byNameOf(ctx context.Context, name string) (User, error) {
	if !f.batch {
		return f.st.GetUserByName(ctx, f.tenantID, name)
	}
	if u, ok := f.byName[name]; ok {
		return u, nil
	}
	return User{}, fault.E(fault.NotFound, "user not found")
}

// finder reads, when the store can, the existing users of the lines at
// once. A line that does not parse is left to prepareLine to fail.
func (s *Service) finder(ctx context.Context, tenantID string, lines [][]byte) (*importFinder, error) {
	f := &importFinder{st: s.st, tenantID: tenantID}
	look, ok := s.st.(ImportLookup)
	if !ok {
		return f, nil
	}
	var exts, names []string
	for _, raw := range lines {
		var in struct {
			Name       string `json:"name"`
			ExternalID string `json:"externalId"`
		}
		if json.Unmarshal(raw, &in) != nil {
			continue
		}
		if in.ExternalID != "" {
			exts = append(exts, in.ExternalID)
		}
		if in.Name != "" {
			names = append(names, in.Name)
		}
	}
	users, err := look.LookupImportUsers(ctx, tenantID, exts, names)
	if err != nil {
		return nil, err
	}
	f.batch, f.byExt, f.byName = true, make(map[string]User, len(users)), make(map[string]User, len(users))
	for _, u := range users {
		if u.ExternalID != "" {
			f.byExt[u.ExternalID] = u
		}
		f.byName[u.Name] = u
	}
	return f, nil
}

// SplitImport checks an import body against the limits and splits it
// into its lines (blank lines are kept, to keep the numbering, and fail
// as invalid). Over a limit it returns fault.TooLarge and nothing else.
func SplitImport(body []byte) ([][]byte, error) {
	if len(body) > MaxImportBytes {
		return nil, fault.E(fault.TooLarge, fmt.Sprintf("an import is at most %d bytes", MaxImportBytes))
	}
	body = bytes.TrimRight(body, "\r\n")
	if len(body) == 0 {
		return nil, fault.E(fault.Invalid, "the import has no lines")
	}
	var lines [][]byte
	for len(body) > 0 {
		line, rest, _ := bytes.Cut(body, []byte{'\n'})
		body = rest
		if len(lines) == MaxImportLines {
			return nil, fault.E(fault.TooLarge, fmt.Sprintf("an import is at most %d lines", MaxImportLines))
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) > MaxImportLineBytes {
			return nil, fault.E(fault.TooLarge, fmt.Sprintf("line %d is over %d bytes", len(lines)+1, MaxImportLineBytes))
		}
		lines = append(lines, line)
	}
	passwords := 0
	for _, l := range lines {
		if bytes.Contains(l, []byte(`"password"`)) {
			passwords++
		}
	}
	if passwords > MaxImportPasswordLines {
		return nil, fault.E(fault.TooLarge, fmt.Sprintf("at most %d lines of a request may carry a plaintext password", MaxImportPasswordLines))
	}
	return lines, nil
}

// CheckImport returns nil when p may import users into tenantID (which
// exists), so that an import is refused before its body is read.
func (s *Service) CheckImport(ctx context.Context, p Principal, tenantID string) error {
	if err := checkAdmin(p, tenantID); err != nil {
		return err
	}
	_, err := s.st.GetTenant(ctx, tenantID)
	return err
}

// pendingLine is a line being imported.
type pendingLine struct {
	n      int
	res    ImportResult
	create *User
	update *User
	scheme string
}

// ImportUsers imports lines (from SplitImport) into a tenant: each line
// is created, updated, unchanged, skipped or failed, never stopping the
// others; ImportBatch lines are committed per transaction with a
// user.import audit record per user written (its scheme, never its hash),
// and each batch's results are handed to emit once committed. At the end
// one user.import.batch record tells the summary. With opts.DryRun
// nothing is written and the results say what would be.
func (s *Service) ImportUsers(ctx context.Context, p Principal, tenantID string, lines [][]byte, opts ImportOptions, emit func([]ImportResult) error) (ImportSummary, error) {
	var sum ImportSummary
	if err := checkAdmin(p, tenantID); err != nil {
		return sum, err
	}
	t, err := s.st.GetTenant(ctx, tenantID)
	if err != nil {
		return sum, err
	}
	switch opts.OnConflict {
	case "":
		opts.OnConflict = OnConflictSkip
	case OnConflictSkip, OnConflictUpdate, OnConflictFail:
	default:
		return sum, fault.E(fault.Invalid, fault.Field("onConflict"), "onConflict must be skip, update or fail")
	}
	imp, ok := s.st.(UserImporter)
	if !ok {
		return sum, fault.E(fault.Internal, "identity: the store cannot import users")
	}
	builder, _ := s.cfg.Audit.(audit.Builder)
	if builder == nil {
		return sum, fault.E(fault.Internal, "identity: the audit sink cannot build records for an import")
	}
	seen := map[string]int{}
	for start := 0; start < len(lines); start += ImportBatch {
		end := min(start+ImportBatch, len(lines))
		batch := make([]*pendingLine, 0, end-start)
		find, err := s.finder(ctx, t.ID, lines[start:end])
		if err != nil {
			return sum, err
		}
		for i := start; i < end; i++ {
			batch = append(batch, s.prepareLine(ctx, t, find, i+1, lines[i], opts, seen))
		}
		if !opts.DryRun {
			if err := s.commitImport(ctx, imp, builder, t, batch); err != nil {
				return sum, err
			}
		}
		out := make([]ImportResult, len(batch))
		for i, pl := range batch {
			out[i] = pl.res
			sum.add(pl.res.Status)
		}
		if err := emit(out); err != nil {
			return sum, err
		}
	}
	meta := map[string]any{"lines": len(lines), "onConflict": opts.OnConflict, "dryRun": opts.DryRun, "summary": sum}
	return sum, s.record(ctx, tenantID, ActionUserImportBatch, nil, meta)
}

func failLine(pl *pendingLine, code, field, msg string) *pendingLine {
	pl.res.Status, pl.res.Error, pl.res.ID = ImportFailed, &ImportError{Code: code, Field: field, Message: msg}, ""
	pl.create, pl.update = nil, nil
	return pl
}

// prepareLine decides what a line does, reading the store but writing
// nothing.
func (s *Service) prepareLine(ctx context.Context, t Tenant, find *importFinder, n int, raw []byte, opts ImportOptions, seen map[string]int) *pendingLine {
	pl := &pendingLine{n: n, res: ImportResult{Line: n}}
	var in ImportLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&in); err != nil || dec.More() {
		return failLine(pl, importCodeInvalid, "", "the line is not one JSON object of a user")
	}
	if err := textField("name", in.Name, 1, 128); err != nil {
		return failLine(pl, importCodeInvalid, "name", fault.MessageOf(err))
	}
	prof := Profile{Email: in.Email, EmailVerified: in.EmailVerified, DisplayName: in.DisplayName, GivenName: in.GivenName, FamilyName: in.FamilyName, ExternalID: in.ExternalID}
	if err := prof.Check(); err != nil {
		return failLine(pl, importCodeInvalid, fault.FieldOf(err), fault.MessageOf(err))
	}
	for _, r := range in.Roles {
		if r == RoleTenantAdmin {
			return failLine(pl, importCodeRole, "roles", "tenant-admin cannot be imported: create administrators by hand, with a password they set")
		}
		if r != RoleUser && r != RoleApplicationOwner {
			return failLine(pl, importCodeInvalid, "roles", fmt.Sprintf("roles: unknown value %q; allowed: user, application-owner", r))
		}
	}
	key := "n\x00" + in.Name
	if in.ExternalID != "" {
		key = "e\x00" + in.ExternalID
	}
	if first, dup := seen[key]; dup {
		return failLine(pl, importCodeDuplicate, "", fmt.Sprintf("line %d has the same key", first))
	}
	seen[key] = n
	hash, scheme := "", SchemeNone
	switch {
	case in.PasswordHash != "" && in.Password != "":
		return failLine(pl, importCodeInvalid, "password", "send passwordHash or password, not both")
	case in.PasswordHash != "":
		sc, err := ParsePasswordHash(in.PasswordHash)
		if err != nil {
			return failLine(pl, HashErrorCode(err), "passwordHash", fault.MessageOf(err))
		}
		if name := FirebaseKeyName(in.PasswordHash); name != "" {
			if _, err := s.st.GetPasswordHashKey(ctx, t.ID, name); fault.Is(fault.NotFound, err) {
				return failLine(pl, importCodeHashKey, "passwordHash", fmt.Sprintf("no password-hash key %q: PUT it first", name))
			} else if err != nil {
				return failLine(pl, importCodeInvalid, "passwordHash", "the password-hash key cannot be read")
			}
		}
		hash, scheme = in.PasswordHash, sc
	case in.Password != "":
		if err := checkPasswordLength(in.Password); err != nil {
			return failLine(pl, importCodeInvalid, "password", fault.MessageOf(err))
		}
		if !opts.DryRun {
			h, err := s.cfg.Hasher.Hash(ctx, in.Password)
			if err != nil {
				return failLine(pl, importCodeInvalid, "password", fault.MessageOf(err))
			}
			hash = h
		}
		scheme = SchemeArgon2id
	}
	pl.scheme = scheme
	var (
		old User
		err error
	)
	if in.ExternalID != "" {
		old, err = find.byExternalID(ctx, in.ExternalID)
	} else {
		old, err = find.byNameOf(ctx, in.Name)
	}
	if err != nil && !fault.Is(fault.NotFound, err) {
		return failLine(pl, importCodeInvalid, "", "the user cannot be read: "+fault.MessageOf(err))
	}
	u := User{TenantID: t.ID, Name: in.Name, PasswordHash: hash, PasswordScheme: scheme, Roles: normalRoles(in.Roles), CreatedAt: s.now()}
	if !in.CreatedAt.IsZero() {
		u.CreatedAt = in.CreatedAt.UTC().Truncate(time.Microsecond)
	}
	prof.apply(&u)
	if err != nil { // not found: a new user
		if in.ExternalID != "" { // the name must be free too
			if o, err := find.byNameOf(ctx, in.Name); err == nil {
				return failLine(pl, importCodeConflict, "name", fmt.Sprintf("the name belongs to another user (%s)", o.ID))
			}
		}
		u.ID = NewObjectID()
		pl.create, pl.res.Status, pl.res.ID = &u, ImportCreated, u.ID.String()
		return pl
	}
	u.ID, u.CreatedAt, u.Inactive = old.ID, old.CreatedAt, old.Inactive
	pl.res.ID = old.ID.String()
	// A password sent in plaintext hashes with a new salt each time: it
	// never replaces a stored argon2id hash (the user may have changed it).
	if in.Password != "" && old.PasswordScheme == SchemeArgon2id {
		u.PasswordHash, u.PasswordScheme = old.PasswordHash, old.PasswordScheme
	}
	// update never puts an imported hash back over one that Latchkey
	// rehashed since: a stored argon2id that differs from the line's
	// foreign hash stays.
	if in.PasswordHash != "" && scheme != SchemeArgon2id && old.PasswordScheme == SchemeArgon2id && old.PasswordHash != in.PasswordHash {
		u.PasswordHash, u.PasswordScheme = old.PasswordHash, old.PasswordScheme
	}
	if in.CreatedAt.IsZero() {
		u.CreatedAt = old.CreatedAt
	}
	if sameImported(old, u) {
		pl.res.Status = ImportUnchanged
		return pl
	}
	switch opts.OnConflict {
	case OnConflictSkip:
		pl.res.Status = ImportSkipped
	case OnConflictFail:
		return failLine(pl, importCodeConflict, "", "the user exists with other fields (onConflict=fail)")
	default:
		if old.Name != u.Name {
			if _, err := find.byNameOf(ctx, u.Name); err == nil {
				return failLine(pl, importCodeConflict, "name", "the new name belongs to another user")
			}
		}
		u.CreatedAt = old.CreatedAt
		pl.update, pl.res.Status = &u, ImportUpdated
	}
	return pl
}

// sameImported reports whether an import would change nothing of old.
func sameImported(old, u User) bool {
	return old.Name == u.Name && old.PasswordHash == u.PasswordHash && slices.Equal(old.Roles, u.Roles) && ProfileOf(old) == ProfileOf(u)
}

// commitImport writes a batch's creates and updates with their records in
// one transaction. When it clashes (another writer took a name or an
// externalId meanwhile), each line is committed alone, so that one clash
// fails one line.
func (s *Service) commitImport(ctx context.Context, imp UserImporter, b audit.Builder, t Tenant, batch []*pendingLine) error {
	build := func(pls []*pendingLine) ([]User, []User, []*audit.Record, error) {
		var creates, updates []User
		var recs []*audit.Record
		for _, pl := range pls {
			u := pl.create
			if u == nil {
				u = pl.update
			}
			if u == nil {
				continue
			}
			meta := map[string]any{"user": map[string]any{"id": u.ID.String(), "name": u.Name}, "status": pl.res.Status, "scheme": pl.scheme, "line": pl.n}
			if u.ExternalID != "" {
				meta["user"].(map[string]any)["externalId"] = u.ExternalID
			}
			rec, err := b.Build(ctx, audit.Entry{TenantID: t.ID, Source: audit.SourcePlatform, Action: ActionUserImport, Meta: meta})
			if err != nil {
				return nil, nil, nil, err
			}
			recs = append(recs, rec)
			if pl.create != nil {
				creates = append(creates, *u)
			} else {
				updates = append(updates, *u)
			}
		}
		return creates, updates, recs, nil
	}
	creates, updates, recs, err := build(batch)
	if err != nil || len(recs) == 0 {
		return err
	}
	err = imp.ImportUsers(ctx, creates, updates, recs)
	if !fault.Is(fault.Conflict, err) {
		return err
	}
	for _, pl := range batch {
		if pl.create == nil && pl.update == nil {
			continue
		}
		c, u, r, err := build([]*pendingLine{pl})
		if err != nil {
			return err
		}
		if err := imp.ImportUsers(ctx, c, u, r); fault.Is(fault.Conflict, err) {
			msg := "a user with this name or externalId was created meanwhile"
			if pl.update != nil {
				msg = "another user took this name or externalId, or this user was deleted, meanwhile"
			}
			failLine(pl, importCodeConflict, "", msg)
		} else if err != nil {
			return err
		}
	}
	return nil
}
