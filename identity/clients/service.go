package clients

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/identity/pki"
	"github.com/latchkey/latchkey/seal"
)

// Tenants is what the service reads of the identity store: the tenant of a
// client (for its token's claims) and the root tenant (which sees failures
// that name no known tenant).
type Tenants interface {
	GetTenant(ctx context.Context, id string) (identity.Tenant, error)
	GetTenantByCode(ctx context.Context, code string) (identity.Tenant, error)
}

// Revoker refuses a subject's tokens issued until now; identity.Service
// implements it. DeleteClient revokes the client id, the sub of the
// client's tokens.
type Revoker interface {
	RevokeSubject(ctx context.Context, tenantID, subject string) error
}

// Config configures a Service. Every field but TokenTTL, CAName, Logger and
// Revoker is required.
type Config struct {
	Store   Store
	Tenants Tenants
	// Revoker, when set, makes DeleteClient refuse the client's tokens at
	// once; without it they stay valid until they expire (TokenTTL).
	Revoker Revoker
	Keys    *identity.KeySet
	Sealer  *seal.Sealer
	Audit   audit.Sink
	Clock   clock.Clock
	Logger  *slog.Logger
	// TokenTTL is the lifetime of a client's platform JWT; default 5 minutes.
	TokenTTL time.Duration
	// CAName is the common name of a newly created client CA; default
	// "Latchkey client CA".
	CAName string
	// RegisterThrottle limits failed registrations per remote address, since
	// registering needs no bearer and every failure is an audit record;
	// default 50 failures per 15 minutes.
	RegisterThrottle *identity.Throttle
}

// Service registers clients and logs them in.
type Service struct {
	cfg Config
	st  Store
	ca  *pki.CA
}

// New returns a Service, loading the platform's client CA or creating it
// when the store has none (see EnsureCA).
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.TokenTTL == 0 {
		cfg.TokenTTL = 5 * time.Minute
	}
	if cfg.RegisterThrottle == nil {
		cfg.RegisterThrottle = identity.NewThrottle(50, 15*time.Minute)
	}
	if cfg.CAName == "" {
		cfg.CAName = "Latchkey client CA"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, st: cfg.Store}
	ca, err := EnsureCA(ctx, cfg.Store, cfg.Sealer, cfg.CAName, cfg.Clock.Now())
	if err != nil {
		return nil, err
	}
	s.ca = ca
	return s, nil
}

// EnsureCA returns the stored client CA, creating and storing it (key sealed
// by sealer) when there is none. When several processes start at once, the
// store's Conflict makes them all use the CA stored first.
func EnsureCA(ctx context.Context, st Store, sealer *seal.Sealer, name string, now time.Time) (*pki.CA, error) {
	stored, err := st.GetClientCA(ctx)
	if fault.Is(fault.NotFound, err) {
		ca, nerr := pki.NewCA(name, now)
		if nerr != nil {
			return nil, nerr
		}
		certPEM, sealed := ca.Marshal(sealer)
		cerr := st.CreateClientCA(idempotency.Detach(ctx), CA{CertPEM: certPEM, SealedKey: sealed, CreatedAt: now.UTC().Truncate(time.Microsecond)})
		if cerr != nil && !fault.Is(fault.Conflict, cerr) {
			return nil, cerr
		}
		stored, err = st.GetClientCA(ctx)
	}
	if err != nil {
		return nil, err
	}
	return pki.LoadCA(stored.CertPEM, stored.SealedKey, sealer)
}

// CA returns the platform's client CA, the only issuer trusted at client login.
func (s *Service) CA() *pki.CA { return s.ca }

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

// record writes an audit record and returns err; a failure to record fails
// the action, since no action may be answered without its record.
func (s *Service) record(ctx context.Context, tenantID, action string, err error, meta map[string]any) error {
	return audit.Outcome(ctx, s.cfg.Audit, audit.Entry{TenantID: tenantID, Source: audit.SourcePlatform, Action: action, Err: err, Meta: meta})
}

