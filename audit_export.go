package latchkey

import (
	"context"
	"net/url"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/identity"
)

// auditCaller maps an authenticated principal to the export service's view
// of it. Only OAuth access tokens (KindClient with the API audience, as the
// HTTP layer checks) count as AccessToken.
func auditCaller(p identity.Principal) audit.Caller {
	return audit.Caller{TenantID: p.TenantID, AccessToken: p.Kind == identity.KindClient, Roles: p.Roles, Scopes: p.Scopes}
}

// ListServiceInstances lists the caller's tenant's service instances; see
// audit.Exporter.ListServiceInstances.
func (p *Platform) ListServiceInstances(ctx context.Context, by identity.Principal, page, size int) (audit.InstancePage, error) {
	return p.Exports.ListServiceInstances(ctx, auditCaller(by), page, size)
}

// StartExport queues an audit-log export; see audit.Exporter.StartExport.
// This process's worker is poked at once; with a Notifier store, so are the
// other processes' (whichever claims the job first runs it).
func (p *Platform) StartExport(ctx context.Context, by identity.Principal, body []byte) (audit.ExportJob, error) {
	job, err := p.Exports.StartExport(ctx, auditCaller(by), body)
	if err != nil {
		return job, err
	}
	if n, ok := p.cfg.Store.(Notifier); ok {
		if err := n.Notify(ctx, exportChannel); err != nil {
			// Only a hint: the other workers' poll finds the job anyway.
			p.log.Warn("latchkey: cannot notify other processes of an export job", "job", job.ID, "err", err)
		}
	}
	return job, nil
}

// GetExport returns an export job and, once it has succeeded, the signed
// download locations of its archive and integrity file under archivePath;
// see audit.Exporter.GetExport.
func (p *Platform) GetExport(ctx context.Context, by identity.Principal, jobID, archivePath string) (audit.ExportStatus, error) {
	return p.Exports.GetExport(ctx, auditCaller(by), jobID, archivePath)
}

// OpenArchive opens an archive for a signed download link; see
// audit.Exporter.OpenArchive.
func (p *Platform) OpenArchive(ctx context.Context, jobID string, query url.Values) (*audit.Archive, error) {
	return p.Exports.OpenArchive(ctx, jobID, query)
}

// OpenIntegrity opens an archive's integrity file (hash chain and signed
// digest) for a signed download link; see audit.Exporter.OpenIntegrity.
func (p *Platform) OpenIntegrity(ctx context.Context, jobID string, query url.Values) (*audit.Archive, error) {
	return p.Exports.OpenIntegrity(ctx, jobID, query)
}
