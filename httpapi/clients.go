package httpapi

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/identity/clients"
)

// DefaultClientCertHeader is the header a trusted TLS-terminating proxy
// forwards the client certificate in, when Options.ClientCertHeader is empty.
const DefaultClientCertHeader = "X-Forwarded-Client-Cert"

func (s *Server) registerClients() {
	base := s.opts.BaseURL + "/client-management"
	admin := s.platformJWT()
	s.handle("POST", base+"/profiles", admin.creating(), s.createProfile)
	s.handle("POST", base+"/regtokens", admin.creating(), s.createRegToken)
	// Registration needs no bearer: the registration token is the credential.
	public := routeOpts{style: stylePlatform}
	s.handle("POST", base+"/clients", public, s.registerClient)
	s.handle("POST", base+"/clients/{$}", public, s.registerClient)
	s.handle("GET", base+"/clients", admin, s.listClients)
	s.handle("GET", base+"/clients/{id}", admin, s.getClient)
	s.handle("DELETE", base+"/clients/{id}", admin, s.deleteClient)
}

func (s *Server) createProfile(w http.ResponseWriter, r *http.Request) error {
	var req clients.ProfileRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	p, err := s.p.Clients.CreateProfile(r.Context(), principal(r), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, p)
	return nil
}

func (s *Server) createRegToken(w http.ResponseWriter, r *http.Request) error {
	var req clients.RegTokenRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	t, err := s.p.Clients.CreateRegistrationToken(r.Context(), principal(r), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, t)
	return nil
}

func (s *Server) registerClient(w http.ResponseWriter, r *http.Request) error {
	var req clients.RegisterRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	req.RemoteAddr = remoteHost(r)
	c, err := s.p.Clients.Register(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, c)
	return nil
}

func (s *Server) listClients(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.p.Clients.ListClients(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := make([]clients.ClientInfo, len(cs))
	for i, c := range cs {
		out[i] = c.Info()
	}
	writeJSON(w, http.StatusOK, map[string]any{"total": len(out), "resources": out})
	return nil
}

func (s *Server) getClient(w http.ResponseWriter, r *http.Request) error {
	c, err := s.p.Clients.GetClient(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c.Info())
	return nil
}

func (s *Server) deleteClient(w http.ResponseWriter, r *http.Request) error {
	if err := s.p.Clients.DeleteClient(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// clientLogin is the registered-client (mutual TLS) login: the certificate
// comes from the TLS connection, or from a trusted proxy's header.
func (s *Server) clientLogin(r *http.Request, clientID string) (identity.TokenResponse, error) {
	chain, err := s.clientCertificates(r)
	if err != nil {
		return identity.TokenResponse{}, err
	}
	return s.p.Clients.Login(r.Context(), clientID, chain)
}

// clientCertificates returns the certificates the client presented, leaf
// first. A certificate on the TLS connection itself always wins. Otherwise,
// when the connection comes from an address in Options.TrustedProxies, the
// proxy's ClientCertHeader is read: the URL-escaped PEM of the client's
// certificate (nginx's $ssl_client_escaped_cert), possibly followed by its
// chain. From any other address the header is ignored, since anyone could
// send it.
func (s *Server) clientCertificates(r *http.Request) ([]*x509.Certificate, error) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return r.TLS.PeerCertificates, nil
	}
	name := s.opts.ClientCertHeader
	if name == "" {
		name = DefaultClientCertHeader
	}
	h := r.Header.Get(name)
	if h == "" || !s.fromTrustedProxy(r) {
		return nil, nil
	}
	bad := fault.E(fault.Unauthenticated, "the forwarded client certificate is not a PEM certificate")
	text, err := url.PathUnescape(strings.TrimSpace(h))
	if err != nil {
		return nil, bad
	}
	var chain []*x509.Certificate
	rest := []byte(text)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, bad
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, bad
		}
		chain = append(chain, c)
	}
	if len(chain) == 0 {
		return nil, bad
	}
	return chain, nil
}

func (s *Server) fromTrustedProxy(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// remoteHost is the request's peer address without its port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
