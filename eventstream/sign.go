package eventstream

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// Standard Webhooks headers (https://www.standardwebhooks.com/).
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// HMACKey returns the signing key of an hmac secret: a "whsec_" secret is
// the base64 of the key (Standard Webhooks), any other secret is the key's
// raw bytes.
func HMACKey(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, errors.New("auth.secret starts with whsec_ but the rest is not base64")
		}
		return key, nil
	}
	if secret == "" {
		return nil, errors.New("auth.secret is required for type hmac")
	}
	return []byte(secret), nil
}

// Sign returns the webhook-signature header value of a message:
// "v1," followed by the base64 HMAC-SHA256 of "id.timestamp.body".
func Sign(key []byte, id, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}
