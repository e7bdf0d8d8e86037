package httpapi

import (
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// archivesPath is the route of signed archive downloads under {audit_url}.
const archivesPath = "/v1/archives"

// Paging defaults of GET {audit_url}/v1/service_instances.
const (
	defaultInstancePage = 0
	defaultInstanceSize = audit.DefaultPageSize
)

func (s *Server) registerAudit() {
	base := s.opts.AuditURL
	auth := s.oauthToken(styleProblem, identity.ScopeAuditExport)
	s.handle("GET", base+"/v1/service_instances", auth, s.listServiceInstances)
	s.handle("POST", base+"/v1/audit-log-exports", auth.creating(), s.startExport)
	s.handle("GET", base+"/v1/audit-log-exports/{jobId}", auth, s.getExport)
	s.handle("GET", base+"/v1/signing-keys", auth, s.listSigningKeys)
	s.handle("GET", base+archivesPath+"/{jobId}", routeOpts{style: styleProblem, name: "signed-url"}, s.downloadArchive)
	s.handle("GET", base+archivesPath+"/{jobId}/integrity", routeOpts{style: styleProblem, name: "signed-url"}, s.downloadIntegrity)
}

func (s *Server) listServiceInstances(w http.ResponseWriter, r *http.Request) error {
	page, err := queryInt(r, "page", defaultInstancePage)
	if err != nil {
		return err
	}
	size, err := queryInt(r, "size", defaultInstanceSize)
	if err != nil {
		return err
	}
	res, err := s.p.ListServiceInstances(r.Context(), principal(r), page, size)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// exportJSON is an export job on the wire.
type exportJSON struct {
	JobID     string     `json:"jobId"`
	State     string     `json:"state"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt"`
	Location  *string    `json:"location"`
	// DigestLocation is the signed URL of the integrity file (hash chain
	// and signed digest), beside the spec's location; null with it.
	DigestLocation *string `json:"digestLocation"`
	Error          string  `json:"error,omitempty"`
	// RecordsWritten is the job's progress (API-cli.md): records written
	// so far while ACTIVE (as of the last lease renewal), the archive's
	// count once SUCCEEDED.
	RecordsWritten int64 `json:"recordsWritten"`
}

func (s *Server) startExport(w http.ResponseWriter, r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return fault.E(fault.Invalid, "Content-Type must be application/json")
		}
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if err := checkDepth(body, MaxJSONDepth); err != nil {
		return err
	}
	job, err := s.p.StartExport(r.Context(), principal(r), body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, struct {
		JobID     string    `json:"jobId"`
		State     string    `json:"state"`
		StartedAt time.Time `json:"startedAt"`
	}{job.ID, job.State, job.StartedAt})
	return nil
}

func (s *Server) getExport(w http.ResponseWriter, r *http.Request) error {
	st, err := s.p.GetExport(r.Context(), principal(r), r.PathValue("jobId"), s.opts.AuditURL+archivesPath)
	if err != nil {
		return err
	}
	out := exportJSON{JobID: st.Job.ID, State: st.Job.State, StartedAt: st.Job.StartedAt, EndedAt: st.Job.EndedAt, Error: st.Job.Error,
		RecordsWritten: st.Job.RecordsWritten}
	if st.Location != "" {
		loc, digest := s.opts.PublicURL+st.Location, s.opts.PublicURL+st.DigestLocation
		out.Location, out.DigestLocation = &loc, &digest
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) downloadArchive(w http.ResponseWriter, r *http.Request) error {
	a, err := s.p.OpenArchive(r.Context(), r.PathValue("jobId"), r.URL.Query())
	if err != nil {
		return err
	}
	serveDownload(w, r, a, "audit-logs-"+a.JobID+".zip")
	return nil
}

// downloadIntegrity serves the integrity file of digestLocation.
func (s *Server) downloadIntegrity(w http.ResponseWriter, r *http.Request) error {
	a, err := s.p.OpenIntegrity(r.Context(), r.PathValue("jobId"), r.URL.Query())
	if err != nil {
		return err
	}
	serveDownload(w, r, a, "audit-logs-"+a.JobID+".integrity.zip")
	return nil
}

// serveDownload serves an opened ZIP file and closes it.
func serveDownload(w http.ResponseWriter, r *http.Request, a *audit.Archive, filename string) {
	defer a.Close()
	w = &problemOnError{ResponseWriter: w, r: r}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	w.Header().Set("Cache-Control", "no-store")
	// ServeContent handles Range and HEAD; the body is the stored file.
	http.ServeContent(w, r, "", a.ModTime, a.ReadSeekCloser)
}

// problemOnError turns the error answers http.ServeContent writes itself
// (412 for a failed If-Unmodified-Since, 416 for an unsatisfiable Range,
// both text/plain) into the audit area's problem body; what ServeContent
// writes after such a status is dropped.
type problemOnError struct {
	http.ResponseWriter
	r      *http.Request
	failed bool
}

func (p *problemOnError) WriteHeader(code int) {
	if code < http.StatusBadRequest {
		p.ResponseWriter.WriteHeader(code)
		return
	}
	p.failed = true
	h := p.Header()
	h.Del("Content-Disposition")
	h.Del("X-Content-Type-Options")
	detail := "the request cannot be served"
	switch code {
	case http.StatusPreconditionFailed:
		detail = "the archive has been modified since If-Unmodified-Since"
	case http.StatusRequestedRangeNotSatisfiable:
		detail = "no requested range overlaps the archive"
	}
	writeJSON(p.ResponseWriter, code, map[string]any{"title": http.StatusText(code), "status": code, "detail": detail, "traceId": audit.TraceID(p.r.Context())})
}

func (p *problemOnError) Write(b []byte) (int, error) {
	if p.failed {
		return len(b), nil
	}
	return p.ResponseWriter.Write(b)
}

// listSigningKeys answers GET {audit_url}/v1/signing-keys: every version of
// the platform's signing keys, trimmed ones included (public halves), so
// that archives whose digests were signed by a key no longer in the JWKS
// still verify.
func (s *Server) listSigningKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.p.Vault.PublicSigningKeys(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
	return nil
}
