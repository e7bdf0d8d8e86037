// Command server runs Latchkey: every API area on one plain HTTP listener
// and one HTTPS listener that accepts client certificates (for registered
// clients' mutual-TLS login). Data lives in a SQLite file in the data
// directory, or in PostgreSQL with -postgres.
//
//	go run ./examples/server [-addr 127.0.0.1:8080] [-tls-addr 127.0.0.1:8443] [-data ./data]
//	                         [-postgres DSN] [-archive-dir DIR] [-allow-private-endpoints]
//	                         [-metrics-addr 127.0.0.1:9090]
//
// Several processes may serve one PostgreSQL database behind a load
// balancer (see docs/deployment.md). They need the same master key
// ($PLATFORM_MASTER_KEY, base64 of 32 bytes; a process whose key cannot
// open the stored keys refuses to start) and one shared -archive-dir.
//
// On first start with an empty data directory it creates the root tenant and
// the user "admin" (password from $PLATFORM_ADMIN_PASSWORD, else generated
// and printed once) and prints how to log in.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/latchkey/latchkey/examples/server/serve"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg serve.Config
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "plain HTTP listen address")
	fs.StringVar(&cfg.TLSAddr, "tls-addr", "127.0.0.1:8443", "HTTPS listen address (client certificates accepted); empty disables")
	fs.StringVar(&cfg.DataDir, "data", "./data", "data directory: SQLite database, master key, TLS certificate")
	fs.StringVar(&cfg.PostgresDSN, "postgres", "", "PostgreSQL DSN; when set, data is kept there instead of SQLite")
	fs.StringVar(&cfg.ArchiveDir, "archive-dir", "", "audit export archives (default <data>/archives); processes sharing a database must share it")
	fs.DurationVar(&cfg.ExportLeaseFor, "export-lease", 0, "export job lease; a dead process's job is taken over when it lapses (default 3s, renewed every third of it)")
	fs.DurationVar(&cfg.ExportPollEvery, "export-poll", 0, "how often an idle export worker looks for jobs (default 1s; PostgreSQL wakes it sooner)")
	fs.DurationVar(&cfg.VaultLeaseFor, "vault-lease", 0, "vault rotation pass: how long a process holds the keys it claimed (default 2m); a dead process's keys are taken over when it lapses")
	fs.DurationVar(&cfg.VaultPollEvery, "vault-poll", 0, "vault rotation pass and encryption counters: how often they run (default 1m)")
	fs.DurationVar(&cfg.SigningKeyRotation, "signing-key-rotation", serve.DefaultSigningKeyRotation, "period of the platform's signing keys (platform-jwt, platform-oidc-rs256); each new version is in the JWKS 10 minutes before it signs; 0 turns it off")
	fs.StringVar(&cfg.InstanceName, "instance", "", "names this process in the leases it holds (lease_owner: the name, a dash and a random id)")
	fs.BoolVar(&cfg.AllowPrivateEndpoints, "allow-private-endpoints", false, "let event-stream endpoints and OAuth clients' jwks_uri be on loopback or private addresses")
	fs.StringVar(&cfg.ClientCAFile, "client-ca", "", "PEM file of CAs whose certificates authenticate tls_client_auth OAuth clients (besides the platform's client CA)")
	fs.BoolVar(&cfg.RequirePAR, "require-par", false, "every authorization request must be pushed first (RFC 9126 PAR)")
	fs.DurationVar(&cfg.GuideIdle, "guide-idle", 0, "interactive guide: logout after this long without activity while open (default 10m)")
	fs.DurationVar(&cfg.GuideClosed, "guide-closed", 0, "interactive guide: session end after the last login once the window is closed (default 30m)")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "external URL of the plain listener and the token issuer (default http://<addr>, a wildcard host as localhost)")
	fs.StringVar(&cfg.TLSPublicURL, "tls-public-url", "", "external URL of the HTTPS listener, for the metadata's mtls_endpoint_aliases (default https://<tls-addr>)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "listen address of GET /metrics (Prometheus); empty disables; keep it off the public network")
	fs.StringVar(&cfg.FIDOMetadataFile, "fido-mds", "", "FIDO Metadata Service BLOB file, for tenants whose attestation policy is trusted")
	fs.StringVar(&cfg.FIDOMetadataRootFile, "fido-mds-root", "", "trust anchor of the -fido-mds BLOB, PEM or base64 DER (default the FIDO Alliance root)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.AdminPassword = os.Getenv("PLATFORM_ADMIN_PASSWORD")
	cfg.MasterKey = os.Getenv("PLATFORM_MASTER_KEY")
	cfg.Stdout = stdout

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve.Run(ctx, cfg)
}
