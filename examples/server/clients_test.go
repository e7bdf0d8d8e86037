package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// call sends a JSON request with an optional bearer token and decodes the answer.
func call(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func mustRun(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestClientRegistrationAndMutualTLSLogin is the README walk-through: an
// admin creates a profile and a registration token; a client makes its key
// and CSR with `openssl req`, registers, checks its certificate with
// `openssl verify` against the returned CA, and logs in with
// `curl --cert --key` over HTTPS. Another certificate, no certificate and a
// deleted client are refused; the CA survives a restart.
func TestClientRegistrationAndMutualTLSLogin(t *testing.T) {
	for _, tool := range []string{"openssl", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool + " not installed")
		}
	}
	data, work := t.TempDir(), t.TempDir()
	s := start(t, data, "admin-password-1")
	status, body := postJSON(t, s.http+"/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": "admin-password-1", "auth_domain": "root"})
	if status != 200 {
		t.Fatalf("admin login: %d %v", status, body)
	}
	admin := body["jwt"].(string)
	if status, body := call(t, "POST", s.http+"/api/v1/client-management/profiles", admin, map[string]any{"name": "robots", "role": "application-owner"}); status != 201 {
		t.Fatalf("profile: %d %v", status, body)
	}
	status, body = call(t, "POST", s.http+"/api/v1/client-management/regtokens", admin, map[string]any{"profile_name": "robots", "max_clients": 2, "lifetime": 3600})
	if status != 201 {
		t.Fatalf("registration token: %d %v", status, body)
	}
	regToken := body["token"].(string)

	// register makes a key and CSR with openssl and registers them; it
	// returns the client id and writes <name>.key, <name>.crt and ca.crt.
	register := func(name string) string {
		mustRun(t, work, "openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
			"-keyout", name+".key", "-out", name+".csr", "-subj", "/O=Acme/CN="+name)
		csr, err := os.ReadFile(filepath.Join(work, name+".csr"))
		if err != nil {
			t.Fatal(err)
		}
		status, body := call(t, "POST", s.http+"/api/v1/client-management/clients/", "", map[string]any{"name": name, "registration_token": regToken, "csr": string(csr)})
		if status != 201 {
			t.Fatalf("register %s: %d %v", name, status, body)
		}
		id := body["id"].(string)
		if want := "UID=" + id + ",CN=" + name + ",O=Acme"; body["subject_dn"] != want {
			t.Errorf("subject_dn = %q, want %q", body["subject_dn"], want)
		}
		os.WriteFile(filepath.Join(work, name+".crt"), []byte(body["certificate"].(string)), 0o600)
		os.WriteFile(filepath.Join(work, "ca.crt"), []byte(body["ca_certificate"].(string)), 0o600)
		out := mustRun(t, work, "openssl", "verify", "-purpose", "sslclient", "-CAfile", "ca.crt", name+".crt")
		if !strings.Contains(out, name+".crt: OK") {
			t.Fatalf("openssl verify: %s", out)
		}
		return id
	}
	robot := register("robot")
	caFirst, _ := os.ReadFile(filepath.Join(work, "ca.crt"))
	other := register("other")

	// login runs curl over HTTPS, trusting the server's self-signed
	// certificate, presenting the given client certificate (if any).
	login := func(s server, clientID, cert string) (int, map[string]any) {
		args := []string{"-sS", "--cacert", filepath.Join(data, "server.crt"), "-o", "-", "-w", "\n%{http_code}",
			"-H", "Content-Type: application/json", "-d", `{"grant_type":"client_credential","client_id":"` + clientID + `"}`}
		if cert != "" {
			args = append(args, "--cert", cert+".crt", "--key", cert+".key")
		}
		out := mustRun(t, work, "curl", append(args, s.https+"/api/v1/auth/tokens/")...)
		i := strings.LastIndex(out, "\n")
		var m map[string]any
		json.Unmarshal([]byte(out[:i]), &m)
		code := 0
		json.Unmarshal([]byte(out[i+1:]), &code)
		return code, m
	}
	status, body = login(s, robot, "robot")
	if status != 200 || body["jwt"] == nil {
		t.Fatalf("client login: %d %v", status, body)
	}
	// The client's JWT works on the platform (its profile grants
	// application-owner) over HTTPS with the client's certificate: it is
	// certificate-bound (RFC 8705), so over plain HTTP it is refused.
	clientJWT := body["jwt"].(string)
	out := mustRun(t, work, "curl", "-sS", "--cacert", filepath.Join(data, "server.crt"), "--cert", "robot.crt", "--key", "robot.key",
		"-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer "+clientJWT,
		"-d", `{"name":"k","algorithm":"EC","curve":"P-256"}`, s.https+"/api/v1/vault/keys2")
	if strings.TrimSpace(out) != "201" {
		t.Errorf("vault as client over HTTPS with its certificate: %s", out)
	}
	if status, body := call(t, "POST", s.http+"/api/v1/vault/keys2", clientJWT, map[string]any{"name": "k2", "algorithm": "EC", "curve": "P-256"}); status != 401 {
		t.Errorf("vault as client over plain HTTP: %d %v, want 401 (certificate-bound token)", status, body)
	}
	refusals := []struct {
		name, id, cert, msg string
	}{
		{"another client's certificate", robot, "other", "does not match"},
		{"no certificate", robot, "", "no client certificate"},
	}
	for _, r := range refusals {
		if status, body := login(s, r.id, r.cert); status != 401 || !strings.Contains(body["message"].(string), r.msg) {
			t.Errorf("%s: %d %v, want 401 %q", r.name, status, body, r.msg)
		}
	}
	if status, body := call(t, "DELETE", s.http+"/api/v1/client-management/clients/"+robot, admin, nil); status != 204 {
		t.Fatalf("delete: %d %v", status, body)
	}
	if status, body := login(s, robot, "robot"); status != 401 || !strings.Contains(body["message"].(string), "deleted") {
		t.Errorf("deleted client: %d %v, want 401", status, body)
	}
	s.stop()

	// After a restart the CA is the same one, loaded from the store, so
	// certificates issued before still log in.
	s2 := start(t, data, "")
	defer s2.stop()
	if status, body := login(s2, other, "other"); status != 200 {
		t.Fatalf("login after restart: %d %v", status, body)
	}
	status, body = postJSON(t, s2.http+"/api/v1/auth/tokens/", map[string]string{"name": "admin", "password": "admin-password-1"})
	if status != 200 {
		t.Fatal(status)
	}
	admin = body["jwt"].(string)
	status, body = call(t, "POST", s2.http+"/api/v1/client-management/regtokens", admin, map[string]any{"profile_name": "robots", "max_clients": 1, "lifetime": 60})
	if status != 201 {
		t.Fatal(status, body)
	}
	regToken = body["token"].(string)
	s = s2
	register("third")
	if caNow, _ := os.ReadFile(filepath.Join(work, "ca.crt")); !bytes.Equal(caFirst, caNow) {
		t.Error("the client CA changed across a restart")
	}
}
