package vault

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// Key states, the response field state: KMIP's State attribute (NIST SP
// 800-57 Part 1's key states).
const (
	StatePreActive            = "Pre-Active"
	StateActive               = "Active"
	StateDeactivated          = "Deactivated"
	StateCompromised          = "Compromised"
	StateDestroyed            = "Destroyed"
	StateDestroyedCompromised = "Destroyed Compromised"
)

// States lists every state, for the list filter.
var States = []string{StatePreActive, StateActive, StateDeactivated, StateCompromised, StateDestroyed, StateDestroyedCompromised}

// Revocation reasons of the revoke route.
const (
	ReasonCompromised = "compromised"
	ReasonSuperseded  = "superseded"
	ReasonCessation   = "cessation"
	ReasonUnspecified = "unspecified"
)

// Version statuses, the version resource's status.
const (
	StatusPending   = "pending"   // above the key's version: published, unused until its date
	StatusCurrent   = "current"   // the key's version
	StatusEnabled   = "enabled"   // older, still decrypts and verifies
	StatusDisabled  = "disabled"  // below minDecryptionVersion
	StatusDestroyed = "destroyed" // trimmed or destroyed: material erased
)

// Operations, the names of routes as the state table, grants and audit
// use them.
const (
	OpEncrypt       = "encrypt"
	OpDecrypt       = "decrypt"
	OpRewrap        = "rewrap"
	OpDatakey       = "datakey"
	OpHMAC          = "hmac"
	OpSign          = "sign"
	OpVerify        = "verify"
	OpEncapsulate   = "encapsulate"
	OpDecapsulate   = "decapsulate"
	OpRotate        = "rotate"
	OpImportVersion = "import version"
	OpExport        = "export"
)

// CryptoOps lists the operations a grant may name.
var CryptoOps = []string{OpEncrypt, OpDecrypt, OpRewrap, OpDatakey, OpHMAC, OpSign, OpVerify, OpEncapsulate, OpDecapsulate}

// Destroyed reports whether state is one of the two destroyed states.
func Destroyed(state string) bool {
	return state == StateDestroyed || state == StateDestroyedCompromised
}

// allowedStates is the design's state table: the states in which each
// operation is allowed (rewrap's source is a decrypt; rewrap into the same
// key needs Active, checked as its encrypt).
var allowedStates = map[string][]string{
	OpEncrypt:       {StateActive},
	OpDatakey:       {StateActive},
	OpSign:          {StateActive},
	OpHMAC:          {StateActive},
	OpEncapsulate:   {StateActive},
	OpRotate:        {StateActive},
	OpImportVersion: {StateActive},
	OpDecrypt:       {StateActive, StateDeactivated, StateCompromised},
	OpVerify:        {StateActive, StateDeactivated, StateCompromised},
	OpDecapsulate:   {StateActive, StateDeactivated, StateCompromised},
	OpRewrap:        {StateActive, StateDeactivated, StateCompromised},
	OpExport:        {StatePreActive, StateActive, StateDeactivated},
}

// checkState refuses op in k's state: fault.Conflict naming the state.
func checkState(k Key, op string) error {
	allowed, ok := allowedStates[op]
	if !ok || slices.Contains(allowed, k.State) {
		return nil
	}
	return fault.E(fault.Conflict, fmt.Sprintf("the key is %s: %s needs a key that is %s", k.State, op, orList(allowed)))
}

func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// transition is a change of state a route asks for.
type transition struct {
	route  string // activate, revoke, destroy
	reason string // revoke's
}

// transitions is the design's transition table: for each route (and
// revoke's kind of reason), the state each allowed state goes to.
var transitions = map[string]map[string]string{
	"activate": {StatePreActive: StateActive},
	"revoke compromised": {
		StatePreActive: StateCompromised, StateActive: StateCompromised, StateDeactivated: StateCompromised,
		StateDestroyed: StateDestroyedCompromised,
	},
	"revoke": {StateActive: StateDeactivated},
	"destroy": {
		StatePreActive: StateDestroyed, StateDeactivated: StateDestroyed, StateCompromised: StateDestroyedCompromised,
	},
}

