package httpapi_test

import (
	"archive/zip"
	"bytes"
	"crypto"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

const exportsPath = "/audit/v1/audit-log-exports"

// exportEnv is an Env with a tenant whose administrator logged in (and
// failed once), and an audit client of that tenant.
type exportEnv struct {
	*latchkeytest.Env
	tenant latchkeytest.Tenant
	token  string // tenant-admin access token with audit:export
	dir    string // archive directory
}

func newExportEnv(t *testing.T) *exportEnv {
	t.Helper()
	dir := t.TempDir()
	e := latchkeytest.New(t, latchkeytest.WithArchiveDir(dir))
	tn := e.NewTenant("Acme")
	// A failed login and an admin action, so the log has every kind of record.
	if r := e.Do("POST", "/api/v1/auth/tokens/", map[string]string{"name": "tadmin", "password": "wrong", "auth_domain": tn.Code}); r.Status != 401 {
		t.Fatalf("failed login: %d", r.Status)
	}
	if r := e.Do("POST", "/api/v1/admin/tenants/"+tn.ID+"/users", map[string]any{"name": "bob", "password": "bob-password-1", "roles": []string{"user"}}, bearer(tn.AdminToken)); r.Status != 201 {
		t.Fatalf("create user: %d %s", r.Status, r.Body)
	}
	tok := e.AuditClient(tn, identity.RoleTenantAdmin, identity.ScopeAuditExport)
	e.Clock.Advance(time.Second)
	return &exportEnv{Env: e, tenant: tn, token: tok, dir: dir}
}

func (e *exportEnv) start(t *testing.T, body any) string {
	t.Helper()
	r := e.Do("POST", exportsPath, body, bearer(e.token))
	if r.Status != http.StatusAccepted {
		t.Fatalf("start export: %d %s", r.Status, r.Body)
	}
	return r.JSON()["jobId"].(string)
}

func (e *exportEnv) get(t *testing.T, jobID string) map[string]any {
	t.Helper()
	r := e.Do("GET", exportsPath+"/"+jobID, nil, bearer(e.token))
	if r.Status != 200 {
		t.Fatalf("get export: %d %s", r.Status, r.Body)
	}
	return r.JSON()
}

// downloads are the two files of a finished export: the archive
// (location) and its integrity file (digestLocation).
type downloads struct{ archive, integrity []byte }

// download runs the worker, reads the job's location and digestLocation
// and downloads both, returning the location's path and query and the files.
func (e *exportEnv) download(t *testing.T, jobID string) (string, downloads) {
	t.Helper()
	e.RunExports()
	job := e.get(t, jobID)
	if job["state"] != audit.JobSucceeded {
		t.Fatalf("job = %v, want SUCCEEDED", job)
	}
	var dl downloads
	var rel string
	for _, f := range []struct {
		field, path, filename string
		into                  *[]byte
	}{
		{"location", jobID + "?", "audit-logs-" + jobID + ".zip", &dl.archive},
		{"digestLocation", jobID + "/integrity?", "audit-logs-" + jobID + ".integrity.zip", &dl.integrity},
	} {
		loc, _ := job[f.field].(string)
		if !strings.HasPrefix(loc, "http://127.0.0.1:8080/audit/v1/archives/"+f.path) {
			t.Fatalf("%s = %q, want an absolute signed URL under the public URL", f.field, loc)
		}
		u := strings.TrimPrefix(loc, "http://127.0.0.1:8080")
		r := e.Do("GET", u, nil)
		if r.Status != 200 {
			t.Fatalf("download %s: %d %s", f.field, r.Status, r.Body)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/zip" {
			t.Errorf("%s: Content-Type = %q", f.field, ct)
		}
		if cd := r.Header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") || !strings.Contains(cd, `"`+f.filename+`"`) {
			t.Errorf("%s: Content-Disposition = %q", f.field, cd)
		}
		*f.into = r.Body
		if rel == "" {
			rel = u
		}
	}
	// recordsWritten (API-cli.md) is the archive's count once SUCCEEDED.
	if got, want := job["recordsWritten"], float64(len(readLogs(t, dl.archive))); got != want {
		t.Errorf("recordsWritten = %v, want the archive's %v records", got, want)
	}
	return rel, dl
}

