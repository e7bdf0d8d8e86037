package bench_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/vtoken"
)

// P9: PFX import of an RSA-2048 key (openssl's modern encoding: AES-256,
// PBKDF2 with 2048 iterations, SHA-256 MAC) on SQLite, at least 300
// imports/s. Each import decodes the PFX, checks the key and the
// certificate, seals the key, stores the certificate and its audit record
// (synchronous=FULL). The baseline is go-pkcs12's DecodeChain alone.

func vtokenEnv(b *testing.B, newE envMaker) (*env, identity.Principal, vtoken.Ref, []string, []byte) {
	b.Helper()
	e := newE(b, identity.OWASPMinimum())
	ctx := context.Background()
	u, err := e.p.Identity.CreateUser(ctx, e.admin, e.root.ID, "token-holder", "token-holder-password", nil)
	if err != nil {
		b.Fatal(err)
	}
	key := identity.Principal{Kind: identity.KindAPIKey, TenantID: e.root.ID, TenantCode: e.root.Code, APIKeyID: "bench", Areas: []string{identity.AreaProvisioning}}
	ref := vtoken.Ref{TenantID: e.root.ID, UserID: u.ID.String()}
	var toks []string
	for range vtoken.MaxTokensPerUser {
		id, err := e.p.VToken.CreateToken(ctx, key, ref, vtoken.V1)
		if err != nil {
			b.Fatal(err)
		}
		toks = append(toks, id)
	}
	pfx, err := os.ReadFile("../vtoken/testdata/rsa2048-modern.pfx")
	if err != nil {
		b.Fatal(err)
	}
	return e, key, ref, toks, pfx
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportImports reports throughput and the process CPU time per import
// (every goroutine's: decode, store, audit recorder, HTTP), from which the
// throughput of an otherwise idle machine follows: cores / cpu-ms.
func reportImports(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "imports/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/import")
}

func BenchmarkP9PFXImport(b *testing.B) { benchPFXImport(b, "sqlite", newEnv) }

// BenchmarkP9PFXImportPostgres is P9 with the platform on PostgreSQL (a
// fresh schema of $PLATFORM_POSTGRES_DSN); its sub-benchmarks are
// library-postgres and http-postgres.
func BenchmarkP9PFXImportPostgres(b *testing.B) { benchPFXImport(b, "postgres", newEnvPostgres) }

// benchPFXImport runs P9's baseline and its library and HTTP imports on
// envs newE makes; store names the sub-benchmarks.
func benchPFXImport(b *testing.B, store string, newE envMaker) {
	b.Run("baseline-DecodeChain", func(b *testing.B) {
		pfx, err := os.ReadFile("../vtoken/testdata/rsa2048-modern.pfx")
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, _, err := pkcs12.DecodeChain(pfx, "pfx-password"); err != nil {
					b.Error(err)
				}
			}
		})
		reportImports(b, cpu0)
	})
	b.Run("library-"+store, func(b *testing.B) {
		e, key, ref, toks, pfx := vtokenEnv(b, newE)
		var n atomic.Int64
		b.SetParallelism(4) // imports wait on the store's commits; let decodes overlap them
		b.ResetTimer()
		cpu0 := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r := ref
				r.TokenID = toks[int(n.Add(1))%len(toks)]
				if _, err := e.p.VToken.ImportPFX(context.Background(), key, r, vtoken.Bytes(pfx), vtoken.PINInput{Text: "pfx-password"}); err != nil {
					b.Error(err)
				}
			}
		})
		reportImports(b, cpu0)
	})
	b.Run("http-"+store, func(b *testing.B) {
		e, _, ref, toks, pfx := vtokenEnv(b, newE)
		_, apiKey, err := e.p.Identity.CreateAPIKey(context.Background(), e.admin, e.root.ID, "bench", "", []string{identity.AreaProvisioning})
		if err != nil {
			b.Fatal(err)
		}
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		fw, _ := w.CreateFormFile("pfxCertificate", "cert.pfx")
		fw.Write(pfx)
		w.Close()
		form, ct := body.Bytes(), w.FormDataContentType()
		base := e.srv.URL + "/VirtualToken/Provisioning/V1.0/Tenants/" + ref.TenantID + "/Users/" + ref.UserID + "/Tokens/"
		var n atomic.Int64
		b.SetParallelism(4) // imports wait on the store's commits; let decodes overlap them
		b.ResetTimer()
		cpu0 := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest("POST", base+toks[int(n.Add(1))%len(toks)]+"/Certificate", bytes.NewReader(form))
				req.Header.Set("Content-Type", ct)
				req.Header.Set("Authorization", apiKey)
				req.Header.Set("X-VirtualToken-CertificatePassword", "pfx-password")
				resp, err := e.client.Do(req)
				drain(b, resp, err)
			}
		})
		reportImports(b, cpu0)
	})
}
