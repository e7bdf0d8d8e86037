// Command embed shows Latchkey inside another Go service: the service keeps
// its own routes, mounts Latchkey's HTTP API beside them, and guards its own
// endpoint with the platform JWTs Latchkey issues.
//
//	go run ./examples/embed            # listens on 127.0.0.1:9090
//	curl -s 127.0.0.1:9090/api/v1/auth/tokens/ -H 'Content-Type: application/json' \
//	     -d '{"name":"admin","password":"embed-admin-password"}'
//	curl -s 127.0.0.1:9090/hello -H "Authorization: Bearer <jwt>"
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/httpapi"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// A real service would use store/sqlite or store/postgres and a master
	// key from its secret store; the in-memory store keeps this short.
	p, h, err := newService(ctx, latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey()}, "embed-admin-password")
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	go p.Run(ctx)
	srv := httpapi.NewHTTPServer("127.0.0.1:9090", h, p.Logger())
	go func() { <-ctx.Done(); srv.Shutdown(context.Background()) }()
	log.Printf("serving on http://%s", srv.Addr)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

// newService builds the platform and the service's handler: Latchkey's API
// for every path the service does not claim itself, and the service's own
// GET /hello for callers holding a platform JWT.
func newService(ctx context.Context, cfg latchkey.Config, adminPassword string) (*latchkey.Platform, http.Handler, error) {
	p, err := latchkey.New(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := p.Bootstrap(ctx, adminPassword); err != nil {
		p.Close()
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", httpapi.New(p, httpapi.Defaults()))
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		caller, err := p.Identity.Authenticate(r.Context(), token, identity.PlatformToken)
		if !strings.EqualFold(scheme, "Bearer") || err != nil {
			http.Error(w, "a platform JWT is required", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "hello, user %s of tenant %s\n", caller.UserID, caller.TenantCode)
	})
	return p, mux, nil
}