// verify checks an export against the JWKS and returns its records.
func verify(t *testing.T, e *latchkeytest.Env, dl downloads) (audit.VerifyReport, []map[string]any) {
	t.Helper()
	r := e.Do("GET", "/.well-known/jwks.json", nil)
	keys, err := audit.KeysFromJWKS(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := dl.verify(keys)
	if err != nil {
		t.Fatalf("VerifyArchive: %v", err)
	}
	return rep, readLogs(t, dl.archive)
}

func (dl downloads) verify(keys map[string]crypto.PublicKey) (audit.VerifyReport, error) {
	return audit.VerifyArchive(bytes.NewReader(dl.archive), int64(len(dl.archive)), bytes.NewReader(dl.integrity), int64(len(dl.integrity)), keys)
}

func readLogs(t *testing.T, archive []byte) []map[string]any {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := zr.Open(audit.LogsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []map[string]any
	if err := json.NewDecoder(f).Decode(&recs); err != nil {
		t.Fatal(err)
	}
	return recs
}

func dayAround(e *latchkeytest.Env) map[string]any {
	return map[string]any{"from": latchkeytest.Start.Add(-time.Hour).Format(time.RFC3339), "to": e.Clock.Now().Add(time.Hour).Format(time.RFC3339)}
}

// specTime is the spec's record time: six fractional digits, then " UTC".
var specTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6} UTC$`)

func TestAuditExportEndToEnd(t *testing.T) {
	e := newExportEnv(t)
	r := e.Do("POST", exportsPath, dayAround(e.Env), bearer(e.token))
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	body := r.JSON()
	jobID, _ := body["jobId"].(string)
	if !identity.IsGUID(jobID) || body["state"] != audit.JobActive || body["startedAt"] == nil {
		t.Fatalf("202 body = %s", r.Body)
	}
	if job := e.get(t, jobID); job["state"] != audit.JobActive || job["location"] != nil || job["endedAt"] != nil {
		t.Errorf("job before the worker ran = %v, want ACTIVE with null location and endedAt", job)
	}
	rel, dl := e.download(t, jobID)
	archive := dl.archive
	if job := e.get(t, jobID); job["endedAt"] == nil {
		t.Errorf("succeeded job has no endedAt: %v", job)
	}
	rep, recs := verify(t, e.Env, dl)
	if rep.Digest.Filtered() || rep.Digest.Count != int64(len(recs)) || rep.Runs != 1 {
		t.Errorf("report = %+v for %d records", rep, len(recs))
	}

	// Every area's actions appear, failures with meta.errorMessage, all of
	// this tenant, with the spec's time format.
	seen := map[string]bool{}
	for _, rec := range recs {
		seen[rec["source"].(string)+" "+rec["action"].(string)+" "+rec["status"].(string)] = true
		if rec["tenantID"] != e.tenant.ID {
			t.Errorf("record of another tenant: %v", rec)
		}
		if !specTime.MatchString(rec["time"].(string)) {
			t.Errorf("time %q is not YYYY-MM-DD hh:mm:ss.ffffff UTC", rec["time"])
		}
		meta, _ := rec["meta"].(map[string]any)
		if rec["status"] == audit.StatusFailed && (meta == nil || meta["errorMessage"] == "" || meta["errorMessage"] == nil) {
			t.Errorf("failed record without meta.errorMessage: %v", rec)
		}
	}
	for _, want := range []string{
		"latchkey-platform auth.login success", "latchkey-platform auth.login failed",
		"latchkey-platform user.create success", "latchkey-platform oauth-client.create success",
		"latchkey-platform oauth.token success", "latchkey-audit export.create success",
	} {
		if !seen[want] {
			t.Errorf("no %q record in the export; have %v", want, seen)
		}
	}

	// The archive and its integrity file are what the platform wrote, and
	// both downloads are audited.
	files, _ := filepath.Glob(filepath.Join(e.dir, jobID+"-*.zip"))
	if len(files) != 2 {
		t.Fatalf("archive files = %v, want the archive and its integrity file", files)
	}
	for _, action := range []string{"export.download", "export.integrity.download"} {
		if last := lastAuditWhere(t, e.Env, e.tenant.ID, action); last.Source != audit.SourceAudit || last.Status != audit.StatusSuccess || last.ActorID != "" {
			t.Errorf("last record = %+v, want a successful %s", last, action)
		}
	}

	t.Run("tampered links", func(t *testing.T) {
		u, _ := url.Parse(rel)
		q := u.Query()
		tamper := map[string]func(q url.Values, path *string){
			"signature": func(q url.Values, _ *string) {
				s := q.Get("sig")
				c := "A"
				if s[0] == 'A' {
					c = "B"
				}
				q.Set("sig", c+s[1:])
			},
			"expiry":  func(q url.Values, _ *string) { q.Set("expires", q.Get("expires")+"0") },
			"tenant":  func(q url.Values, _ *string) { q.Set("tenant", e.Root.ID) },
			"job":     func(_ url.Values, p *string) { *p = "/audit/v1/archives/" + identity.NewGUID() },
			"no sig":  func(q url.Values, _ *string) { q.Del("sig") },
			"garbage": func(q url.Values, _ *string) { q.Set("expires", "soon") },
		}
		for name, f := range tamper {
			t.Run(name, func(t *testing.T) {
				q2 := url.Values{}
				for k, v := range q {
					q2[k] = append([]string(nil), v...)
				}
				p := u.Path
				f(q2, &p)
				r := e.Do("GET", p+"?"+q2.Encode(), nil)
				if r.Status != 403 || r.JSON()["status"] != float64(403) || r.JSON()["traceId"] == "" || r.JSON()["title"] == nil {
					t.Errorf("tampered link: %d %s, want a 403 problem", r.Status, r.Body)
				}
			})
		}
		t.Run("archive link on the integrity file", func(t *testing.T) {
			if r := e.Do("GET", u.Path+"/integrity?"+u.RawQuery, nil); r.Status != 403 {
				t.Errorf("archive link opened the integrity file: %d %s", r.Status, r.Body)
			}
		})
	})

	t.Run("unzip", func(t *testing.T) {
		if _, err := exec.LookPath("unzip"); err != nil {
			t.Skip("unzip not installed")
		}
		path := filepath.Join(t.TempDir(), "a.zip")
		os.WriteFile(path, archive, 0o600)
		out, err := exec.Command("unzip", "-Z1", path).CombinedOutput()
		if err != nil {
			t.Fatalf("unzip -Z1: %v\n%s", err, out)
		}
		if string(out) != audit.LogsFile+"\n" {
			t.Errorf("unzip -Z1 lists %q, want exactly %s", out, audit.LogsFile)
		}
		ipath := filepath.Join(t.TempDir(), "a.integrity.zip")
		os.WriteFile(ipath, dl.integrity, 0o600)
		if out, err := exec.Command("unzip", "-Z1", ipath).CombinedOutput(); err != nil || string(out) != audit.ChainFile+"\n"+audit.DigestFile+"\n" {
			t.Errorf("unzip -Z1 of the integrity file: %q, %v", out, err)
		}
		out, err = exec.Command("unzip", "-l", path).CombinedOutput()
		if err != nil {
			t.Fatalf("unzip -l: %v\n%s", err, out)
		}
		if bytes.Contains(out, []byte("1980-")) || bytes.Contains(out, []byte("-00-00")) {
			t.Errorf("an archive entry has no modification date:\n%s", out)
		}
		out, err = exec.Command("unzip", "-p", path).Output() // the only file, unnamed, as a spec client does
		if err != nil {
			t.Fatalf("unzip -p: %v", err)
		}
		var list []map[string]any
		if err := json.Unmarshal(out, &list); err != nil || len(list) != len(recs) {
			t.Errorf("unzip -p gave %d records (%v), want %d", len(list), err, len(recs))
		}
	})

	t.Run("expiry and clean-up", func(t *testing.T) {
		e.Clock.Advance(audit.URLValidity + time.Second)
		r := e.Do("GET", rel, nil)
		if r.Status != 403 || !strings.Contains(r.JSON()["detail"].(string), "expired") {
			t.Errorf("expired link: %d %s, want 403 expired", r.Status, r.Body)
		}
		if last := lastAudit(t, e.Env, e.tenant.ID); last.Action != "export.download" || last.Status != audit.StatusFailed || last.Meta["errorMessage"] == nil {
			t.Errorf("last record = %+v, want a failed export.download with errorMessage", last)
		}
		n, err := e.Platform.Exports.CleanupExpired(t.Context())
		if err != nil || n != 1 {
			t.Fatalf("CleanupExpired = %d, %v; want 1", n, err)
		}
		for _, f := range files {
			if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still on disk after expiry: %v", f, err)
			}
		}
		// The access token has expired too: ask the Platform directly.
		by := identity.Principal{Kind: identity.KindClient, TenantID: e.tenant.ID, Roles: []string{identity.RoleTenantAdmin}, Scopes: []string{identity.ScopeAuditExport}}
		st, err := e.Platform.GetExport(t.Context(), by, jobID, "/audit/v1/archives")
		if err != nil || st.Job.State != audit.JobSucceeded || st.Location != "" || st.DigestLocation != "" || st.Job.Archive != "" {
			t.Errorf("job after clean-up = %+v, %v; want SUCCEEDED with no location", st, err)
		}
	})
}

func TestAuditExportVerifierCatchesTampering(t *testing.T) {
	e := newExportEnv(t)
	jobID := e.start(t, dayAround(e.Env))
	_, dl := e.download(t, jobID)
	keys, err := audit.KeysFromJWKS(e.Do("GET", "/.well-known/jwks.json", nil).Body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dl.verify(keys); err != nil {
		t.Fatalf("the downloads as served: %v", err)
	}

	// The archive's audit-logs.json rewritten by someone without the key: the
	// chain entry of the first record that moved or changed no longer matches.
	for _, tt := range []struct {
		name string
		edit func(recs []json.RawMessage) []json.RawMessage
	}{
		{"record removed", func(rs []json.RawMessage) []json.RawMessage { return append(rs[:1:1], rs[2:]...) }},
		{"record edited", func(rs []json.RawMessage) []json.RawMessage {
			rs[1] = bytes.Replace(rs[1], []byte(`"status":"`), []byte(`"status":"x`), 1)
			return rs
		}},
		{"records reordered", func(rs []json.RawMessage) []json.RawMessage { rs[1], rs[2] = rs[2], rs[1]; return rs }},
	} {
		t.Run("download: "+tt.name, func(t *testing.T) {
			edited := downloads{rewriteLogs(t, dl.archive, func(b []byte) []byte {
				var recs []json.RawMessage
				if err := json.Unmarshal(b, &recs); err != nil || len(recs) < 3 {
					t.Fatalf("logs: %d records, %v", len(recs), err)
				}
				out, _ := json.Marshal(tt.edit(recs))
				return out
			}), dl.integrity}
			var ve *audit.VerifyError
			if _, err := edited.verify(keys); !errors.Is(err, audit.ErrRecordAltered) || !errors.As(err, &ve) || ve.Index != 1 {
				t.Errorf("VerifyArchive = %v, want ErrRecordAltered at position 1", err)
			}
		})
	}

	// A database edited or pruned before the export: the platform signs what
	// the store returns, and the chain gives it away.
	ctx := t.Context()
	req := audit.ExportRequest{From: latchkeytest.Start.Add(-time.Hour), To: e.Clock.Now()}
	var recs []audit.Record
	for r, err := range e.Store.ScanAuditRecords(ctx, e.tenant.ID, req) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) < 4 {
		t.Fatalf("only %d records", len(recs))
	}
	key, kid := e.Platform.Identity.Keys().SigningKey()
	signer, err := audit.NewES256Signer(kid, key)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		alter func([]audit.Record) []audit.Record
		want  error
	}{
		{"record removed", func(rs []audit.Record) []audit.Record { return append(rs[:2:2], rs[3:]...) }, audit.ErrRecordMissing},
		{"record edited", func(rs []audit.Record) []audit.Record {
			rs[2].ActorID = "someone-else"
			return rs
		}, audit.ErrRecordAltered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := tt.alter(append([]audit.Record(nil), recs...))
			var a, i bytes.Buffer
			seq := func(yield func(audit.Record, error) bool) {
				for _, r := range rs {
					if !yield(r, nil) {
						return
					}
				}
			}
			if _, err := audit.WriteArchive(&a, &i, audit.ArchiveMeta{JobID: "j", TenantID: e.tenant.ID, Request: req, CreatedAt: e.Clock.Now()}, seq, signer); err != nil {
				t.Fatal(err)
			}
			_, err := downloads{a.Bytes(), i.Bytes()}.verify(keys)
			if !errors.Is(err, tt.want) {
				t.Errorf("VerifyArchive = %v, want %v", err, tt.want)
			}
		})
	}
}

// rewriteLogs copies a ZIP with the logs file passed through f.
func rewriteLogs(t *testing.T, archive []byte, f func([]byte) []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, zf := range zr.File {
		rc, _ := zf.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		if zf.Name == audit.LogsFile {
			b = f(b)
		}
		w, _ := zw.Create(zf.Name)
		w.Write(b)
	}
	zw.Close()
	return out.Bytes()
}

func TestAuditExportFilters(t *testing.T) {
	e := newExportEnv(t)
	// A second tenant's records must never appear.
	other := e.NewTenant("Other")
	_ = other
	instances := e.Do("GET", "/audit/v1/service_instances?size=100", nil, bearer(e.token)).JSON()["content"].([]any)
	var platformInstance string
	for _, in := range instances {
		m := in.(map[string]any)
		if m["source"] == audit.SourcePlatform {
			platformInstance = m["id"].(string)
		}
	}
	adminID := lastAuditWhere(t, e.Env, e.tenant.ID, "user.create").ActorID
	tests := []struct {
		name   string
		filter map[string]any
		check  func(rec map[string]any) bool
	}{
		{"source", map[string]any{"source": audit.SourceAudit}, func(r map[string]any) bool { return r["source"] == audit.SourceAudit }},
		{"resourceId", map[string]any{"resourceId": platformInstance}, func(r map[string]any) bool {
			return r["resourceid"] == platformInstance && r["source"] == audit.SourcePlatform
		}},
		{"actorId", map[string]any{"actorId": adminID}, func(r map[string]any) bool { return r["actorid"] == adminID }},
		{"action", map[string]any{"action": "auth.login"}, func(r map[string]any) bool { return r["action"] == "auth.login" }},
		{"status", map[string]any{"status": "failed"}, func(r map[string]any) bool { return r["status"] == "failed" }},
		{"action and status", map[string]any{"action": "auth.login", "status": "success"}, func(r map[string]any) bool {
			return r["action"] == "auth.login" && r["status"] == "success"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := dayAround(e.Env)
			for k, v := range tt.filter {
				body[k] = v
			}
			_, dl := e.download(t, e.start(t, body))
			rep, recs := verify(t, e.Env, dl)
			if len(recs) == 0 {
				t.Fatal("no records matched")
			}
			if !rep.Digest.Filtered() {
				t.Error("digest does not name the filter")
			}
			for _, r := range recs {
				if !tt.check(r) || r["tenantID"] != e.tenant.ID {
					t.Errorf("record does not match the filter: %v", r)
				}
			}
		})
	}
}

// lastAuditWhere returns the tenant's newest record of action.
func lastAuditWhere(t *testing.T, e *latchkeytest.Env, tenantID, action string) audit.Record {
	t.Helper()
	recs, _ := e.Store.ListAuditRecords(t.Context(), tenantID, 0, 1_000_000)
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Action == action {
			return recs[i]
		}
	}
	t.Fatalf("no %s record", action)
	return audit.Record{}
}

func TestAuditExportRanges(t *testing.T) {
	e := newExportEnv(t)
	now := e.Clock.Now()
	rfc := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	tests := []struct {
		name      string
		body      any
		wantField string // a 400 naming this field; "" for 202
		wantEmpty bool
	}{
		{"empty range", map[string]any{"from": "2001-01-01T00:00:00Z", "to": "2001-01-02T00:00:00Z"}, "", true},
		{"huge range", map[string]any{"from": "1900-01-01T00:00:00Z", "to": "2999-01-01T00:00:00Z"}, "", false},
		{"spec time format", map[string]any{"from": "2000-01-01 00:00:00.000000", "to": now.Format(audit.TimeFormat)}, "", false},
		{"from after to", map[string]any{"from": rfc(now), "to": rfc(now.Add(-time.Hour))}, "from", false},
		{"from in the future", map[string]any{"from": rfc(now.Add(time.Hour)), "to": rfc(now.Add(2 * time.Hour))}, "from", false},
		{"missing from", map[string]any{"to": rfc(now)}, "from", false},
		{"missing to", map[string]any{"from": rfc(now)}, "to", false},
		{"bad time", map[string]any{"from": "yesterday", "to": rfc(now)}, "from", false},
		{"bad status", map[string]any{"from": rfc(now), "to": rfc(now), "status": "maybe"}, "status", false},
		{"bad source", map[string]any{"from": rfc(now), "to": rfc(now), "source": "nope"}, "source", false},
		{"malformed", `{"from":`, "", false},
		{"not an object", `[]`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do("POST", exportsPath, tt.body, bearer(e.token))
			malformed := tt.name == "malformed" || tt.name == "not an object"
			switch {
			case tt.wantField != "":
				errs, _ := r.JSON()["errors"].(map[string]any)
				if r.Status != 400 || errs[tt.wantField] == nil || r.JSON()["traceId"] == "" {
					t.Errorf("got %d %s, want 400 naming %s", r.Status, r.Body, tt.wantField)
				}
				if last := lastAudit(t, e.Env, e.tenant.ID); last.Action != "export.create" || last.Status != audit.StatusFailed || last.Meta["errorMessage"] == nil {
					t.Errorf("refusal not audited: %+v", last)
				}
			case malformed:
				if r.Status != 400 || r.JSON()["detail"] == nil {
					t.Errorf("got %d %s, want a 400 problem", r.Status, r.Body)
				}
			default:
				if r.Status != 202 {
					t.Fatalf("got %d %s, want 202", r.Status, r.Body)
				}
				_, dl := e.download(t, r.JSON()["jobId"].(string))
				rep, recs := verify(t, e.Env, dl)
				if tt.wantEmpty != (len(recs) == 0) || rep.Digest.Count != int64(len(recs)) {
					t.Errorf("%d records, want empty=%v", len(recs), tt.wantEmpty)
				}
			}
		})
	}
}

func TestAuditExportAuthorization(t *testing.T) {
	e := newExportEnv(t)
	job := e.start(t, dayAround(e.Env))
	other := e.NewTenant("Other")
	tests := []struct {
		name       string
		auth       string
		wantStatus int
	}{
		{"tenant admin", bearer(e.token), 200},
		{"application owner", bearer(e.AuditClient(e.tenant, identity.RoleApplicationOwner, identity.ScopeAuditExport)), 200},
		{"role user", bearer(e.AuditClient(e.tenant, identity.RoleUser, identity.ScopeAuditExport)), 403},
		{"no role", bearer(e.AuditClient(e.tenant, "", identity.ScopeAuditExport)), 403},
		{"admin without the scope", bearer(e.AuditClient(e.tenant, identity.RoleTenantAdmin, identity.ScopeEventConsumer)), 403},
		{"platform JWT", bearer(e.tenant.AdminToken), 401},
		{"no token", "", 401},
		{"garbage token", bearer("not-a-jwt"), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := []string{}
			if tt.auth != "" {
				h = append(h, tt.auth)
			}
			for _, req := range []struct{ method, path string }{
				{"GET", "/audit/v1/service_instances"},
				{"POST", exportsPath},
				{"GET", exportsPath + "/" + job},
			} {
				var body any
				want := tt.wantStatus
				if req.method == "POST" {
					body = dayAround(e.Env)
					if want == 200 {
						want = 202
					}
				}
				r := e.Do(req.method, req.path, body, h...)
				if r.Status != want {
					t.Errorf("%s %s = %d %s, want %d", req.method, req.path, r.Status, r.Body, want)
				}
				if want >= 400 && (r.JSON()["title"] == nil || r.JSON()["traceId"] == nil) {
					t.Errorf("%s %s error body = %s, want {title,status,detail,traceId}", req.method, req.path, r.Body)
				}
			}
			if tt.wantStatus == 403 {
				if last := lastAudit(t, e.Env, e.tenant.ID); last.Source != audit.SourceAudit || last.Status != audit.StatusFailed || last.Meta["errorMessage"] == nil {
					t.Errorf("refusal not audited with errorMessage: %+v", last)
				}
			}
		})
	}
	t.Run("another tenant's job is not found", func(t *testing.T) {
		tok := e.AuditClient(other, identity.RoleTenantAdmin, identity.ScopeAuditExport)
		for _, id := range []string{job, identity.NewGUID(), "not-a-guid"} {
			if r := e.Do("GET", exportsPath+"/"+id, nil, bearer(tok)); r.Status != 404 || r.JSON()["detail"] == nil {
				t.Errorf("GET %s from another tenant = %d %s, want a 404 problem", id, r.Status, r.Body)
			}
		}
	})
}

func TestServiceInstances(t *testing.T) {
	e := newExportEnv(t)
	tests := []struct {
		query      string
		wantStatus int
		wantLen    int
		wantPages  float64
	}{
		{"", 200, len(audit.Sources), 1},
		{"?page=0&size=2", 200, 2, 4},
		{"?page=3&size=2", 200, 1, 4},
		{"?page=9&size=2", 200, 0, 4},
		{"?size=100", 200, len(audit.Sources), 1},
		{"?page=99999999999&size=1", 200, 0, float64(len(audit.Sources))},
		{"?page=-1", 400, 0, 0},
		{"?size=0", 400, 0, 0},
		{"?size=101", 400, 0, 0},
		{"?size=ten", 400, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := e.Do("GET", "/audit/v1/service_instances"+tt.query, nil, bearer(e.token))
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d %s, want %d", r.Status, r.Body, tt.wantStatus)
			}
			if r.Status != 200 {
				return
			}
			var page struct {
				Content []struct {
					ID, Name, ServiceType, Source string
					CreatedAt                     time.Time
				}
				TotalElements int
				TotalPages    float64
			}
			json.Unmarshal(r.Body, &page)
			if len(page.Content) != tt.wantLen || page.TotalElements != len(audit.Sources) || page.TotalPages != tt.wantPages {
				t.Errorf("page = %+v", page)
			}
			for _, c := range page.Content {
				if !identity.IsGUID(c.ID) || c.Name == "" || c.ServiceType == "" || !strings.HasPrefix(c.Source, "latchkey-") || c.CreatedAt.IsZero() {
					t.Errorf("instance = %+v", c)
				}
			}
		})
	}
	// Instances are per tenant.
	other := e.NewTenant("Other")
	tok := e.AuditClient(other, identity.RoleTenantAdmin, identity.ScopeAuditExport)
	a := e.Do("GET", "/audit/v1/service_instances", nil, bearer(e.token)).JSON()["content"].([]any)
	b := e.Do("GET", "/audit/v1/service_instances", nil, bearer(tok)).JSON()["content"].([]any)
	if cmp.Equal(a, b) {
		t.Error("two tenants list the same instances")
	}
}

// TestAuditExportBackgroundWorker runs Platform.Run: a new job wakes the
// worker at once; a job left ACTIVE by a process that died is taken over by
// the periodic poll once its lease lapses (a restart during a job).
func TestAuditExportBackgroundWorker(t *testing.T) {
	e := newExportEnv(t)
	e.RunWorkers()
	jobID := e.start(t, dayAround(e.Env))
	e.WaitExport(func() bool {
		st, err := e.Store.GetExportJob(t.Context(), e.tenant.ID, jobID)
		return err == nil && st.State != audit.JobActive
	})
	if job := e.get(t, jobID); job["state"] != audit.JobSucceeded || job["location"] == nil {
		t.Fatalf("job = %v", job)
	}

	// A job claimed by a process that then died: its lease still runs.
	now := e.Clock.Now()
	dead := audit.ExportJob{ID: identity.NewGUID(), TenantID: e.tenant.ID, State: audit.JobActive, StartedAt: now,
		Request:  audit.ExportRequest{From: latchkeytest.Start.Add(-time.Hour), To: now},
		Attempts: 1, LeaseOwner: "dead-process", LeaseUntil: now.Add(audit.DefaultLeaseFor)}
	if err := e.Store.CreateExportJob(t.Context(), dead); err != nil {
		t.Fatal(err)
	}
	e.Platform.Exports.Poke()
	e.WaitExport(func() bool { return true }) // one pass: the lease holds
	if st, _ := e.Store.GetExportJob(t.Context(), e.tenant.ID, dead.ID); st.State != audit.JobActive || st.LeaseOwner != "dead-process" {
		t.Fatalf("job taken before its lease lapsed: %+v", st)
	}
	// The poll timer (audit.DefaultPollEvery) fires after the lease lapsed.
	e.Clock.Advance(audit.DefaultLeaseFor + audit.DefaultPollEvery)
	e.WaitExport(func() bool {
		st, _ := e.Store.GetExportJob(t.Context(), e.tenant.ID, dead.ID)
		return st.State != audit.JobActive
	})
	st, _ := e.Store.GetExportJob(t.Context(), e.tenant.ID, dead.ID)
	if st.State != audit.JobSucceeded || st.Attempts != 2 || st.Summary.Count == 0 {
		t.Fatalf("taken-over job = %+v, want SUCCEEDED on attempt 2", st)
	}
	if rec := lastAuditWhere(t, e.Env, e.tenant.ID, "export.complete"); rec.Meta["jobId"] != dead.ID || rec.Meta["attempt"] != float64(2) {
		t.Errorf("completion record = %+v", rec)
	}
}

func TestAuditExportGivesUpAfterMaxAttempts(t *testing.T) {
	e := newExportEnv(t)
	now := e.Clock.Now()
	job := audit.ExportJob{ID: identity.NewGUID(), TenantID: e.tenant.ID, State: audit.JobActive, StartedAt: now,
		Request:  audit.ExportRequest{From: now.Add(-time.Hour), To: now},
		Attempts: audit.MaxExportAttempts, LeaseOwner: "crashed-again", LeaseUntil: now}
	if err := e.Store.CreateExportJob(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	if n := e.RunExports(); n != 1 {
		t.Fatalf("RunExports = %d, want 1", n)
	}
	got := e.get(t, job.ID)
	if got["state"] != audit.JobFailed || got["location"] != nil || got["error"] == nil || got["endedAt"] == nil {
		t.Errorf("job = %v, want FAILED with an error", got)
	}
	rec := lastAuditWhere(t, e.Env, e.tenant.ID, "export.fail")
	if rec.Status != audit.StatusFailed || rec.Meta["errorMessage"] == nil {
		t.Errorf("failure record = %+v", rec)
	}
	if _, err := e.Store.GetExportJob(t.Context(), e.Root.ID, job.ID); !fault.Is(fault.NotFound, err) {
		t.Errorf("job visible from another tenant: %v", err)
	}
}

func FuzzAuditExportRequest(f *testing.F) {
	for _, s := range []string{
		`{"from":"2026-01-01T00:00:00Z","to":"2026-06-01T00:00:00Z"}`,
		`{"from":"2026-01-01 00:00:00.000000","to":"2026-06-01 00:00:00","status":"failed","source":"latchkey-audit"}`,
		`{"from":"2026-06-01T00:00:00Z","to":"2026-01-01T00:00:00Z"}`,
		`{"from":1,"to":null,"actorId":["x"]}`, `[]`, `null`, `{"from":"\u0000"}`, ``,
	} {
		f.Add([]byte(s))
	}
	e := latchkeytest.New(f)
	tn := e.NewTenant("Fuzz")
	tok := e.AuditClient(tn, identity.RoleTenantAdmin, identity.ScopeAuditExport)
	// Env.Do reports through the F, which the fuzz function must not use.
	client := e.Server.Client()
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", e.Server.URL+exportsPath, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 202 && resp.StatusCode != 400 && resp.StatusCode != 413 {
			t.Fatalf("status %d for %q: %s", resp.StatusCode, body, b)
		}
	})
}

// TestAuditExportTraceIDs checks that every exported record has a trace
// id, also those that background work wrote: a finished export job's
// export.complete carries the trace id of the request that started the job,
// and the archive clean-up's export.archive.delete a fresh one.
func TestAuditExportTraceIDs(t *testing.T) {
	e := newExportEnv(t)
	clientID, secret := e.OAuthClient(e.tenant, identity.RoleTenantAdmin, identity.ScopeAuditExport)
	r := e.Do("POST", exportsPath, dayAround(e.Env), bearer(e.token))
	if r.Status != http.StatusAccepted {
		t.Fatalf("start export: %d %s", r.Status, r.Body)
	}
	first, startTrace := r.JSON()["jobId"].(string), r.Header.Get("X-Trace-Id")
	if startTrace == "" {
		t.Fatal("no X-Trace-Id on the start request")
	}
	e.download(t, first)
	e.Clock.Advance(audit.ArchiveTTL + time.Second)
	if n, err := e.Platform.Exports.CleanupExpired(t.Context()); err != nil || n != 1 {
		t.Fatalf("CleanupExpired = %d, %v; want 1", n, err)
	}
	e.token = e.AccessToken(clientID, secret) // the first token expired
	_, dl := e.download(t, e.start(t, dayAround(e.Env)))
	recs := readLogs(t, dl.archive)
	byAction := map[string][]string{}
	for _, rec := range recs {
		trace, _ := rec["traceID"].(string)
		if trace == "" {
			t.Errorf("record without traceID: %v", rec)
		}
		if meta, _ := rec["meta"].(map[string]any); meta["jobId"] == first {
			byAction[rec["action"].(string)] = append(byAction[rec["action"].(string)], trace)
		}
	}
	if got := byAction["export.complete"]; len(got) != 1 || got[0] != startTrace {
		t.Errorf("export.complete trace ids %v, want [%s] (the starting request's)", got, startTrace)
	}
	if got := byAction["export.archive.delete"]; len(got) != 1 || got[0] == startTrace {
		t.Errorf("export.archive.delete trace ids %v, want one fresh id", got)
	}
}
