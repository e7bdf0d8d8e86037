// Package serve runs the example server; it is a package so tests can start
// and stop it in-process.
package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-webauthn/webauthn/metadata"
	"go.opentelemetry.io/otel/trace"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/otelenv"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/postgres"
	"github.com/latchkey/latchkey/store/sqlite"
)

// Config configures Run.
type Config struct {
	Addr, TLSAddr string
	// DataDir holds the SQLite database (without PostgresDSN), the master
	// key file (without MasterKey), the TLS certificate and, by default,
	// the export archives.
	DataDir string
	// PostgresDSN, when set, keeps the data in PostgreSQL instead of
	// SQLite; several processes may then share the database. They must
	// share the master key (MasterKey, i.e. $PLATFORM_MASTER_KEY, or the
	// same master.key file) and the archive directory.
	PostgresDSN string
	// ArchiveDir is where audit export archives are written and served
	// from; "" means DataDir/archives. A job's archive is written by
	// whichever process claimed it and may be downloaded through any, so
	// processes sharing a database need a shared directory (a shared
	// volume) here.
	ArchiveDir string
	// ExportLeaseFor and ExportPollEvery tune the export worker (see
	// latchkey.Config); zero means the defaults.
	ExportLeaseFor, ExportPollEvery time.Duration
	// VaultLeaseFor and VaultPollEvery tune the vault's rotation pass (see
	// latchkey.Config); zero means the defaults (2 minutes, 1 minute).
	VaultLeaseFor, VaultPollEvery time.Duration
	// SigningKeyRotation is the period of the platform's signing keys
	// (-signing-key-rotation, default 720h); 0 turns it off.
	SigningKeyRotation    time.Duration
	AllowPrivateEndpoints bool
	// ClientCAFile is a PEM file of CAs whose certificates authenticate
	// tls_client_auth OAuth clients, besides the platform's client CA.
	ClientCAFile string
	// RequirePAR makes every authorization request a pushed one (RFC 9126).
	RequirePAR bool
	// PublicURL is the issuer and the origin of every absolute URL the
	// server writes; "" means http://<Addr> (see DefaultPublicURL).
	PublicURL string
	// TLSPublicURL is the HTTPS listener's external origin, named by the
	// metadata's mtls_endpoint_aliases; "" means https://<TLSAddr>.
	TLSPublicURL  string
	AdminPassword string // "" means generate on first start
	MasterKey     string // base64; "" means the data directory's master.key
	Logger        *slog.Logger
	Stdout        io.Writer
	// Ready, when set, receives the bound addresses once the server serves.
	Ready func(httpAddr, tlsAddr string)
	// MetricsAddr, when set, serves GET /metrics (Prometheus text format)
	// on a listener of its own, apart from the API so that tenants cannot
	// read it.
	MetricsAddr string
	// MetricsReady, when set, receives the metrics listener's bound address.
	MetricsReady func(addr string)

	// FIDOMetadataFile is a FIDO Metadata Service BLOB for tenants whose
	// attestation policy is "trusted"; FIDOMetadataRootFile its trust
	// anchor (PEM or base64 DER), "" meaning the FIDO Alliance's root.
	FIDOMetadataFile, FIDOMetadataRootFile string

	// GuideIdle and GuideClosed are the interactive guide's session limits
	// (see latchkey.Config); zero means 10 and 30 minutes.
	GuideIdle, GuideClosed time.Duration

	// InstanceName names this process in the leases it holds (see
	// latchkey.Config.InstanceName).
	InstanceName string

	// SkipMigrate starts without applying pending migrations (`latchkey
	// serve --migrate=false`): until `latchkey migrate up` has run, every
	// route but /healthz answers 503, /readyz included.
	SkipMigrate bool

	// TracerProvider, when set, is where the platform's spans go. Nil
	// means the one the OTEL_* environment variables describe (package
	// otelenv: off unless an OTLP endpoint or exporter is set), which Run
	// shuts down, flushing its spans, when it returns.
	TracerProvider trace.TracerProvider
}

