package authenticator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/internal/b64"

	"github.com/go-webauthn/webauthn/metadata"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Audit actions of area C (source latchkey-authenticator).
const (
	ActionList              = "authenticator.list"
	ActionImport            = "authenticator.import"
	ActionRead              = "authenticator.read"
	ActionUpdate            = "authenticator.update"
	ActionDelete            = "authenticator.delete"
	ActionAttestationOption = "authenticator.attestation.options"
	ActionRegister          = "authenticator.attestation.result"
	ActionAssertionOption   = "authenticator.assertion.options"
	ActionAssert            = "authenticator.assertion.result"
)

// Paging of authenticator lists (spec limits: pageIndex >= 0, pageSize
// 1..20).
const (
	DefaultPageSize = 20
	MaxPageSize     = 20
	// MaxFriendlyName bounds friendlyName, in characters.
	MaxFriendlyName = 256
	// MaxAttestationBytes bounds each decoded attestation field.
	MaxAttestationBytes = 64 << 10
	// DefaultChallengeTTL is how long an issued challenge may be answered.
	DefaultChallengeTTL = 5 * time.Minute
)

// Directory is the read side of identity the service needs: identity.Store
// implements it.
type Directory interface {
	GetTenantByCode(ctx context.Context, code string) (identity.Tenant, error)
	GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error)
	GetUserByName(ctx context.Context, tenantID, name string) (identity.User, error)
}

// Emitter appends native events to a tenant's event log
// (events.Service implements it).
type Emitter interface {
	EmitNative(ctx context.Context, tenantID string, raw json.RawMessage) (events.Event, error)
}

// Config configures a Service. Store, Directory, Audit and Clock are
// required.
type Config struct {
	Store     Store
	Directory Directory
	Audit     audit.Sink
	Clock     clock.Clock
	Logger    *slog.Logger
	// Events, when set, receives native event 301 (registered), 302
	// (state changed) and 303 (deleted) for every mutation.
	Events Emitter
	// Metadata is the FIDO Metadata Service the trusted attestation
	// policy checks against (see LoadMetadata); nil refuses imports of
	// tenants whose policy is trusted.
	Metadata metadata.Provider
	// ChallengeTTL is how long a WebAuthn challenge (and a passkey flow)
	// may be answered; default DefaultChallengeTTL.
	ChallengeTTL time.Duration
	// Logins, when set, lets users sign in with their passkeys
	// (PasskeyLogin); without it passkey sign-in is fault.Unavailable.
	Logins Logins
	// DecoyKey derives the credential ids the sign-in options show for
	// names no user has. Every process behind one load balancer needs the
	// same key, or comparing their answers would tell unknown names
	// apart (latchkey.New derives it from the master key); empty means a
	// random key for this process.
	DecoyKey []byte
}

// Service manages the FIDO authenticators of each tenant's users.
//
// Who may call it: an API key of the tenant named by the tenant code
// allowed the authenticator area (httpapi checks the area; the service
// checks the tenant, so a key of another tenant is fault.Unauthenticated
// with the spec's message).
type Service struct {
	cfg   Config
	log   *slog.Logger
	batch *batcher // nil unless the Store is a BatchStore
	// builder is set when the audit record of a creation can be written in
	// the creation's transaction (an AuditedBatchStore and an
	// audit.Builder sink).
	builder audit.Builder
	// decoyKey derives the credential ids shown for unknown names in
	// passkey sign-in options (see BeginPasskeyLogin).
	decoyKey []byte
}

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ChallengeTTL <= 0 {
		cfg.ChallengeTTL = DefaultChallengeTTL
	}
	s := &Service{cfg: cfg, log: cfg.Logger, decoyKey: cfg.DecoyKey}
	if len(s.decoyKey) == 0 {
		s.decoyKey = newDecoyKey()
	}
	if bs, ok := cfg.Store.(BatchStore); ok {
		s.batch = &batcher{st: bs}
		if abs, ok := cfg.Store.(AuditedBatchStore); ok {
			if b, ok := cfg.Audit.(audit.Builder); ok {
				s.batch.audited, s.builder = abs, b
			}
		}
	}
	return s
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