// recordRoot records a failure that names no known tenant in the root
// tenant's log, where the operators see it.
func (s *Service) recordRoot(ctx context.Context, action string, err error, meta map[string]any) error {
	root, rerr := s.cfg.Tenants.GetTenantByCode(ctx, identity.RootTenantCode)
	if rerr != nil {
		return err
	}
	return s.record(ctx, root.ID, action, err, meta)
}

// Audit actions.
const (
	ActionProfileCreate  = "client-profile.create"
	ActionRegTokenCreate = "registration-token.create"
	ActionRegister       = "client.register"
	ActionList           = "client.list"
	ActionGet            = "client.read"
	ActionDelete         = "client.delete"
	ActionLogin          = "auth.client-login"
)

// requireAdmin checks that p administers its own tenant: profiles, tokens
// and clients belong to the tenant of the admin who manages them.
func requireAdmin(p identity.Principal) error {
	if p.TenantID == "" || !p.HasRole(identity.RoleTenantAdmin) {
		return fault.E(fault.Forbidden, "the tenant-admin role is required")
	}
	return nil
}

func textField(field, v string, max int) error {
	n := utf8.RuneCountInString(v)
	if !utf8.ValidString(v) || n < 1 || n > max || strings.TrimSpace(v) != v {
		return fault.E(fault.Invalid, fault.Field(field), fmt.Sprintf("%s must be 1 to %d characters without leading or trailing spaces", field, max))
	}
	return nil
}

// subjectField returns the canonical form of a subject_dn_field_to_modify
// value ("" stays "").
func subjectField(v string) (string, error) {
	switch {
	case v == "":
		return "", nil
	case strings.EqualFold(v, pki.SubjectFieldUID):
		return pki.SubjectFieldUID, nil
	case strings.EqualFold(v, pki.SubjectFieldCN):
		return pki.SubjectFieldCN, nil
	}
	return "", fault.E(fault.Invalid, fault.Field("subject_dn_field_to_modify"),
		fmt.Sprintf("subject_dn_field_to_modify %q is not allowed; use %q or %q", v, pki.SubjectFieldUID, pki.SubjectFieldCN))
}

// DefaultClientRole is the role of a profile created without one: the
// spec's flow (register a client, log in with its certificate, list the
// vault's keys) needs a role the vault accepts, and API.md fixes this one.
const DefaultClientRole = identity.RoleApplicationOwner

var profileRoles = []string{identity.RoleTenantAdmin, identity.RoleApplicationOwner, identity.RoleUser}

// ProfileRequest creates a profile: POST {base_url}/client-management/profiles.
type ProfileRequest struct {
	Name string `json:"name"`
	// SubjectField is "UID" (default) or "CN".
	SubjectField string `json:"subject_dn_field_to_modify"`
	// CertLifetimeDays defaults to DefaultCertLifetimeDays; 1..MaxCertLifetimeDays.
	CertLifetimeDays int `json:"cert_lifetime_days"`
	// Role is given to the clients' JWTs: tenant-admin, application-owner
	// or user; "" (not given) means DefaultClientRole.
	Role string `json:"role"`
}

