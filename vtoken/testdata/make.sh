#!/bin/sh
# Regenerates the PFX fixtures of vtoken's tests with openssl (3.x).
# Run from this directory: sh make.sh. Every PFX password is "pfx-password"
# except nopass.pfx, which has none. Keys and certificates are throwaway.
set -eu
PW=pass:pfx-password
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
days=36500

# A chain: root CA -> intermediate CA -> leaf (RSA-2048).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/root.key" -out "$tmp/root.crt" -days $days \
  -subj "/CN=Latchkey Test Root" -addext basicConstraints=critical,CA:true 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$tmp/int.key" -out "$tmp/int.csr" -subj "/CN=Latchkey Test Intermediate" 2>/dev/null
printf 'basicConstraints=critical,CA:true\n' > "$tmp/ca.ext"
openssl x509 -req -in "$tmp/int.csr" -CA "$tmp/root.crt" -CAkey "$tmp/root.key" -set_serial 0x1001 -days $days \
  -extfile "$tmp/ca.ext" -out "$tmp/int.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$tmp/leaf.key" -out "$tmp/leaf.csr" -subj "/CN=Token User/O=Latchkey" 2>/dev/null
openssl x509 -req -in "$tmp/leaf.csr" -CA "$tmp/int.crt" -CAkey "$tmp/int.key" -set_serial 0xABCDEF0123 -days $days \
  -out "$tmp/leaf.crt" 2>/dev/null
cat "$tmp/int.crt" "$tmp/root.crt" > "$tmp/chain.crt"

# Self-signed RSA-2048 and RSA-4096, EC P-256.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/r2.key" -out "$tmp/r2.crt" -days $days -subj "/CN=RSA 2048" -set_serial 0x0A2048 2>/dev/null
openssl req -x509 -newkey rsa:4096 -nodes -keyout "$tmp/r4.key" -out "$tmp/r4.crt" -days $days -subj "/CN=RSA 4096" -set_serial 0x0B4096 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/ec.key" -out "$tmp/ec.crt" -days $days -subj "/CN=EC P-256" 2>/dev/null

# Modern (AES-256-CBC, PBKDF2, SHA-256 MAC: OpenSSL 3's default) and legacy (RC2/3DES, SHA-1).
openssl pkcs12 -export -inkey "$tmp/r2.key" -in "$tmp/r2.crt" -passout $PW -out rsa2048-modern.pfx
openssl pkcs12 -export -legacy -inkey "$tmp/r2.key" -in "$tmp/r2.crt" -passout $PW -out rsa2048-legacy.pfx
openssl pkcs12 -export -inkey "$tmp/r4.key" -in "$tmp/r4.crt" -passout $PW -out rsa4096-modern.pfx
openssl pkcs12 -export -legacy -inkey "$tmp/r4.key" -in "$tmp/r4.crt" -passout $PW -out rsa4096-legacy.pfx
openssl pkcs12 -export -inkey "$tmp/r2.key" -in "$tmp/r2.crt" -passout pass: -out nopass.pfx
openssl pkcs12 -export -inkey "$tmp/ec.key" -in "$tmp/ec.crt" -passout $PW -out ec.pfx
openssl pkcs12 -export -inkey "$tmp/leaf.key" -in "$tmp/leaf.crt" -certfile "$tmp/chain.crt" -passout $PW -out chain.pfx

# Key of one pair with the certificate of another. openssl pkcs12 -export
# refuses to write such a file ("No cert in -in file matches private key"),
# so mismatch.go writes it with go-pkcs12 from openssl's PEM files.
go run mismatch.go "$tmp/r2.key" "$tmp/r4.crt" mismatch.pfx