// routesFrom names the routes that lead out of state, for the 409's message.
func routesFrom(state string) []string {
	var out []string
	for _, r := range []string{"activate", "revoke", "revoke compromised", "destroy"} {
		if _, ok := transitions[r][state]; ok {
			name := r
			if r == "revoke compromised" {
				name = `revoke {reason: "compromised"}`
			}
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// next is the state route takes k's state to, or fault.Conflict naming the
// state and the routes it allows.
func (t transition) next(state string) (string, error) {
	table := t.route
	if t.route == "revoke" && t.reason == ReasonCompromised {
		table = "revoke compromised"
	}
	if to, ok := transitions[table][state]; ok {
		return to, nil
	}
	msg := fmt.Sprintf("a key that is %s cannot be %s", state, map[string]string{"activate": "activated", "revoke": "revoked", "destroy": "destroyed"}[t.route])
	if table == "revoke compromised" {
		msg += " as compromised"
	}
	if state == StateActive && t.route == "destroy" {
		msg += " (revoke it first)"
	}
	if rs := routesFrom(state); len(rs) > 0 {
		msg += "; allowed: " + strings.Join(rs, ", ")
	} else {
		msg += "; no state change is allowed from it"
	}
	return "", fault.E(fault.Conflict, msg)
}

// Change is a change of a key that happened by itself, at a date: what the
// rotation pass stores and audits (actor "system").
type Change struct {
	Action string         // audit action
	Meta   map[string]any // audit meta
}

// At returns k as it is at now: a Pre-Active key whose activation date has
// passed is Active, an Active key whose deactivation date has passed is
// Deactivated, and pending versions whose dates have passed are current;
// and the changes, for the rotation pass to store and audit. Every use
// applies it, so that dates hold to the second whether the pass has run.
func (k Key) At(now time.Time) (Key, []Change) {
	var changes []Change
	if k.State == StatePreActive && k.ActivationDate != nil && !now.Before(*k.ActivationDate) {
		k.State = StateActive
		changes = append(changes, Change{ActionActivate, map[string]any{"from": StatePreActive, "to": StateActive, "reason": "activationDate"}})
	}
	if k.State == StateActive && k.DeactivationDate != nil && !now.Before(*k.DeactivationDate) {
		k.State = StateDeactivated
		changes = append(changes, Change{ActionRevoke, map[string]any{"from": StateActive, "to": StateDeactivated, "reason": "deactivationDate"}})
	}
	if len(k.Pending) > 0 {
		var rest []PendingVersion
		v := k.Version
		for _, p := range k.Pending {
			if !now.Before(p.At) {
				v = max(v, p.Version)
			} else {
				rest = append(rest, p)
			}
		}
		if v != k.Version {
			changes = append(changes, Change{ActionUpdate, map[string]any{"fields": []string{"version"}, "from": k.Version, "to": v}})
			k.Version, k.Pending = v, rest
		}
	}
	return k, changes
}

// nextEvent is when k next changes by itself, or nil: its dates, its
// pending versions and, for an Active generated key with a period, its
// next automatic rotation.
func (k Key) nextEvent() *time.Time {
	var next *time.Time
	take := func(t *time.Time) {
		if t != nil && (next == nil || t.Before(*next)) {
			c := *t
			next = &c
		}
	}
	switch k.State {
	case StatePreActive:
		take(k.ActivationDate)
		take(k.DeactivationDate)
	case StateActive:
		take(k.DeactivationDate)
		if k.AutoRotatePeriodSeconds > 0 && k.Origin == OriginGenerated {
			take(k.NextRotationAt)
		}
	}
	for _, p := range k.Pending {
		take(&p.At)
	}
	return next
}

// minEncryption is the lowest version encrypt may be pinned to.
func (k Key) minEncryption() int { return max(k.MinEncryptionVersion, k.MinDecryptionVersion) }

// StatusOf is the status of version v of k (k as At returns it).
func (k Key) StatusOf(v int, erased bool) string {
	switch {
	case erased || v < k.MinAvailableVersion || Destroyed(k.State):
		return StatusDestroyed
	case v > k.Version:
		return StatusPending
	case v == k.Version:
		return StatusCurrent
	case v < k.MinDecryptionVersion:
		return StatusDisabled
	}
	return StatusEnabled
}