// CreateProfile creates a client profile in the admin's tenant.
func (s *Service) CreateProfile(ctx context.Context, p identity.Principal, req ProfileRequest) (Profile, error) {
	if err := requireAdmin(p); err != nil {
		return Profile{}, s.auditIfTenant(ctx, p, ActionProfileCreate, err, nil)
	}
	meta := map[string]any{"profile": map[string]any{"name": req.Name}}
	fail := func(err error) (Profile, error) {
		return Profile{}, s.record(ctx, p.TenantID, ActionProfileCreate, err, meta)
	}
	if err := textField("name", req.Name, 200); err != nil {
		return fail(err)
	}
	field, err := subjectField(req.SubjectField)
	if err != nil {
		return fail(err)
	}
	if field == "" {
		field = pki.DefaultSubjectField
	}
	days := req.CertLifetimeDays
	if days == 0 {
		days = DefaultCertLifetimeDays
	}
	if days < 1 || days > MaxCertLifetimeDays {
		return fail(fault.E(fault.Invalid, fault.Field("cert_lifetime_days"), fmt.Sprintf("cert_lifetime_days must be between 1 and %d", MaxCertLifetimeDays)))
	}
	if req.Role != "" && !slices.Contains(profileRoles, req.Role) {
		return fail(fault.E(fault.Invalid, fault.Field("role"), "role must be one of "+strings.Join(profileRoles, ", ")))
	}
	role := req.Role
	if role == "" {
		role = DefaultClientRole
	}
	pr := Profile{ID: identity.NewGUID(), TenantID: p.TenantID, Name: req.Name, SubjectField: field, CertLifetimeDays: days, Role: role, CreatedAt: s.now()}
	if err := s.st.CreateProfile(ctx, pr); err != nil {
		if fault.Is(fault.Conflict, err) {
			err = fault.E(fault.Conflict, fault.Field("name"), "a client profile with this name exists in the tenant", err)
		}
		return fail(err)
	}
	meta["profile"] = map[string]any{"id": pr.ID, "name": pr.Name, "subjectField": field, "certLifetimeDays": days, "role": pr.Role}
	return pr, s.record(ctx, p.TenantID, ActionProfileCreate, nil, meta)
}

// auditIfTenant records a refused call in the caller's tenant when it has one.
func (s *Service) auditIfTenant(ctx context.Context, p identity.Principal, action string, err error, meta map[string]any) error {
	if p.TenantID == "" {
		return err
	}
	return s.record(ctx, p.TenantID, action, err, meta)
}

// Bounds of registration tokens.
const (
	MaxClientsPerToken = 10_000
	MaxTokenLifetime   = 365 * 24 * time.Hour
)

// RegTokenRequest creates a registration token: POST
// {base_url}/client-management/regtokens.
type RegTokenRequest struct {
	ProfileName string `json:"profile_name"`
	MaxClients  int    `json:"max_clients"`
	// Lifetime is in seconds, 1 second to MaxTokenLifetime.
	Lifetime int64 `json:"lifetime"`
}

// NewRegToken is a created registration token with its text, which is shown
// only this once.
type NewRegToken struct {
	ID          string    `json:"id"`
	Token       string    `json:"token"`
	ProfileName string    `json:"profile_name"`
	MaxClients  int       `json:"max_clients"`
	ExpiresAt   time.Time `json:"expires_at"`
	CreatedAt   time.Time `json:"created_at"`
}

// CreateRegistrationToken creates a random registration token for a profile
// of the admin's tenant. Only its SHA-256 is stored.
func (s *Service) CreateRegistrationToken(ctx context.Context, p identity.Principal, req RegTokenRequest) (NewRegToken, error) {
	if err := requireAdmin(p); err != nil {
		return NewRegToken{}, s.auditIfTenant(ctx, p, ActionRegTokenCreate, err, nil)
	}
	meta := map[string]any{"registrationToken": map[string]any{"profileName": req.ProfileName, "maxClients": req.MaxClients, "lifetime": req.Lifetime}}
	fail := func(err error) (NewRegToken, error) {
		return NewRegToken{}, s.record(ctx, p.TenantID, ActionRegTokenCreate, err, meta)
	}
	if req.ProfileName == "" {
		return fail(fault.E(fault.Invalid, fault.Field("profile_name"), "profile_name is required"))
	}
	if req.MaxClients < 1 || req.MaxClients > MaxClientsPerToken {
		return fail(fault.E(fault.Invalid, fault.Field("max_clients"), fmt.Sprintf("max_clients must be between 1 and %d", MaxClientsPerToken)))
	}
	if req.Lifetime < 1 || req.Lifetime > int64(MaxTokenLifetime/time.Second) {
		return fail(fault.E(fault.Invalid, fault.Field("lifetime"), fmt.Sprintf("lifetime must be between 1 and %d seconds", int64(MaxTokenLifetime/time.Second))))
	}
	pr, err := s.st.GetProfileByName(ctx, p.TenantID, req.ProfileName)
	if fault.Is(fault.NotFound, err) {
		return fail(fault.E(fault.NotFound, fault.Field("profile_name"), "no client profile with this profile_name in the tenant", err))
	} else if err != nil {
		return fail(err)
	}
	text := "lkr_" + rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(text))
	now := s.now()
	t := RegistrationToken{ID: identity.NewGUID(), TenantID: p.TenantID, ProfileID: pr.ID, Hash: sum[:], MaxClients: req.MaxClients,
		ExpiresAt: now.Add(time.Duration(req.Lifetime) * time.Second), CreatedAt: now}
	if err := s.st.CreateRegistrationToken(ctx, t); err != nil {
		return fail(err)
	}
	meta["registrationToken"].(map[string]any)["id"] = t.ID
	meta["registrationToken"].(map[string]any)["expiresAt"] = t.ExpiresAt
	out := NewRegToken{ID: t.ID, Token: text, ProfileName: pr.Name, MaxClients: t.MaxClients, ExpiresAt: t.ExpiresAt, CreatedAt: now}
	return out, s.record(ctx, p.TenantID, ActionRegTokenCreate, nil, meta)
}

