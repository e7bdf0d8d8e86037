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
	"os"
	"os/signal"
	"syscall"

	"github.com/latchkey/latchkey/internal/serve"
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
	var flags serve.Flags
	flags.Register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cfg, err := flags.Finish(stdout, stderr)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve.Run(ctx, cfg)
}
