package eventstream

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
)

// Limits and defaults of subscriptions. They are part of the API
// (docs/eventstream.md).
const (
	DefaultMaxPerSecond    = 100
	MinMaxPerSecond        = 1
	MaxMaxPerSecond        = 1000
	DefaultNumberOfRetries = 3
	MinNumberOfRetries     = 0
	MaxNumberOfRetries     = 10
	// MaxEventTypes bounds eventTypes of one subscription.
	MaxEventTypes = 100
	// MaxEndpointLength bounds endpoint and idpUri.
	MaxEndpointLength = 2048
	// MaxSecretLength bounds tokens, passwords and hmac secrets.
	MaxSecretLength = 1024
	// MinHMACSecretBytes is the shortest accepted hmac key (after a
	// whsec_ secret is decoded).
	MinHMACSecretBytes = 16
	// MaxGroupConfig bounds the mappings of a directory-sync subscription.
	MaxGroupConfig = 50
	// maxNameLength bounds clientId, nodeType, relationshipType, username.
	maxNameLength = 256
	// DefaultPageSize and MaxPageSize page the listings.
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Kinds of subscriptions.
const (
	KindStream        = "stream"
	KindDirectorySync = "directory-sync"
)

// Auth types of a subscription's endpoint (API.md).
const (
	AuthNone   = "none"
	AuthBearer = "bearer"
	AuthBasic  = "basic"
	AuthHMAC   = "hmac"
)

// Node types of a directory-sync mapping and the native events each one
// selects (events/catalog.go, 4XX lifecycle).
var nodeTypeEvents = map[string][]string{
	"user":  {"401", "402", "403", "404"},
	"group": {"405", "406"},
}

// Auth is how deliveries authenticate to the endpoint. The secret (bearer
// token, basic password or hmac key) is kept sealed and never returned.
type Auth struct {
	Type     string
	Username string // basic
	Sealed   []byte // the secret, sealed with the platform's sealer
}

// Connect is the identity provider of a directory-sync subscription.
type Connect struct {
	IdpURI   string `json:"idpUri"`
	ClientID string `json:"clientId"`
}

// GroupMapping selects a kind of change (nodeType) and names the
// relationship it is pushed as.
type GroupMapping struct {
	NodeType         string `json:"nodeType"`
	RelationshipType string `json:"relationshipType"`
}

// Status is the delivery state of a subscription, kept by the engine and
// shown in the subscription.
type Status struct {
	LastSuccessAt time.Time
	LastErrorAt   time.Time
	LastError     string
	// FailingSince is when deliveries started failing without a success
	// since; zero while the endpoint is healthy.
	FailingSince time.Time
	Paused       bool
	PausedAt     time.Time
	Delivered    int64 // events delivered
	DeadLettered int64 // events that became dead letters
}

// Subscription is an event-stream or directory-sync subscription.
type Subscription struct {
	TenantID        string
	ID              string
	Kind            string // KindStream or KindDirectorySync
	Endpoint        string // for directory sync, Connect.IdpURI
	EventTypes      []string
	MaxPerSecond    int
	NumberOfRetries int
	Auth            Auth
	Connect         *Connect       // directory sync only
	GroupConfig     []GroupMapping // directory sync only
	CreatedAt       time.Time
	UpdatedAt       time.Time

	// Cursor is the Seq of the last event of the tenant's log the engine
	// is done with (delivered or dead-lettered).
	Cursor int64
	// CursorAt is at or before the ReceivedAt of every event of the
	// tenant after Cursor, stored or still to come; the zero time when
	// none is known. Reads of the log after Cursor pass it as notBefore:
	// on a log partitioned by ReceivedAt (PostgreSQL) they then skip the
	// partitions before it instead of probing each one's index. It is the
	// ReceivedAt of the event at Cursor (of the tenant's newest event at
	// creation, when Cursor is set to it): the log never lets ReceivedAt
	// decrease along a tenant's seqs (events.Store.AppendEvents), so no
	// event after Cursor is received before it. Like Cursor it never moves
	// back, and it is written with Cursor, in one row (see
	// Store.RecordDelivery): a reader never pairs a cursor with the bound
	// of a later one.
	CursorAt time.Time
	Status   Status
	// LeaseOwner holds the subscription's delivery until LeaseUntil.
	LeaseOwner string
	LeaseUntil time.Time
}

// DeadLetter is an event whose delivery failed after the last retry. It
// keeps the exact request body and webhook id, so a redelivery is the
// same message.
type DeadLetter struct {
	TenantID       string
	SubscriptionID string
	ID             string // webhook id (stable across retries and redeliveries)
	EventSeq       int64
	EventType      string
	Body           []byte // the CloudEvent JSON as POSTed
	Attempts       int
	LastError      string
	CreatedAt      time.Time
	// Requeued is set by a redelivery request; the engine then delivers
	// the letter again and deletes it on success.
	Requeued bool
}

// AuthInput is the auth object of a request.
type AuthInput struct {
	Type     string `json:"type"`
	Token    string `json:"token,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Secret   string `json:"secret,omitempty"`
}

// Input is the body of an add or update request. On update every field is
// optional; Endpoint and ID, when given, must equal the stored ones.
type Input struct {
	Endpoint        *string    `json:"endpoint"`
	ID              *string    `json:"id"`
	SubscriptionID  *string    `json:"subscriptionId"`
	EventTypes      []string   `json:"eventTypes"`
	MaxPerSecond    *int       `json:"maxPerSecond"`
	NumberOfRetries *int       `json:"numberOfRetries"`
	Auth            *AuthInput `json:"auth"`
}

// DirectorySyncInput is the body of a directory-sync create request.
type DirectorySyncInput struct {
	Connect     *Connect       `json:"connect"`
	GroupConfig []GroupMapping `json:"groupConfig"`
}

func invalid(field, msg string) error { return fault.E(fault.Invalid, fault.Field(field), msg) }

// checkURL checks that raw is an absolute http(s) URL without user info or
// fragment.
func checkURL(field, raw string) (*url.URL, error) {
	if raw == "" {
		return nil, invalid(field, field+" is required")
	}
	if len(raw) > MaxEndpointLength {
		return nil, invalid(field, fmt.Sprintf("%s is longer than %d characters", field, MaxEndpointLength))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		return nil, invalid(field, field+" must be an absolute http or https URL")
	}
	if u.User != nil {
		return nil, invalid(field, field+" must not carry credentials; use auth")
	}
	if u.Fragment != "" {
		return nil, invalid(field, field+" must not have a fragment")
	}
	return u, nil
}

// checkEventTypes checks and normalises eventTypes: each a known native
// type id or an external id >= 10000, no duplicates, order kept.
func checkEventTypes(ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, invalid("eventTypes", "eventTypes must hold at least one event type id")
	}
	if len(ids) > MaxEventTypes {
		return nil, invalid("eventTypes", fmt.Sprintf("eventTypes holds at most %d ids", MaxEventTypes))
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !knownType(id) {
			return nil, invalid("eventTypes", fmt.Sprintf("%q is not a native event type id nor an external id of 10000 or more", truncate(id, 40)))
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

func knownType(id string) bool {
	if _, ok := events.LookupType(id); ok {
		return true
	}
	if len(id) < 5 || len(id) > 18 || id[0] == '0' {
		return false
	}
	n, err := strconv.ParseInt(id, 10, 64)
	return err == nil && n >= 10000
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func checkRange(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return invalid(field, fmt.Sprintf("%s must be between %d and %d", field, lo, hi))
	}
	return nil
}

// checkAuth validates an auth object and returns the secret to seal.
func checkAuth(a *AuthInput) (typ, username string, secret []byte, err error) {
	if a == nil || a.Type == "" {
		if a != nil && (a.Token != "" || a.Password != "" || a.Secret != "") {
			return "", "", nil, invalid("auth.type", "auth.type is required")
		}
		return AuthNone, "", nil, nil
	}
	long := func(f, v string) error {
		if len(v) > MaxSecretLength {
			return invalid(f, fmt.Sprintf("%s is longer than %d characters", f, MaxSecretLength))
		}
		return nil
	}
	switch a.Type {
	case AuthNone:
		return AuthNone, "", nil, nil
	case AuthBearer:
		if a.Token == "" {
			return "", "", nil, invalid("auth.token", "auth.token is required for type bearer")
		}
		if strings.ContainsAny(a.Token, "\r\n") {
			return "", "", nil, invalid("auth.token", "auth.token must not contain line breaks")
		}
		return AuthBearer, "", []byte(a.Token), long("auth.token", a.Token)
	case AuthBasic:
		switch {
		case a.Username == "" || a.Password == "":
			return "", "", nil, invalid("auth", "auth.username and auth.password are required for type basic")
		case strings.ContainsAny(a.Username, ":\r\n") || len(a.Username) > maxNameLength:
			return "", "", nil, invalid("auth.username", "auth.username must not contain ':' or line breaks and be at most 256 characters")
		}
		return AuthBasic, a.Username, []byte(a.Password), long("auth.password", a.Password)
	case AuthHMAC:
		if err := long("auth.secret", a.Secret); err != nil {
			return "", "", nil, err
		}
		key, err := HMACKey(a.Secret)
		if err != nil {
			return "", "", nil, invalid("auth.secret", err.Error())
		}
		if len(key) < MinHMACSecretBytes {
			return "", "", nil, invalid("auth.secret", fmt.Sprintf("auth.secret must hold at least %d bytes", MinHMACSecretBytes))
		}
		return AuthHMAC, "", []byte(a.Secret), nil
	}
	return "", "", nil, invalid("auth.type", "auth.type must be none, bearer, basic or hmac")
}

// checkGroupConfig validates a directory-sync request and returns the
// event types its mappings select.
func checkGroupConfig(in DirectorySyncInput) ([]string, error) {
	if in.Connect == nil {
		return nil, invalid("connect", "connect is required")
	}
	if in.Connect.ClientID == "" {
		return nil, invalid("connect.clientId", "connect.clientId is required")
	}
	if len(in.Connect.ClientID) > maxNameLength {
		return nil, invalid("connect.clientId", "connect.clientId is longer than 256 characters")
	}
	if in.GroupConfig == nil {
		return nil, invalid("groupConfig", "groupConfig is required")
	}
	if len(in.GroupConfig) == 0 {
		return nil, invalid("groupConfig", "groupConfig must hold at least one mapping")
	}
	if len(in.GroupConfig) > MaxGroupConfig {
		return nil, invalid("groupConfig", fmt.Sprintf("groupConfig holds at most %d mappings", MaxGroupConfig))
	}
	var types []string
	seen := map[GroupMapping]bool{}
	for i, m := range in.GroupConfig {
		f := fmt.Sprintf("groupConfig[%d]", i)
		evs, ok := nodeTypeEvents[m.NodeType]
		if !ok {
			return nil, invalid(f+".nodeType", f+".nodeType must be user or group")
		}
		if m.RelationshipType == "" || len(m.RelationshipType) > maxNameLength {
			return nil, invalid(f+".relationshipType", f+".relationshipType is required (at most 256 characters)")
		}
		if seen[m] {
			return nil, invalid(f, fmt.Sprintf("%s repeats nodeType %q with relationshipType %q: one mapping per combination", f, m.NodeType, truncate(m.RelationshipType, 40)))
		}
		seen[m] = true
		for _, e := range evs {
			if !slices.Contains(types, e) {
				types = append(types, e)
			}
		}
	}
	return types, nil
}