// RegisterRequest is resource B of the specification: POST
// {base_url}/client-management/clients.
type RegisterRequest struct {
	Name              string `json:"name"`
	RegistrationToken string `json:"registration_token"`
	CSR               string `json:"csr"`
	// SubjectField overrides the profile's field when not empty: "UID" or "CN".
	SubjectField string `json:"subject_dn_field_to_modify"`
	// DoNotModify keeps the CSR's subject exactly as sent.
	DoNotModify bool `json:"do_not_modify_subject_dn"`
	// RemoteAddr is the caller's network address (host), by which failed
	// attempts are throttled; empty means unthrottled (library callers).
	RemoteAddr string `json:"-"`
}

// MaxClientNameLength bounds a client's name, in characters.
const MaxClientNameLength = 200

// Validate checks what can be checked without the store: the name, that a
// token is given, the CSR (pki.ParseCSR: PEM, signature, key strength) and
// the subject field. It returns the parsed CSR. Every refusal is
// fault.Invalid naming the field.
func (r RegisterRequest) Validate() (*x509.CertificateRequest, error) {
	if err := textField("name", r.Name, MaxClientNameLength); err != nil {
		return nil, err
	}
	if r.RegistrationToken == "" {
		return nil, fault.E(fault.Invalid, fault.Field("registration_token"), "registration_token is required")
	}
	if strings.TrimSpace(r.CSR) == "" {
		return nil, fault.E(fault.Invalid, fault.Field("csr"), "csr is required: a PEM certificate signing request")
	}
	if _, err := subjectField(r.SubjectField); err != nil {
		return nil, err
	}
	return pki.ParseCSR(r.CSR)
}

// Registered is the answer to a registration.
type Registered struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Certificate   string    `json:"certificate"`    // PEM
	CACertificate string    `json:"ca_certificate"` // PEM
	SubjectDN     string    `json:"subject_dn"`
	CreatedAt     time.Time `json:"created_at"`
}