// Ref names a user in a request path: the tenant code, the user id and
// the Object-Id-Format the id is written in ("" means base64).
type Ref struct {
	TenantCode string
	UserID     string
	Format     string
}

// target is a resolved Ref.
type target struct {
	tenant identity.Tenant
	user   identity.User
}

// record writes the audit record of an action under the resolved tenant,
// else the caller's.
func (s *Service) record(ctx context.Context, p identity.Principal, t *target, action string, err error, meta map[string]any) error {
	tenantID := p.TenantID
	if t != nil && t.tenant.ID != "" {
		tenantID = t.tenant.ID
	}
	if err != nil && fault.KindOf(err) == fault.Internal {
		// The spec's 500 message; the cause stays in the server log.
		s.log.LogAttrs(ctx, slog.LevelError, "authenticator action failed", slog.String("action", action), slog.Any("err", err))
		err = fault.E(fault.Internal, MsgServiceException, err)
	}
	if tenantID == "" {
		return err
	}
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourceAuthenticator, Action: action, Err: err, Meta: meta})
}

// resolve checks a Ref and the caller: empty parts and a bad format are
// fault.Invalid, an unknown tenant code fault.NotFound, a caller of another
// tenant fault.Unauthenticated, a malformed user id fault.Invalid with
// badUserID, an unknown user fault.NotFound.
func (s *Service) resolve(ctx context.Context, p identity.Principal, ref Ref, badUserID string) (target, error) {
	switch {
	case strings.TrimSpace(ref.TenantCode) == "":
		return target{}, fault.E(fault.Invalid, MsgTenantCodeEmpty)
	case strings.TrimSpace(ref.UserID) == "":
		return target{}, fault.E(fault.Invalid, MsgUserIDEmpty)
	case ref.Format != "" && ref.Format != identity.FormatBase64 && ref.Format != identity.FormatHex:
		return target{}, fault.E(fault.Invalid, MsgObjectIDFormat)
	}
	t, err := s.cfg.Directory.GetTenantByCode(ctx, ref.TenantCode)
	if fault.Is(fault.NotFound, err) {
		return target{}, fault.E(fault.NotFound, MsgTenantNotFound)
	} else if err != nil {
		return target{}, err
	}
	if p.TenantID != t.ID {
		return target{}, fault.E(fault.Unauthenticated, MsgNoPermission)
	}
	uid, err := identity.ParseObjectID(ref.UserID, ref.Format)
	if err != nil {
		return target{tenant: t}, fault.E(fault.Invalid, badUserID)
	}
	u, err := s.cfg.Directory.GetUser(ctx, t.ID, uid)
	if fault.Is(fault.NotFound, err) {
		return target{tenant: t}, fault.E(fault.NotFound, MsgUserNotFound)
	} else if err != nil {
		return target{tenant: t}, err
	}
	return target{tenant: t, user: u}, nil
}

// one loads the user's authenticator id: an empty id or one that is not
// base64url is fault.Invalid, one of another user fault.NotFound.
func (s *Service) one(ctx context.Context, t target, id string) (Authenticator, error) {
	if strings.TrimSpace(id) == "" {
		return Authenticator{}, fault.E(fault.Invalid, MsgAuthenticatorIDEmpty)
	}
	if !isBase64URL(id) {
		return Authenticator{}, fault.E(fault.Invalid, MsgAuthenticatorIDB64)
	}
	a, err := s.cfg.Store.GetAuthenticator(ctx, t.tenant.ID, id)
	if fault.Is(fault.NotFound, err) || (err == nil && a.UserID != t.user.ID) {
		return Authenticator{}, fault.E(fault.NotFound, MsgAuthenticatorMissing)
	}
	return a, err
}

// isBase64URL reports whether id is unpadded base64url text of at least
// one byte, in its canonical form (so one credential has one id).
func isBase64URL(id string) bool {
	b, err := b64.URL(id)
	return err == nil && len(b) > 0
}

