// Command bare is P1's baseline as a process of its own: a bare net/http
// handler that parses the token request's form and signs one ES256 JWT per
// request, as BenchmarkP1TokenEndpoint's in-process baseline does. It lets
// bench/p1wrk/run.sh measure P1 with wrk, a client outside the measured
// process, side by side with Latchkey and, when given, Ory Hydra.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18099", "listen address")
	flag.Parse()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /oauth/v1/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		now := time.Now()
		tok, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
			"sub": r.Form.Get("client_id"), "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "audit:export",
		}).SignedString(key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