// Register registers a client: the registration token is the credential.
// It checks the request (Validate), spends one use of the token, applies the
// subject DN rule (the request's field overrides the profile's; with
// DoNotModify the CSR's subject is kept), signs the certificate with the
// platform CA for the profile's lifetime and stores the client bound to the
// certificate's fingerprint.
//
// Unknown and expired tokens are fault.Unauthenticated, a used-up token is
// fault.Conflict, a bad request fault.Invalid. The attempt is audited in the
// token's tenant, or the root tenant's when the token is unknown. With a
// RemoteAddr, failed attempts are counted per address, and an address over
// the limit gets fault.TooManyRequests, unaudited, until its window passes.
func (s *Service) Register(ctx context.Context, req RegisterRequest) (Registered, error) {
	if req.RemoteAddr == "" {
		return s.register(ctx, req)
	}
	key := "register\x00" + req.RemoteAddr
	if blocked, wait := s.cfg.RegisterThrottle.Blocked(key, s.cfg.Clock.Now()); blocked {
		// Not audited: throttling exists so that failures cannot flood the log.
		return Registered{}, fault.E(fault.TooManyRequests, fmt.Sprintf("too many failed registrations; try again in %d seconds", int(wait.Seconds())+1))
	}
	r, err := s.register(ctx, req)
	if err != nil && !fault.Is(fault.Internal, err) && !fault.Is(fault.Unavailable, err) {
		s.cfg.RegisterThrottle.Fail(key, s.cfg.Clock.Now())
	}
	return r, err
}

// register is Register without the throttle.
func (s *Service) register(ctx context.Context, req RegisterRequest) (Registered, error) {
	id := identity.NewGUID()
	meta := map[string]any{"client": map[string]any{"name": req.Name}}
	csr, verr := req.Validate()
	var tok RegistrationToken
	if req.RegistrationToken != "" {
		sum := sha256.Sum256([]byte(req.RegistrationToken))
		var err error
		tok, err = s.st.GetRegistrationTokenByHash(ctx, sum[:])
		if fault.Is(fault.NotFound, err) {
			if verr != nil {
				return Registered{}, s.recordRoot(ctx, ActionRegister, verr, meta)
			}
			return Registered{}, s.recordRoot(ctx, ActionRegister, fault.E(fault.Unauthenticated, fault.Field("registration_token"), "registration_token is not valid"), meta)
		} else if err != nil {
			return Registered{}, err
		}
		meta["registrationTokenId"] = tok.ID
	}
	if verr != nil {
		if tok.TenantID == "" {
			return Registered{}, s.recordRoot(ctx, ActionRegister, verr, meta)
		}
		return Registered{}, s.record(ctx, tok.TenantID, ActionRegister, verr, meta)
	}
	fail := func(err error) (Registered, error) {
		return Registered{}, s.record(ctx, tok.TenantID, ActionRegister, err, meta)
	}
	now := s.now()
	if err := tokenUsable(tok, now); err != nil {
		return fail(err)
	}
	pr, err := s.st.GetProfile(ctx, tok.TenantID, tok.ProfileID)
	if err != nil {
		return fail(err)
	}
	field, _ := subjectField(req.SubjectField) // checked by Validate
	if field == "" {
		field = pr.SubjectField
	}
	subject, err := pki.SubjectFor(csr, id, field, req.DoNotModify)
	if err != nil {
		return fail(err)
	}
	der, serial, err := s.ca.Sign(csr, subject, now, now.Add(time.Duration(pr.CertLifetimeDays)*24*time.Hour))
	if err != nil {
		return fail(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fail(fault.E(fault.Internal, err))
	}
	// Spend the token last, so a refused request costs no registration; the
	// store's atomic check is what holds under concurrency.
	sum := sha256.Sum256([]byte(req.RegistrationToken))
	if _, err := s.st.UseRegistrationToken(ctx, sum[:], now); err != nil {
		return fail(tokenError(err))
	}
	c := Client{
		ID: id, TenantID: tok.TenantID, Name: req.Name, ProfileID: pr.ID, RegistrationTokenID: tok.ID, Role: pr.Role,
		SubjectDN:      pki.SubjectDN(cert),
		CertificatePEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Fingerprint:    pki.Fingerprint(der), Serial: fmt.Sprintf("%X", serial),
		NotBefore: cert.NotBefore.UTC(), NotAfter: cert.NotAfter.UTC(), CreatedAt: now,
	}
	if err := s.st.CreateClient(ctx, c); err != nil {
		return fail(err)
	}
	meta["client_id"] = c.ID
	meta["client"] = map[string]any{"id": c.ID, "name": c.Name, "subjectDN": c.SubjectDN, "serial": c.Serial, "fingerprint": c.Fingerprint, "profileId": pr.ID}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	out := Registered{ID: c.ID, Name: c.Name, Certificate: string(c.CertificatePEM), CACertificate: string(s.ca.CertificatePEM()), SubjectDN: c.SubjectDN, CreatedAt: now}
	return out, s.record(ctx, c.TenantID, ActionRegister, nil, meta)
}

func tokenUsable(t RegistrationToken, now time.Time) error {
	if !now.Before(t.ExpiresAt) {
		return tokenError(fault.E(fault.Expired))
	}
	if t.Used >= t.MaxClients {
		return tokenError(fault.E(fault.Conflict))
	}
	return nil
}

// tokenError turns the store's refusals of UseRegistrationToken into the
// answers of a registration.
func tokenError(err error) error {
	switch fault.KindOf(err) {
	case fault.NotFound:
		return fault.E(fault.Unauthenticated, fault.Field("registration_token"), "registration_token is not valid", err)
	case fault.Expired:
		return fault.E(fault.Unauthenticated, fault.Field("registration_token"), "registration_token has expired", err)
	case fault.Conflict:
		return fault.E(fault.Conflict, fault.Field("registration_token"), "registration_token has already registered its maximum number of clients", err)
	}
	return err
}

// ClientInfo is a registered client as admins see it.
type ClientInfo struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	ProfileID   string    `json:"profile_id"`
	Role        string    `json:"role,omitempty"`
	SubjectDN   string    `json:"subject_dn"`
	Certificate string    `json:"certificate"`
	Fingerprint string    `json:"fingerprint"`
	Serial      string    `json:"serial_number"`
	NotBefore   time.Time `json:"not_before"`
	NotAfter    time.Time `json:"not_after"`
	CreatedAt   time.Time `json:"created_at"`
}