// Page is one page of a user's authenticators.
type Page struct {
	Items      []Authenticator
	TotalItems int
	PageIndex  int
	PageSize   int
	TotalPages int
}

// List returns page pageIndex (from 0) of pageSize authenticators of the
// user. pageSize 0 means DefaultPageSize.
func (s *Service) List(ctx context.Context, p identity.Principal, ref Ref, pageIndex, pageSize int) (Page, error) {
	meta := map[string]any{"user": map[string]any{"id": ref.UserID}, "pageIndex": pageIndex, "pageSize": pageSize}
	t, err := s.resolve(ctx, p, ref, MsgUserIDFormat)
	if err != nil {
		return Page{}, s.record(ctx, p, &t, ActionList, err, meta)
	}
	if pageIndex < 0 {
		return Page{}, s.record(ctx, p, &t, ActionList, fault.E(fault.Invalid, MsgPageIndex), meta)
	}
	if pageSize == 0 {
		pageSize = DefaultPageSize
	}
	if pageSize < 1 || pageSize > MaxPageSize {
		return Page{}, s.record(ctx, p, &t, ActionList, fault.E(fault.Invalid, MsgPageSize), meta)
	}
	const maxOffset = 1 << 40
	offset := pageIndex * pageSize
	if pageIndex > maxOffset/MaxPageSize {
		offset = maxOffset
	}
	items, total, err := s.cfg.Store.ListAuthenticators(ctx, t.tenant.ID, t.user.ID, offset, pageSize)
	if err != nil {
		return Page{}, s.record(ctx, p, &t, ActionList, err, meta)
	}
	if items == nil {
		items = []Authenticator{}
	}
	pg := Page{Items: items, TotalItems: total, PageIndex: pageIndex, PageSize: pageSize, TotalPages: (total + pageSize - 1) / pageSize}
	meta["totalItems"] = total
	return pg, s.record(ctx, p, &t, ActionList, nil, meta)
}

// Get returns one authenticator of the user.
func (s *Service) Get(ctx context.Context, p identity.Principal, ref Ref, id string) (Authenticator, error) {
	meta := map[string]any{"user": map[string]any{"id": ref.UserID}, "authenticator": map[string]any{"id": id}}
	t, err := s.resolve(ctx, p, ref, MsgUserIDFormat)
	if err != nil {
		return Authenticator{}, s.record(ctx, p, &t, ActionRead, err, meta)
	}
	a, err := s.one(ctx, t, id)
	return a, s.record(ctx, p, &t, ActionRead, err, meta)
}

// ImportRequest is the body of POST .../authenticators: a FIDO
// authenticator registered by an external credential management system.
// ClientDataJSON and AttestationObject are base64url text (padding
// tolerated).
type ImportRequest struct {
	Type              string
	ClientDataJSON    string
	AttestationObject string
	FriendlyName      string
	// Null is true when the body was empty or JSON null.
	Null bool
}

// Import verifies the attestation of an authenticator registered elsewhere
// and stores it for the user in state pending with provenance imported
// (rules 1 and 4). The tenant must have FIDO import enabled and the
// fido-import plan feature (fault.Forbidden otherwise); a credential id
// already in the tenant is fault.Conflict.
func (s *Service) Import(ctx context.Context, p identity.Principal, ref Ref, req ImportRequest) (Authenticator, error) {
	meta := map[string]any{"user": map[string]any{"id": ref.UserID}, "type": req.Type}
	t, err := s.resolve(ctx, p, ref, MsgUserIDFormat)
	if err != nil {
		return Authenticator{}, s.record(ctx, p, &t, ActionImport, err, meta)
	}
	a, recorded, err := s.importChecked(ctx, t, req, meta)
	return s.created(ctx, p, &t, ActionImport, a, recorded, err, meta)
}