// Run serves until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return err
	}
	key, err := masterKey(cfg)
	if err != nil {
		return err
	}
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	swap := new(handlerSwap)
	srv := httpapi.NewHTTPServer(cfg.Addr, swap, log)
	errc := make(chan error, 4)
	serving := false
	if cfg.SkipMigrate {
		if err := st.Ready(ctx); err != nil {
			swap.set(waitingHandler())
			go func() { errc <- srv.Serve(ln) }()
			serving = true
			log.Warn("migrations pending: serving 503 until `latchkey migrate up` has run", "reason", err)
			if err := waitMigrated(ctx, st); err != nil {
				return err
			}
			log.Info("migrations applied: starting")
		}
	}
	public := cfg.PublicURL
	if public == "" {
		var wildcard bool
		public, wildcard = DefaultPublicURL("http", ln.Addr().String())
		if wildcard {
			log.Warn("the listen address has no host name: the issuer and the server's URLs use localhost; clients elsewhere need -public-url", "addr", cfg.Addr, "issuer", public)
		}
	}
	archives := cfg.ArchiveDir
	if archives == "" {
		archives = filepath.Join(cfg.DataDir, "archives")
	}
	mds, err := loadFIDOMetadata(cfg.FIDOMetadataFile, cfg.FIDOMetadataRootFile)
	if err != nil {
		return err
	}
	tp := cfg.TracerProvider
	if tp == nil {
		envTP, err := otelenv.FromEnv(ctx, "")
		if err != nil {
			return err
		}
		if envTP != nil {
			// Deferred before the platform's Close, so it runs after it:
			// the spans of the shutdown are exported too.
			defer func() {
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := envTP.Shutdown(sctx); err != nil {
					log.Warn("tracing: spans not flushed at exit", "err", err)
				}
			}()
			tp = envTP
			log.Info("tracing on: exporting spans over OTLP (OTEL_* environment)")
		}
	}
	var clientCAs *x509.CertPool
	if cfg.ClientCAFile != "" {
		pemCAs, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			return fmt.Errorf("-client-ca: %w", err)
		}
		clientCAs = x509.NewCertPool()
		if !clientCAs.AppendCertsFromPEM(pemCAs) {
			return fmt.Errorf("-client-ca: %s holds no PEM certificate", cfg.ClientCAFile)
		}
	}
	p, err := latchkey.New(ctx, latchkey.Config{Store: st, ClientCAs: clientCAs, RequirePAR: cfg.RequirePAR, MasterKey: key, Logger: log, Issuer: public, TracerProvider: tp,
		ArchiveDir: archives, InstanceName: cfg.InstanceName, ExportLeaseFor: cfg.ExportLeaseFor, ExportPollEvery: cfg.ExportPollEvery, FIDOMetadata: mds,
		VaultLeaseFor: cfg.VaultLeaseFor, VaultPollEvery: cfg.VaultPollEvery, SigningKeyRotation: signingRotation(cfg.SigningKeyRotation),
		GuideIdleTimeout: cfg.GuideIdle, GuideClosedTimeout: cfg.GuideClosed,
		AllowPrivateEndpoints: cfg.AllowPrivateEndpoints})
	if err != nil {
		if cfg.PostgresDSN != "" {
			// Most likely another process sealed the keys with another
			// master key (e.g. each generated its own master.key).
			return fmt.Errorf("%w; every process sharing a PostgreSQL database needs the same master key: set $PLATFORM_MASTER_KEY (or share master.key) in all of them", err)
		}
		return err
	}
	defer p.Close()
	boot, err := p.Bootstrap(ctx, cfg.AdminPassword)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}

	var tln net.Listener
	if cfg.TLSAddr != "" {
		if tln, err = net.Listen("tcp", cfg.TLSAddr); err != nil {
			return err
		}
		defer tln.Close()
	}
	opts := httpapi.Defaults()
	opts.PublicURL = public
	opts.Logger = log
	if tln != nil {
		opts.MTLSURL = cfg.TLSPublicURL
		if opts.MTLSURL == "" {
			opts.MTLSURL, _ = DefaultPublicURL("https", tln.Addr().String())
		}
	}
	h := httpapi.New(p, opts)

	swap.set(h)
	if !serving {
		go func() { errc <- srv.Serve(ln) }()
	}

	var tlsSrv *http.Server
	tlsAddr := ""
	if tln != nil {
		cert, err := serverCertificate(cfg.DataDir)
		if err != nil {
			return err
		}
		tlsAddr = tln.Addr().String()
		tlsSrv = httpapi.NewHTTPServer(cfg.TLSAddr, h, log)
		tlsSrv.TLSConfig = TLSConfig(cert)
		// ServeTLS adds h2 to the offered protocols (ALPN), so clients
		// speak HTTP/2 here.
		go func() { errc <- tlsSrv.ServeTLS(tln, "", "") }()
	}
	var metricsSrv *http.Server
	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("-metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", p.MetricsHandler())
		metricsSrv = httpapi.NewHTTPServer(cfg.MetricsAddr, mux, log)
		go func() { errc <- metricsSrv.Serve(mln) }()
		log.Info("serving metrics", "addr", mln.Addr().String())
		if cfg.MetricsReady != nil {
			cfg.MetricsReady(mln.Addr().String())
		}
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	go func() { errc <- p.Run(runCtx) }()

	log.Info("serving", "http", ln.Addr().String(), "https", tlsAddr, "data", cfg.DataDir, "postgres", cfg.PostgresDSN != "", "archives", archives)
	printWelcome(cfg.Stdout, ln.Addr().String(), tlsAddr, boot.Created, boot.Password, cfg.AdminPassword != "")
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String(), tlsAddr)
	}

	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	log.Info("shutting down")
	srv.RegisterOnShutdown(p.Notify.StopWaiting) // long polls answer now rather than hold the shutdown
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := []error{srv.Shutdown(shutdownCtx)}
	if tlsSrv != nil {
		errs = append(errs, tlsSrv.Shutdown(shutdownCtx))
	}
	if metricsSrv != nil {
		errs = append(errs, metricsSrv.Shutdown(shutdownCtx))
	}
	cancelRun()
	return errors.Join(errs...)
}

