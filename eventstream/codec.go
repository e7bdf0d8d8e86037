package eventstream

import (
	"encoding/json"

	"github.com/latchkey/latchkey/fault"
)

// storedConfig is the configuration of a subscription as the SQL stores
// keep it: one JSON column, so the tables need not change when a field is
// added.
type storedConfig struct {
	EventTypes      []string       `json:"eventTypes"`
	MaxPerSecond    int            `json:"maxPerSecond"`
	NumberOfRetries int            `json:"numberOfRetries"`
	AuthType        string         `json:"authType"`
	AuthUsername    string         `json:"authUsername,omitempty"`
	Connect         *Connect       `json:"connect,omitempty"`
	GroupConfig     []GroupMapping `json:"groupConfig,omitempty"`
}

// MarshalConfig encodes sub's configuration (everything UpdateSubscription
// replaces but Auth.Sealed and UpdatedAt) for a SQL store's config column.
func MarshalConfig(sub Subscription) ([]byte, error) {
	b, err := json.Marshal(storedConfig{sub.EventTypes, sub.MaxPerSecond, sub.NumberOfRetries, sub.Auth.Type, sub.Auth.Username, sub.Connect, sub.GroupConfig})
	if err != nil {
		return nil, fault.E(fault.Internal, err)
	}
	return b, nil
}

// UnmarshalConfig decodes a config column into sub.
func UnmarshalConfig(b []byte, sub *Subscription) error {
	var c storedConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return fault.E(fault.Internal, "bad stored subscription config", err)
	}
	sub.EventTypes, sub.MaxPerSecond, sub.NumberOfRetries = c.EventTypes, c.MaxPerSecond, c.NumberOfRetries
	sub.Auth.Type, sub.Auth.Username, sub.Connect, sub.GroupConfig = c.AuthType, c.AuthUsername, c.Connect, c.GroupConfig
	return nil
}

// MarshalStatus and UnmarshalStatus encode a Status for a SQL store.
func MarshalStatus(st Status) ([]byte, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fault.E(fault.Internal, err)
	}
	return b, nil
}

// UnmarshalStatus decodes a status column.
func UnmarshalStatus(b []byte, st *Status) error {
	if err := json.Unmarshal(b, st); err != nil {
		return fault.E(fault.Internal, "bad stored subscription status", err)
	}
	return nil
}