// created finishes an import or an inline registration: unless the store
// already committed the audit record with the authenticator (recorded),
// it records the outcome; on success it emits event 301.
func (s *Service) created(ctx context.Context, p identity.Principal, t *target, action string, a Authenticator, recorded bool, err error, meta map[string]any) (Authenticator, error) {
	if !recorded {
		if err == nil {
			meta = successMeta(meta, a)
		}
		if rerr := s.record(ctx, p, t, action, err, meta); rerr != nil || err != nil {
			return Authenticator{}, rerr
		}
	} else if err != nil {
		return Authenticator{}, err
	}
	s.emit(ctx, a, "301", "", a.State)
	return a, nil
}

func (s *Service) importChecked(ctx context.Context, t target, req ImportRequest, meta map[string]any) (Authenticator, bool, error) {
	if req.Null {
		return Authenticator{}, false, fault.E(fault.Invalid, MsgAuthenticatorNull)
	}
	if req.Type != TypeFIDO {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field("type"), MsgOnlyFIDO)
	}
	st := t.tenant.Settings
	if !st.HasFeature(identity.FeatureFIDOImport) {
		return Authenticator{}, false, fault.E(fault.Forbidden, MsgPlan)
	}
	if !st.FIDOImportEnabled {
		return Authenticator{}, false, fault.E(fault.Forbidden, MsgImportDisabled)
	}
	if req.ClientDataJSON == "" {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field(fieldClientData), "The clientDataJson field is required.")
	}
	if req.AttestationObject == "" {
		return Authenticator{}, false, fault.E(fault.Invalid, fault.Field(fieldAttestation), "The attestationObject field is required.")
	}
	if err := checkFriendlyName(req.FriendlyName, false); err != nil {
		return Authenticator{}, false, err
	}
	cdj, ok := decodeB64URL(req.ClientDataJSON)
	if !ok {
		return Authenticator{}, false, fault.E(fault.Invalid, MsgClientDataB64)
	}
	att, ok := decodeB64URL(req.AttestationObject)
	if !ok {
		return Authenticator{}, false, fault.E(fault.Invalid, MsgAttestationB64)
	}
	v, err := verifyRegistration(cdj, att, st.WebAuthn, "", st.AttestationPolicy == identity.AttestationPolicyTrusted, s.cfg.Metadata)
	if err != nil {
		return Authenticator{}, false, err
	}
	return s.store(ctx, t, v, StatePending, ProvenanceImported, req.FriendlyName, ActionImport, meta)
}

// store saves a verified registration. The record of the action (with
// meta, plus the user and authenticator on success) is written in the
// creation's transaction when the store allows it; recorded then says so,
// and the caller records nothing more for this outcome.
func (s *Service) store(ctx context.Context, t target, v attested, state, provenance, name, action string, meta map[string]any) (a Authenticator, recorded bool, err error) {
	now := s.now()
	a = Authenticator{
		ID: base64.RawURLEncoding.EncodeToString(v.credentialID), TenantID: t.tenant.ID, UserID: t.user.ID,
		Type: TypeFIDO, State: state, CreatedAt: now, UpdatedAt: now,
		AAGUID: v.aaguid, FriendlyName: strings.TrimSpace(name), RPID: t.tenant.Settings.WebAuthn.RPID,
		SignCount: int64(v.signCount), COSEAlg: v.alg, Provenance: provenance, PublicKey: v.publicKey,
		AttestationFormat: v.format, AttestationType: v.attType,
	}
	inUse := func(cause error) error { return fault.E(fault.Conflict, MsgInUse, cause) }
	if s.builder != nil {
		okMeta := successMeta(meta, a)
		okRec, err1 := s.builder.Build(ctx, audit.Entry{TenantID: a.TenantID, Source: audit.SourceAuthenticator, Action: action, Meta: okMeta})
		badRec, err2 := s.builder.Build(ctx, audit.Entry{TenantID: a.TenantID, Source: audit.SourceAuthenticator, Action: action, Meta: meta, Err: inUse(nil)})
		if err1 == nil && err2 == nil {
			err := s.batch.createAudited(ctx, a, okRec, badRec)
			switch {
			case err == nil:
				return a, true, nil
			case fault.Is(fault.Conflict, err):
				return Authenticator{}, true, inUse(err)
			default:
				return Authenticator{}, false, err
			}
		}
	}
	create := s.cfg.Store.CreateAuthenticator
	if s.batch != nil {
		create = s.batch.create
	}
	if err := create(ctx, a); err != nil {
		if fault.Is(fault.Conflict, err) {
			return Authenticator{}, false, inUse(err)
		}
		return Authenticator{}, false, err
	}
	return a, false, nil
}

