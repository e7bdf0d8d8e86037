//go:build ignore

// mismatch writes a PFX holding the private key of one PEM file and the
// certificate of another (modern AES/PBKDF2 encoding, password
// "pfx-password"): go run mismatch.go key.pem cert.pem out.pfx.
package main

import (
	"crypto/x509"
	"encoding/pem"
	"log"
	"os"

	"software.sslmate.com/src/go-pkcs12"
)

func main() {
	if len(os.Args) != 4 {
		log.Fatal("usage: go run mismatch.go key.pem cert.pem out.pfx")
	}
	kb, err := os.ReadFile(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	cb, err := os.ReadFile(os.Args[2])
	if err != nil {
		log.Fatal(err)
	}
	kp, _ := pem.Decode(kb)
	cp, _ := pem.Decode(cb)
	if kp == nil || cp == nil {
		log.Fatal("not PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(kp.Bytes)
	if err != nil {
		log.Fatal(err)
	}
	cert, err := x509.ParseCertificate(cp.Bytes)
	if err != nil {
		log.Fatal(err)
	}
	pfx, err := pkcs12.Modern.Encode(key, cert, nil, "pfx-password")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(os.Args[3], pfx, 0o644); err != nil {
		log.Fatal(err)
	}
}
