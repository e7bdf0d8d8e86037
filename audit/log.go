package audit

import (
	"context"
	"time"
)

// ServiceInstance is one provisioned service of a tenant: one per service
// kind (Source). Its id is the resourceid of the records it writes.
type ServiceInstance struct {
	ID          string    `json:"id"`
	TenantID    string    `json:"-"`
	Name        string    `json:"name"`
	ServiceType string    `json:"serviceType"`
	Source      string    `json:"source"`
	CreatedAt   time.Time `json:"createdAt"`
}

// LogStore keeps audit records and service instances. Any failure is
// fault.Internal unless stated.
type LogStore interface {
	// AppendAuditRecords stores records atomically (all or none). For each
	// record, in order, it assigns the next Seq of its tenant, sets PrevHash
	// to the tenant's previous record's Hash and Hash to ChainHash(PrevHash,
	// record), inside one transaction, so the chain has no gap or fork even
	// with several writers. The records passed in are updated in place.
	AppendAuditRecords(ctx context.Context, recs []*Record) error
	// ListAuditRecords returns up to limit records of a tenant with Seq >
	// afterSeq, in Seq order. A store that keeps records as JSON returns
	// numbers in Meta as json.Number (the digits that were hashed), one
	// that keeps values returns them as appended; ScanAuditRecords
	// likewise.
	ListAuditRecords(ctx context.Context, tenantID string, afterSeq int64, limit int) ([]Record, error)

	// EnsureServiceInstance returns the tenant's instance of source, creating
	// it with candidate's fields when there is none (idempotent, race-free).
	EnsureServiceInstance(ctx context.Context, candidate ServiceInstance) (ServiceInstance, error)
	// ListServiceInstances returns a page of a tenant's instances ordered by
	// creation, and the total count.
	ListServiceInstances(ctx context.Context, tenantID string, offset, limit int) ([]ServiceInstance, int, error)
}
