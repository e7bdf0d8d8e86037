package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// registerImport registers the bulk import of users with their password
// hashes (API-cli.md): NDJSON in, NDJSON results out, flushed per commit.
func (s *Server) registerImport() {
	o := s.platformJWT()
	// One byte over the limit, so that a body of exactly the limit is
	// read whole and a larger one is refused by SplitImport (or by
	// Content-Length before anything is read).
	o.limit = identity.MaxImportBytes + 1
	s.handle("POST", s.opts.BaseURL+"/admin/tenants/{tenantId}/users/import", o, s.importUsers)
}

func (s *Server) importUsers(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	if err := s.p.Identity.CheckImport(r.Context(), principal(r), id); err != nil {
		return err
	}
	if r.ContentLength > identity.MaxImportBytes {
		return fault.E(fault.TooLarge, fmt.Sprintf("an import is at most %d bytes", identity.MaxImportBytes))
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-ndjson" && mt != "application/jsonl" {
		return fault.E(fault.Invalid, "Content-Type must be application/x-ndjson")
	}
	q := r.URL.Query()
	opts := identity.ImportOptions{OnConflict: q.Get("onConflict")}
	if v := q.Get("dryRun"); v != "" {
		if opts.DryRun, err = strconv.ParseBool(v); err != nil {
			return fault.E(fault.Invalid, fault.Field("dryRun"), "dryRun must be true or false")
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return fault.E(fault.TooLarge, fmt.Sprintf("an import is at most %d bytes", identity.MaxImportBytes), err)
	}
	lines, err := identity.SplitImport(body)
	if err != nil {
		return err
	}
	// Nothing is answered before the first commit, so that a refusal of
	// the whole request (a tenant, a role, onConflict) keeps its status.
	started := false
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	emit := func(res []identity.ImportResult) error {
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		for _, r := range res {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	sum, err := s.p.Identity.ImportUsers(r.Context(), principal(r), id, lines, opts, emit)
	if err != nil {
		if started {
			// The stream ends without a summary: every line with a result
			// is committed, the others may be sent again.
			s.log.Warn("import: stopped after a commit", "err", err)
			return nil
		}
		return err
	}
	return enc.Encode(map[string]any{"summary": sum})
}