// Info returns c as admins see it.
func (c Client) Info() ClientInfo {
	return ClientInfo{ID: c.ID, Name: c.Name, ProfileID: c.ProfileID, Role: c.Role, SubjectDN: c.SubjectDN, Certificate: string(c.CertificatePEM),
		Fingerprint: c.Fingerprint, Serial: c.Serial, NotBefore: c.NotBefore, NotAfter: c.NotAfter, CreatedAt: c.CreatedAt}
}

// ListClients returns the clients of the admin's tenant.
func (s *Service) ListClients(ctx context.Context, p identity.Principal) ([]Client, error) {
	if err := requireAdmin(p); err != nil {
		return nil, s.auditIfTenant(ctx, p, ActionList, err, nil)
	}
	cs, err := s.st.ListClients(ctx, p.TenantID)
	if err != nil {
		return nil, s.record(ctx, p.TenantID, ActionList, err, nil)
	}
	return cs, s.record(ctx, p.TenantID, ActionList, nil, map[string]any{"count": len(cs)})
}

// GetClient returns a client of the admin's tenant; another tenant's client
// is fault.NotFound.
func (s *Service) GetClient(ctx context.Context, p identity.Principal, id string) (Client, error) {
	meta := map[string]any{"client_id": id}
	if err := requireAdmin(p); err != nil {
		return Client{}, s.auditIfTenant(ctx, p, ActionGet, err, meta)
	}
	c, err := s.get(ctx, p.TenantID, id)
	return c, s.record(ctx, p.TenantID, ActionGet, err, meta)
}

func (s *Service) get(ctx context.Context, tenantID, id string) (Client, error) {
	if !identity.IsGUID(id) {
		return Client{}, fault.E(fault.NotFound, "client not found")
	}
	c, err := s.st.GetClient(ctx, tenantID, id)
	if fault.Is(fault.NotFound, err) {
		return Client{}, fault.E(fault.NotFound, "client not found", err)
	}
	return c, err
}

