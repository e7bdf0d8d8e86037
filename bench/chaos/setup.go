package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"mime/multipart"
	"net/url"
	"sync/atomic"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// fixture is what setup makes through the API: a tenant, an OAuth client
// with every scope the drivers need, two notification subscriptions of
// type 10001 (one for plain pollers, one for pollers with
// acknowledgement), an event-stream subscription per receiver, and a user
// with a virtual token and a provisioning API key for PFX imports.
type fixture struct {
	password               string
	rootJWT                string
	tenantID, tenantCode   string
	clientID, clientSecret string
	token                  atomic.Pointer[string]
	plainSub, ackSub       string
	streams                map[string]int // event-stream subscription id -> receiver
	apiKey, userID, vtokID string
	pfx                    []byte
}

const (
	pfxPassword = "chaos-pfx-password"
	// ackDeadline is the acknowledged subscription's ack_deadline_seconds.
	ackDeadline = 5
)

func (f *fixture) access() string { return *f.token.Load() }

// refreshToken issues an access token (client credentials) and keeps it.
func (f *fixture) refreshToken(ctx context.Context, b *balancer, r *mrand.Rand) error {
	a, err := b.call(ctx, r, 200, request{area: "token", method: "POST", path: "/oauth/v1/token",
		form: url.Values{"grant_type": {"client_credentials"}, "client_id": {f.clientID}, "client_secret": {f.clientSecret}}})
	if err != nil {
		return err
	}
	tok, _ := a.json()["access_token"].(string)
	if tok == "" {
		return fmt.Errorf("token answer without access_token: %s", a.body)
	}
	f.token.Store(&tok)
	return nil
}

func setup(ctx context.Context, b *balancer, password string, receiverURL string, receivers int) (*fixture, error) {
	r := mrand.New(mrand.NewPCG(1, 2))
	f := &fixture{password: password, streams: map[string]int{}}
	a, err := b.call(ctx, r, 200, request{area: "setup", method: "POST", path: "/api/v1/auth/tokens/",
		body: map[string]string{"name": "admin", "password": password, "auth_domain": "root"}})
	if err != nil {
		return nil, err
	}
	f.rootJWT, _ = a.json()["jwt"].(string)
	if a, err = b.call(ctx, r, 201, request{area: "setup", method: "POST", path: "/api/v1/admin/tenants", bearer: f.rootJWT,
		body: map[string]string{"name": "chaos " + time.Now().UTC().Format(time.RFC3339Nano)}}); err != nil {
		return nil, err
	}
	m := a.json()
	f.tenantID, f.tenantCode = m["id"].(string), m["code"].(string)
	admin := "/api/v1/admin/tenants/" + f.tenantID
	if a, err = b.call(ctx, r, 201, request{area: "setup", method: "POST", path: admin + "/oauth-clients", bearer: f.rootJWT,
		body: map[string]any{"name": "chaos", "role": "tenant-admin", "scopes": []string{
			"event:event:producer", "event:event:consumer", "audit:export", "notification:consent:administrator",
			"notification:consent:consumer", "eventstream:subscription:administrator"}}}); err != nil {
		return nil, err
	}
	m = a.json()
	f.clientID, f.clientSecret = m["client_id"].(string), m["client_secret"].(string)
	if err := f.refreshToken(ctx, b, r); err != nil {
		return nil, err
	}
	for i, deadline := range []int{0, ackDeadline} {
		body := map[string]any{"event_type_ids": []string{"10001"}, "client_id": f.clientID, "notification_page_size": 50}
		if deadline > 0 {
			body["ack_deadline_seconds"] = deadline
		}
		if a, err = b.call(ctx, r, 201, request{area: "setup", method: "POST", path: "/notification/v1/subscriptions", bearer: f.access(), body: body}); err != nil {
			return nil, err
		}
		id, _ := a.json()["id"].(string)
		if i == 0 {
			f.plainSub = id
		} else {
			f.ackSub = id
		}
	}
	for i := range receivers {
		if a, err = b.call(ctx, r, 201, request{area: "setup", method: "POST", path: "/eventstream/v1/tenants/" + f.tenantCode + "/subscriptions", bearer: f.access(),
			body: map[string]any{"endpoint": fmt.Sprintf("%s/r/%d", receiverURL, i), "eventTypes": []string{"10001"}, "maxPerSecond": 1000, "numberOfRetries": 10}}); err != nil {
			return nil, err
		}
		var sub struct{ Config struct{ ID string } }
		json.Unmarshal(a.body, &sub)
		id := sub.Config.ID
		if id == "" {
			return nil, fmt.Errorf("event-stream subscription without id: %s", a.body)
		}
		f.streams[id] = i
	}
	// Virtual tokens: a user, a provisioning API key, a token, a PFX.
	if a, err = b.call(ctx, r, 201, request{area: "setup", method: "POST", path: admin + "/users", bearer: f.rootJWT,
		body: map[string]any{"name": "chaos-user", "password": "chaos-user-password-1"}}); err != nil {
		return nil, err
	}
	f.userID, _ = a.json()["id"].(string)
	if a, err = b.call(ctx, r, 201, request{area: "setup", method: "POST", path: admin + "/api-keys", bearer: f.rootJWT,
		body: map[string]any{"name": "chaos-provisioning", "areas": []string{"provisioning"}}}); err != nil {
		return nil, err
	}
	f.apiKey, _ = a.json()["key"].(string)
	if a, err = b.call(ctx, r, 200, request{area: "setup", method: "POST", auth: f.apiKey,
		path: "/VirtualToken/Provisioning/V1.0/Tenants/" + f.tenantID + "/Users/" + f.userID + "/Tokens"}); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(a.body, &f.vtokID); err != nil {
		return nil, fmt.Errorf("token id: %s", a.body)
	}
	if f.pfx, err = makePFX(); err != nil {
		return nil, err
	}
	return f, nil
}

// makePFX returns a PFX file (modern encoding) of a new RSA key and its
// self-signed certificate, under pfxPassword.
func makePFX() ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "chaos-user"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return pkcs12.Modern.Encode(key, cert, nil, pfxPassword)
}

// pfxImport is one PFX import request (multipart, plain password).
func (f *fixture) pfxImport() (request, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	part, err := w.CreateFormFile("pfxCertificate", "chaos.pfx")
	if err != nil {
		return request{}, err
	}
	part.Write(f.pfx)
	w.Close()
	return request{area: "pfx-import", method: "POST", auth: f.apiKey, raw: buf.Bytes(), contentType: w.FormDataContentType(),
		path:   "/VirtualToken/Provisioning/V1.0/Tenants/" + f.tenantID + "/Users/" + f.userID + "/Tokens/" + f.vtokID + "/Certificate",
		header: map[string]string{"X-VirtualToken-CertificatePassword": pfxPassword, "Idempotency-Key": fmt.Sprintf("chaos-pfx-%d", time.Now().UnixNano())}}, nil
}
