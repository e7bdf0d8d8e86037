package identity_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/latchkeytest"
)

func rootAdmin(e *latchkeytest.Env) identity.Principal {
	return identity.Principal{Kind: identity.KindUser, TenantID: e.Root.ID, TenantCode: e.Root.Code, Roles: []string{identity.RoleTenantAdmin}}
}

// runImport imports text (NDJSON) and returns every result and the summary.
func runImport(t *testing.T, e *latchkeytest.Env, tenantID, text string, opts identity.ImportOptions) ([]identity.ImportResult, identity.ImportSummary, [][]identity.ImportResult) {
	t.Helper()
	lines, err := identity.SplitImport([]byte(text))
	if err != nil {
		t.Fatalf("SplitImport: %v", err)
	}
	var all []identity.ImportResult
	var batches [][]identity.ImportResult
	sum, err := e.Platform.Identity.ImportUsers(t.Context(), rootAdmin(e), tenantID, lines, opts, func(r []identity.ImportResult) error {
		all = append(all, r...)
		batches = append(batches, r)
		return nil
	})
	if err != nil {
		t.Fatalf("ImportUsers: %v", err)
	}
	return all, sum, batches
}

func ndjson(lines ...any) string {
	var b strings.Builder
	for _, l := range lines {
		if s, ok := l.(string); ok {
			b.WriteString(s)
		} else {
			j, _ := json.Marshal(l)
			b.Write(j)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

type line = map[string]any

// TestImportLines: each line is created, unchanged, skipped, updated or
// failed with its reason, numbered from 1, never stopping the others; a
// rerun is idempotent; imported users log in with their old passwords.
func TestImportLines(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	text := ndjson(
		line{"name": "ann", "externalId": "kc-1", "email": "ann@example.com", "emailVerified": true, "passwordHash": kratosBcrypt},
		line{"name": "bob", "passwordHash": kratosPBKDF2, "roles": []string{"application-owner"}},
		line{"name": "cid", "password": "cid-password-1"},
		line{"name": "dee"},
		line{"name": "eve", "roles": []string{"tenant-admin"}},
		line{"name": "fay", "passwordHash": "{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="},
		line{"name": "gus", "passwordHash": "$2a$15$GRvRO2nrpYTEuPQX6AieaOlZ4.7nMGsXpt.QWMev1zrP86JNspZbO"},
		line{"name": "hal", "passwordHash": "$firebase-scrypt$k=nokey$42xEC+ixf3L2lw==$lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="},
		line{"name": "ivy", "passwordHash": "hunter2"},
		`{"name": `,
		line{"name": "ann2", "externalId": "kc-1"},
		line{"name": "jo", "email": "not-an-address"},
	)
	res, sum, _ := runImport(t, e, tn.ID, text, identity.ImportOptions{})
	type brief struct {
		Line                int
		Status, Code, Field string
	}
	var got []brief
	for _, r := range res {
		b := brief{Line: r.Line, Status: r.Status}
		if r.Error != nil {
			b.Code, b.Field = r.Error.Code, r.Error.Field
		}
		if (r.Status == identity.ImportFailed) != (r.ID == "") {
			t.Errorf("line %d: status %s with id %q", r.Line, r.Status, r.ID)
		}
		got = append(got, b)
	}
	want := []brief{{1, "created", "", ""}, {2, "created", "", ""}, {3, "created", "", ""}, {4, "created", "", ""},
		{5, "failed", "role_not_importable", "roles"}, {6, "failed", "weak_hash", "passwordHash"}, {7, "failed", "hash_cost_exceeded", "passwordHash"},
		{8, "failed", "hash_key_unknown", "passwordHash"}, {9, "failed", "unsupported_hash", "passwordHash"}, {10, "failed", "invalid", ""},
		{11, "failed", "duplicate_in_request", ""}, {12, "failed", "invalid", "email"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	if d := cmp.Diff(identity.ImportSummary{Created: 4, Failed: 8}, sum); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	ctx := t.Context()
	ann, err := e.Store.GetUserByExternalID(ctx, tn.ID, "kc-1")
	if err != nil || ann.Name != "ann" || ann.Email != "ann@example.com" || !ann.EmailVerified || ann.PasswordScheme != identity.SchemeBcrypt {
		t.Errorf("ann: %+v, %v", ann, err)
	}
	for name, pw := range map[string]string{"ann": "test", "bob": "test", "cid": "cid-password-1"} {
		if _, err := e.Platform.Identity.Login(ctx, identity.LoginRequest{Name: name, Password: pw, AuthDomain: tn.Code}); err != nil {
			t.Errorf("%s logs in: %v", name, err)
		}
	}
	if _, err := e.Platform.Identity.Login(ctx, identity.LoginRequest{Name: "dee", Password: "anything-1", AuthDomain: tn.Code}); !fault.Is(fault.Unauthenticated, err) {
		t.Errorf("dee has no password: %v", err)
	}
	// A rerun changes nothing; ann was rehashed since, and her imported
	// hash is never put back, even with onConflict=update.
	for _, oc := range []string{"skip", "update"} {
		res, sum, _ = runImport(t, e, tn.ID, ndjson(
			line{"name": "ann", "externalId": "kc-1", "email": "ann@example.com", "emailVerified": true, "passwordHash": kratosBcrypt},
			line{"name": "dee"}), identity.ImportOptions{OnConflict: oc})
		if sum != (identity.ImportSummary{Unchanged: 2}) {
			t.Errorf("rerun onConflict=%s: %+v %+v", oc, sum, res)
		}
	}
	if got, _ := e.Store.GetUserByExternalID(ctx, tn.ID, "kc-1"); got.PasswordScheme != identity.SchemeArgon2id {
		t.Errorf("ann's rehashed password was put back: %s", got.PasswordScheme)
	}
	changed := ndjson(line{"name": "dee", "displayName": "Dee D"})
	for _, tc := range []struct {
		oc     string
		status string
	}{{"skip", "skipped"}, {"fail", "failed"}, {"update", "updated"}} {
		res, _, _ = runImport(t, e, tn.ID, changed, identity.ImportOptions{OnConflict: tc.oc})
		if res[0].Status != tc.status {
			t.Errorf("onConflict=%s: %+v", tc.oc, res[0])
		}
	}
	if got, _ := e.Store.GetUserByName(ctx, tn.ID, "dee"); got.DisplayName != "Dee D" {
		t.Errorf("update did not apply: %+v", got)
	}
}

// TestImportBatchesAndAudit: lines commit 500 per transaction, each batch
// handed out after its commit, with a user.import record per user written
// (its scheme, never its hash) and one user.import.batch per request; a
// dry run writes nothing.
func TestImportBatchesAndAudit(t *testing.T) {
	e := latchkeytest.New(t)
	tn := e.NewTenant("Acme")
	var b strings.Builder
	for i := range 1201 {
		fmt.Fprintf(&b, `{"name":"u%04d","externalId":"x-%d","passwordHash":%q}`+"\n", i, i, kratosPBKDF2)
	}
	res, sum, _ := runImport(t, e, tn.ID, b.String(), identity.ImportOptions{DryRun: true})
	if sum.Created != 1201 || len(res) != 1201 {
		for _, r := range res {
			if r.Error != nil {
				t.Fatalf("dry run: %+v %+v", sum, *r.Error)
			}
		}
		t.Fatalf("dry run: %+v", sum)
	}
	if _, total, _ := e.Store.ListUsers(t.Context(), tn.ID, identity.ListQuery{Limit: 1}); total != 1 {
		t.Fatalf("a dry run wrote users: %d", total)
	}
	_, sum, batches := runImport(t, e, tn.ID, b.String(), identity.ImportOptions{})
	if sum.Created != 1201 || len(batches) != 3 || len(batches[0]) != 500 || len(batches[2]) != 201 {
		t.Fatalf("summary %+v, %d batches", sum, len(batches))
	}
	recs, err := e.Store.ListAuditRecords(t.Context(), tn.ID, 0, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	imports, batchRecs := 0, 0
	for _, r := range recs {
		switch r.Action {
		case identity.ActionUserImport:
			imports++
			if r.Meta["scheme"] != identity.SchemePBKDF2SHA256 {
				t.Errorf("record meta %v", r.Meta)
			}
		case identity.ActionUserImportBatch:
			batchRecs++
		}
		if raw, _ := json.Marshal(r.Meta); bytes.Contains(raw, []byte("QJxzfvdb")) {
			t.Fatalf("an audit record holds the hash: %s", raw)
		}
	}
	if imports != 1201 || batchRecs != 2 {
		t.Errorf("%d user.import and %d user.import.batch records, want 1201 and 2", imports, batchRecs)
	}
}

// TestImportLimits: over each limit the request is refused whole with
// fault.TooLarge.
func TestImportLimits(t *testing.T) {
	many := strings.Repeat(`{"name":"x"}`+"\n", identity.MaxImportLines+1)
	long := `{"name":"` + strings.Repeat("a", identity.MaxImportLineBytes) + `"}`
	pw := strings.Repeat(`{"name":"p","password":"password-123"}`+"\n", identity.MaxImportPasswordLines+1)
	big := strings.Repeat(`{"name":"`+strings.Repeat("b", 1000)+`"}`+"\n", identity.MaxImportBytes/1000+1)
	for name, body := range map[string]string{"lines": many, "line bytes": long, "passwords": pw, "bytes": big} {
		if _, err := identity.SplitImport([]byte(body)); !fault.Is(fault.TooLarge, err) {
			t.Errorf("%s: %v, want TooLarge", name, err)
		}
	}
	if lines, err := identity.SplitImport([]byte(strings.Repeat(`{"name":"x"}`+"\n", identity.MaxImportLines))); err != nil || len(lines) != identity.MaxImportLines {
		t.Errorf("at the limit: %d lines, %v", len(lines), err)
	}
}