// DefaultPublicURL is the origin of a listener bound to addr (host:port)
// for clients to use: scheme://addr, with a wildcard or empty host (":8080",
// "0.0.0.0:8080", "[::]:8080") replaced by localhost, since no client can
// reach "[::]" or match it as an issuer. wildcard reports that replacement.
func DefaultPublicURL(scheme, addr string) (u string, wildcard bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + "://" + addr, false
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host, wildcard = "localhost", true
	}
	return scheme + "://" + net.JoinHostPort(host, port), wildcard
}

// TLSConfig is the HTTPS listener's TLS configuration: Mozilla's
// "intermediate" profile (TLS 1.3, and TLS 1.2 with ECDHE and AEAD suites
// only: no CBC, no RSA key exchange), HTTP/2 and HTTP/1.1 through ALPN, and
// client certificates requested but optional: the registered-client login
// and certificate-bound tokens check them against the registration.
func TLSConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		CipherSuites: []uint16{ // TLS 1.2 only; TLS 1.3 suites are all AEAD and not configurable
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		NextProtos: []string{"h2", "http/1.1"},
		ClientAuth: tls.RequestClientCert,
	}
}

// Store is what Run keeps its data in: a platform store it closes at exit.
type Store interface {
	latchkey.Store
	Close() error
	Ready(ctx context.Context) error
}

// handlerSwap serves the handler last set: the waiting one while
// migrations are pending, then the platform's.
type handlerSwap struct{ h atomic.Pointer[http.Handler] }

func (s *handlerSwap) set(h http.Handler) { s.h.Store(&h) }

func (s *handlerSwap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	http.Error(w, "starting", http.StatusServiceUnavailable)
}