// successMeta is meta plus the user and the authenticator of a creation.
func successMeta(meta map[string]any, a Authenticator) map[string]any {
	out := make(map[string]any, len(meta)+2)
	for k, v := range meta {
		out[k] = v
	}
	out["user"] = map[string]any{"id": a.UserID.String()}
	out["authenticator"] = map[string]any{"id": a.ID, "aaguid": a.AAGUID, "format": a.AttestationFormat, "attestationType": a.AttestationType}
	return out
}

// decodeB64URL decodes base64url text, padded or not, of at most
// MaxAttestationBytes.
func decodeB64URL(s string) ([]byte, bool) {
	if base64.RawURLEncoding.DecodedLen(len(s)) > MaxAttestationBytes+3 {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || len(b) == 0 || len(b) > MaxAttestationBytes {
		return nil, false
	}
	return b, true
}

func checkFriendlyName(name string, required bool) error {
	if required && strings.TrimSpace(name) == "" {
		return fault.E(fault.Invalid, fault.Field("metadata.friendlyName"), MsgFriendlyNameBlank)
	}
	if utf8.RuneCountInString(name) > MaxFriendlyName || !utf8.ValidString(name) {
		return fault.E(fault.Invalid, fault.Field("metadata.friendlyName"), "The friendly name must be valid text of at most 256 characters.")
	}
	return nil
}

// UpdateRequest is the body of PATCH .../authenticators/{id}; nil fields
// are left alone.
type UpdateRequest struct {
	State        *string
	FriendlyName *string
	// Null is true when the body was empty or JSON null.
	Null bool
}

// Update changes an authenticator's state (active <-> suspended only,
// rule 2) and friendly name (never to blank once set, rule 3). Any state in
// the request of a pending (or locked) authenticator is refused with
// Operation Not Allowed Exception.
func (s *Service) Update(ctx context.Context, p identity.Principal, ref Ref, id string, req UpdateRequest) (Authenticator, error) {
	meta := map[string]any{"user": map[string]any{"id": ref.UserID}, "authenticator": map[string]any{"id": id}}
	t, err := s.resolve(ctx, p, ref, MsgUserIDFormat)
	if err != nil {
		return Authenticator{}, s.record(ctx, p, &t, ActionUpdate, err, meta)
	}
	var a, prev Authenticator
	for attempt := 0; ; attempt++ {
		if a, err = s.one(ctx, t, id); err == nil && req.Null {
			err = fault.E(fault.Invalid, MsgAuthenticatorNull)
		}
		if err != nil {
			return Authenticator{}, s.record(ctx, p, &t, ActionUpdate, err, meta)
		}
		prev = a
		if err = applyUpdate(&a, req); err != nil {
			return Authenticator{}, s.record(ctx, p, &t, ActionUpdate, err, meta)
		}
		if a.State == prev.State && a.FriendlyName == prev.FriendlyName {
			break // nothing to change
		}
		a.UpdatedAt = s.now()
		if !a.UpdatedAt.After(prev.UpdatedAt) {
			a.UpdatedAt = prev.UpdatedAt.Add(time.Microsecond)
		}
		err = s.cfg.Store.UpdateAuthenticator(ctx, a, prev.UpdatedAt)
		if fault.Is(fault.Conflict, err) && attempt < 3 {
			continue // changed meanwhile: apply the request to the new state
		}
		switch {
		case fault.Is(fault.NotFound, err):
			err = fault.E(fault.NotFound, MsgAuthenticatorMissing, err)
		case fault.Is(fault.Conflict, err):
			err = fault.E(fault.Unavailable, "The authenticator is being changed by other requests; try again.", err)
		}
		if err != nil {
			return Authenticator{}, s.record(ctx, p, &t, ActionUpdate, err, meta)
		}
		break
	}
	meta["previous"] = map[string]any{"state": prev.State, "friendlyName": prev.FriendlyName}
	meta["new"] = map[string]any{"state": a.State, "friendlyName": a.FriendlyName}
	if err := s.record(ctx, p, &t, ActionUpdate, nil, meta); err != nil {
		return Authenticator{}, err
	}
	if a.State != prev.State {
		s.emit(ctx, a, "302", prev.State, a.State)
	}
	return a, nil
}

// applyUpdate applies req to a by the rules of PATCH.
func applyUpdate(a *Authenticator, req UpdateRequest) error {
	if req.State != nil {
		switch *req.State {
		case StateActive, StateSuspended, StatePending:
		default:
			return fault.E(fault.Invalid, fault.Field("state"), MsgStateValue)
		}
		want := *req.State
		switch {
		case a.State == want && want != StatePending:
			// no change: accepted as is
		case a.State == StateActive && want == StateSuspended, a.State == StateSuspended && want == StateActive:
			a.State = want
		default:
			return fault.E(fault.Invalid, MsgOperationNotAllowed)
		}
	}
	if req.FriendlyName != nil {
		name := strings.TrimSpace(*req.FriendlyName)
		if err := checkFriendlyName(*req.FriendlyName, a.FriendlyName != ""); err != nil {
			return err
		}
		a.FriendlyName = name
	}
	return nil
}

// Delete removes an authenticator. It is refused (fault.Forbidden, rule 5)
// when the caller's API key is bound to the user and the authenticator was
// imported through the API.
func (s *Service) Delete(ctx context.Context, p identity.Principal, ref Ref, id string) error {
	meta := map[string]any{"user": map[string]any{"id": ref.UserID}, "authenticator": map[string]any{"id": id}}
	t, err := s.resolve(ctx, p, ref, MsgUserIDFormatDelete)
	if err != nil {
		return s.record(ctx, p, &t, ActionDelete, err, meta)
	}
	a, err := s.one(ctx, t, id)
	if err != nil {
		return s.record(ctx, p, &t, ActionDelete, err, meta)
	}
	if p.UserID != "" && p.UserID == t.user.ID.String() && a.Provenance == ProvenanceImported {
		return s.record(ctx, p, &t, ActionDelete, fault.E(fault.Forbidden, MsgDeleteOwnImported), meta)
	}
	if err := s.cfg.Store.DeleteAuthenticator(ctx, t.tenant.ID, a.ID); err != nil {
		if fault.Is(fault.NotFound, err) {
			err = fault.E(fault.NotFound, MsgAuthenticatorMissing, err)
		}
		return s.record(ctx, p, &t, ActionDelete, err, meta)
	}
	meta["previous"] = map[string]any{"state": a.State, "provenance": a.Provenance}
	if err := s.record(ctx, p, &t, ActionDelete, nil, meta); err != nil {
		return err
	}
	s.emit(ctx, a, "303", a.State, "")
	return nil
}

// emit appends the native event of a mutation. The mutation is committed
// and audited already, so a failure is logged, not returned.
func (s *Service) emit(ctx context.Context, a Authenticator, typeID, prevState, newState string) {
	if s.cfg.Events == nil {
		return
	}
	ev := map[string]any{"event_type_id": typeID, "end_user": map[string]any{"id": a.UserID.String()}, "amr": "hwk"}
	if prevState != "" {
		ev["previous_state"] = prevState
	}
	if newState != "" {
		ev["new_state"] = newState
	}
	raw, _ := json.Marshal(ev)
	if _, err := s.cfg.Events.EmitNative(ctx, a.TenantID, raw); err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "authenticator event not emitted", slog.String("type", typeID), slog.String("tenant", a.TenantID), slog.Any("err", err))
	}
}