// DeleteClient revokes and removes a client of the admin's tenant. Its
// certificate no longer logs in, and, with a Config.Revoker, the tokens it
// already holds are refused (at once in this process, within 5 seconds in
// others on the same store); without one they stay valid until they expire
// (TokenTTL). The subject is revoked before the client is removed, so a
// failure leaves no deleted client with live tokens.
func (s *Service) DeleteClient(ctx context.Context, p identity.Principal, id string) error {
	meta := map[string]any{"client_id": id}
	if err := requireAdmin(p); err != nil {
		return s.auditIfTenant(ctx, p, ActionDelete, err, meta)
	}
	if _, err := s.get(ctx, p.TenantID, id); err != nil {
		return s.record(ctx, p.TenantID, ActionDelete, err, meta)
	}
	if s.cfg.Revoker != nil {
		if err := s.cfg.Revoker.RevokeSubject(ctx, p.TenantID, id); err != nil {
			return s.record(ctx, p.TenantID, ActionDelete, err, meta)
		}
	}
	err := s.st.DeleteClient(ctx, p.TenantID, id)
	if fault.Is(fault.NotFound, err) {
		err = fault.E(fault.NotFound, "client not found", err)
	}
	return s.record(ctx, p.TenantID, ActionDelete, err, meta)
}

// Login is the client_credential login: it issues a platform JWT to client
// clientID when chain (the TLS peer certificates, leaf first) presents the
// certificate issued to that client at registration, valid now and chaining
// to the platform CA. The token's sub and client_id claims are the client
// id, its tenant the client's, its roles the profile's role. Every attempt
// about a known client is audited in its tenant with meta.client_id;
// unknown ids in the root tenant. Refusals are fault.Unauthenticated. The
// JWT carries cnf x5t#S256, the thumbprint of the certificate presented:
// every route refuses it unless the request presents that certificate too.
func (s *Service) Login(ctx context.Context, clientID string, chain []*x509.Certificate) (identity.TokenResponse, error) {
	meta := map[string]any{"client_id": clientID, "grantType": "client_credential"}
	if clientID == "" {
		return identity.TokenResponse{}, fault.E(fault.Invalid, fault.Field("client_id"), "client_id is required")
	}
	var (
		c   Client
		err error
	)
	if identity.IsGUID(clientID) {
		c, err = s.st.LookupClient(ctx, clientID)
	} else {
		err = fault.E(fault.NotFound, "malformed client id")
	}
	if fault.Is(fault.NotFound, err) {
		return identity.TokenResponse{}, s.recordRoot(ctx, ActionLogin, fault.E(fault.Unauthenticated, "unknown or deleted client_id", err), meta)
	} else if err != nil {
		return identity.TokenResponse{}, err
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	if err := pki.VerifyClientCert(s.ca, chain, c.Fingerprint, s.cfg.Clock.Now()); err != nil {
		return identity.TokenResponse{}, s.record(ctx, c.TenantID, ActionLogin, err, meta)
	}
	t, err := s.cfg.Tenants.GetTenant(ctx, c.TenantID)
	if err != nil {
		return identity.TokenResponse{}, s.record(ctx, c.TenantID, ActionLogin, err, meta)
	}
	var roles []string
	if c.Role != "" {
		roles = []string{c.Role}
	}
	// The JWT is bound to the certificate of this login (RFC 8705 §3):
	// stolen, it is useless without the client's private key.
	cnf := &identity.Confirmation{X5TS256: identity.CertificateThumbprint(chain[0].Raw)}
	tok, _, err := s.cfg.Keys.Sign(ctx, identity.Claims{TenantID: t.ID, TenantCode: t.Code, ClientID: c.ID, Roles: roles, Confirmation: cnf,
		RegisteredClaims: jwt.RegisteredClaims{Subject: c.ID}}, s.cfg.TokenTTL)
	if err != nil {
		return identity.TokenResponse{}, err
	}
	resp := identity.TokenResponse{JWT: tok, Duration: int64(s.cfg.TokenTTL / time.Second), TokenType: "Bearer"}
	return resp, s.record(ctx, t.ID, ActionLogin, nil, meta)
}