// waitingHandler answers while migrations are pending: /healthz 200 (the
// process lives), everything else 503, /readyz with the readiness body.
func waitingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == "/healthz" {
			io.WriteString(w, `{"status":"ok"}`+"\n")
			return
		}
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"status":"unavailable","reason":"migrations are pending: run latchkey migrate up"}`+"\n")
	})
}

// waitMigrated polls the store until every migration is applied (by
// `latchkey migrate up` in another process).
func waitMigrated(ctx context.Context, st Store) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if st.Ready(ctx) == nil {
				return nil
			}
		}
	}
}

// OpenStore opens the store cfg names: PostgreSQL at cfg.PostgresDSN when
// set (migrated at open; several processes may share it), else the SQLite
// file latchkey.db in cfg.DataDir.
func OpenStore(ctx context.Context, cfg Config) (Store, error) {
	migrate := !cfg.SkipMigrate
	if cfg.PostgresDSN != "" {
		st, err := postgres.Open(ctx, cfg.PostgresDSN, postgres.Options{Migrate: &migrate})
		if err != nil {
			return nil, fmt.Errorf("-postgres: %w", err)
		}
		return st, nil
	}
	return sqlite.Open(ctx, filepath.Join(cfg.DataDir, "latchkey.db"), sqlite.Options{Migrate: &migrate})
}

func printWelcome(w io.Writer, addr, tlsAddr string, created bool, generated string, fromEnv bool) {
	fmt.Fprintf(w, "Latchkey is serving on http://%s", addr)
	if tlsAddr != "" {
		fmt.Fprintf(w, " and https://%s (client certificates accepted)", tlsAddr)
	}
	fmt.Fprintln(w)
	password := "<the admin password>"
	switch {
	case generated != "":
		password = generated
		fmt.Fprintf(w, "Created the root tenant and the user \"admin\" with the generated password %s (shown only now).\n", generated)
	case created && fromEnv:
		password = "$PLATFORM_ADMIN_PASSWORD"
		fmt.Fprintln(w, "Created the root tenant and the user \"admin\" with the password in $PLATFORM_ADMIN_PASSWORD.")
	}
	body := fmt.Sprintf(`'{"name":"admin","password":"%s","auth_domain":"root"}'`, password)
	if password == "$PLATFORM_ADMIN_PASSWORD" { // double quotes, so the shell expands it
		body = `"{\"name\":\"admin\",\"password\":\"$PLATFORM_ADMIN_PASSWORD\",\"auth_domain\":\"root\"}"`
	}
	if tlsAddr != "" {
		fmt.Fprintf(w, "Interactive API guide: https://%s/guide/ (or http://%s/guide/)\n", tlsAddr, addr)
	} else {
		fmt.Fprintf(w, "Interactive API guide: http://%s/guide/\n", addr)
	}
	fmt.Fprintf(w, "Log in:\n  curl -s http://%s/api/v1/auth/tokens/ -H 'Content-Type: application/json' \\\n    -d %s\n", addr, body)
}

// masterKey returns the configured master key, or the data directory's
// master.key, creating it (mode 0600) on first start.
func masterKey(cfg Config) ([]byte, error) {
	if cfg.MasterKey != "" {
		return seal.ParseKey(cfg.MasterKey)
	}
	path := filepath.Join(cfg.DataDir, "master.key")
	b, err := os.ReadFile(path)
	if err == nil {
		return seal.ParseKey(string(b))
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	k := seal.NewKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	return k, f.Close()
}

// serverCertificate loads the data directory's self-signed TLS certificate,
// creating it on first start.
func serverCertificate(dir string) (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if c, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil {
		return c, nil
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "latchkey localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(2, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return tls.Certificate{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(certPath, keyPath)
}

// loadFIDOMetadata loads the FIDO Metadata Service BLOB in file (none when
// file is ""), verified against the root certificate in rootFile (PEM or
// base64 DER; "" means the FIDO Alliance's production root).
func loadFIDOMetadata(file, rootFile string) (metadata.Provider, error) {
	if file == "" {
		return nil, nil
	}
	root := ""
	if rootFile != "" {
		b, err := os.ReadFile(rootFile)
		if err != nil {
			return nil, err
		}
		if blk, _ := pem.Decode(b); blk != nil {
			root = base64.StdEncoding.EncodeToString(blk.Bytes)
		} else {
			root = strings.TrimSpace(string(b))
		}
	}
	mds, err := authenticator.LoadMetadataFile(file, root)
	if err != nil {
		return nil, fmt.Errorf("-fido-mds: %w", err)
	}
	return mds, nil
}

// signingRotation maps -signing-key-rotation to the platform's Config:
// 0 (off) is a negative period there, where zero means the default.
func signingRotation(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// DefaultSigningKeyRotation is -signing-key-rotation's default.
const DefaultSigningKeyRotation = latchkey.DefaultSigningKeyRotation
