package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/latchkey/latchkey/audit"
)

func (a *app) auditCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Export the audit log and verify exports offline"}
	cmd.AddCommand(a.auditExportCommand(), a.auditVerifyCommand())
	return cmd
}

type exportJob struct {
	JobID          string  `json:"jobId"`
	State          string  `json:"state"`
	Location       *string `json:"location"`
	DigestLocation *string `json:"digestLocation"`
	Error          string  `json:"error"`
	RecordsWritten *int64  `json:"recordsWritten"`
}

func (a *app) auditExportCommand() *cobra.Command {
	var cc clientCreds
	var tenant, from, to, source, resourceID, out, job, jwks string
	cmd := &cobra.Command{
		Use:   "export --tenant T [--from --to --source --resource-id] [--out DIR]",
		Short: "Run an export job, download <jobId>.zip and <jobId>.integrity.json (resuming), then verify them",
		Long: `Runs an audit-log export with the OAuth client of LATCHKEY_CLIENT_ID (scope
audit:export), downloads the archive and its integrity file into --out with
Range requests that resume a cut download, and verifies them against the
server's JWKS (or --jwks). Interrupted, it prints the --job that resumes it.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := a.anon()
			if err != nil {
				return err
			}
			id, secret, err := cc.resolve(a)
			if err != nil {
				return err
			}
			t, err := c.clientCredentials(ctx, id, secret, nil)
			if err != nil {
				return err
			}
			if tenant != "" {
				claims, _ := jwtClaims(t.AccessToken)
				if !tokenInTenant(claims, tenant) {
					return usageError("the client %s does not belong to tenant %s", id, tenant)
				}
			}
			c.token = t.AccessToken
			if job == "" {
				if from == "" {
					from = "1970-01-01T00:00:00Z"
				}
				if to == "" {
					to = time.Now().UTC().Format(time.RFC3339)
				}
				body := map[string]string{"from": from, "to": to}
				if source != "" {
					body["source"] = source
				}
				if resourceID != "" {
					body["resourceId"] = resourceID
				}
				var j exportJob
				if err := c.do(ctx, "POST", "/audit/v1/audit-log-exports", body, &j); err != nil {
					return err
				}
				job = j.JobID
				fmt.Fprintf(a.stderr, "export job %s started\n", job)
			}
			j, err := a.waitExport(ctx, c, job)
			if err != nil {
				return a.exportInterrupted(ctx, job, err)
			}
			if j.State != "SUCCEEDED" {
				return fmt.Errorf("export job %s %s: %s", job, j.State, j.Error)
			}
			if err := os.MkdirAll(out, 0o700); err != nil {
				return err
			}
			archive := filepath.Join(out, job+".zip")
			integrity := filepath.Join(out, job+".integrity.json")
			if err := a.download(ctx, c, *j.Location, archive); err != nil {
				return a.exportInterrupted(ctx, job, err)
			}
			if err := a.download(ctx, c, *j.DigestLocation, integrity); err != nil {
				return a.exportInterrupted(ctx, job, err)
			}
			fmt.Fprintf(a.stderr, "wrote %s and %s\n", archive, integrity)
			src := jwks
			if src == "" {
				src = c.base + "/.well-known/jwks.json"
			}
			return a.verifyExport(ctx, archive, integrity, src, map[string]any{"jobId": job, "archive": archive, "integrity": integrity})
		},
	}
	cc.register(cmd)
	a.tenantFlag(cmd, &tenant)
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "start of the range, RFC 3339 (default the beginning)")
	f.StringVar(&to, "to", "", "end of the range, RFC 3339 (default now)")
	f.StringVar(&source, "source", "", "one service kind, e.g. latchkey-platform")
	f.StringVar(&resourceID, "resource-id", "", "one service instance")
	f.StringVar(&out, "out", ".", "directory the files are written to")
	f.StringVar(&job, "job", "", "resume the export job of this id instead of starting one")
	f.StringVar(&jwks, "jwks", "", "JWKS file or URL to verify against (default the server's /.well-known/jwks.json)")
	return cmd
}

// tokenInTenant reports whether an access token's claims name the tenant
// (by id or code), or name no tenant at all.
func tokenInTenant(claims map[string]any, tenant string) bool {
	for _, k := range []string{"tenant", "tenantId", "tenant_id", "tid"} {
		if v, ok := claims[k].(string); ok {
			return strings.EqualFold(v, tenant)
		}
	}
	return true
}

func (a *app) exportInterrupted(ctx context.Context, job string, err error) error {
	if ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "resume with --job %s\n", job)
		return withCode(exitInterrupted, errors.New("interrupted"))
	}
	return err
}

// waitExport polls the job until it is final: a spinner on a terminal,
// else a plain line every 10 s.
func (a *app) waitExport(ctx context.Context, c *conn, job string) (exportJob, error) {
	prog := a.newProgress(-1, "export")
	start := time.Now()
	lastLine := start
	for {
		var j exportJob
		if err := c.do(ctx, "GET", "/audit/v1/audit-log-exports/"+job, nil, &j); err != nil {
			return j, err
		}
		if j.State != "ACTIVE" {
			if prog.bar != nil {
				prog.bar.Finish()
			}
			return j, nil
		}
		written := "?"
		if j.RecordsWritten != nil {
			written = fmt.Sprint(*j.RecordsWritten)
		}
		if prog.bar != nil {
			prog.bar.Describe("export " + job + ": ACTIVE, " + written + " records")
			prog.bar.Add(1)
		} else if time.Since(lastLine) >= 10*time.Second {
			fmt.Fprintf(a.stderr, "export: job %s ACTIVE for %s, %s records written\n", job, time.Since(start).Round(time.Second), written)
			lastLine = time.Now()
		}
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// download fetches a signed URL (no bearer) into path, through path.part:
// a part left by an interrupted run is resumed with a Range request.
func (a *app) download(ctx context.Context, c *conn, rawURL, path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil // done by an earlier run
	}
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", rawURL, nil)
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		// The whole file: start the part again.
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		have = 0
	case http.StatusRequestedRangeNotSatisfiable:
		// The part is whole already.
	default:
		return readAPIError(resp)
	}
	total := resp.ContentLength
	if total >= 0 {
		total += have
	}
	prog := a.newProgress(total, "download")
	var w io.Writer = f
	if prog.bar != nil {
		prog.bar.Set64(have)
		w = io.MultiWriter(f, prog.bar)
	}
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		if _, err := io.Copy(w, resp.Body); err != nil {
			return err
		}
	}
	if prog.bar != nil {
		prog.bar.Finish()
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(part, path)
}

// loadJWKS reads a JWKS from a file or an http(s) URL.
func (a *app) loadJWKS(ctx context.Context, src string) ([]byte, error) {
	if strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "http://") {
		if _, err := checkURL(src); err != nil {
			return nil, err
		}
		hc, err := a.httpClient()
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, "GET", src, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, readAPIError(resp)
		}
		return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	return os.ReadFile(src)
}

// verifyExport checks an archive and its integrity file offline against
// the JWKS: exit 7 when they do not verify.
func (a *app) verifyExport(ctx context.Context, archive, integrity, jwksSrc string, extra map[string]any) error {
	b, err := a.loadJWKS(ctx, jwksSrc)
	if err != nil {
		return fmt.Errorf("--jwks: %w", err)
	}
	keys, err := audit.KeysFromJWKS(b)
	if err != nil {
		return err
	}
	for _, p := range []string{archive, integrity} {
		if _, err := os.Stat(p); err != nil {
			return err
		}
	}
	rep, err := audit.VerifyArchiveFile(archive, integrity, keys)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err
		}
		return withCode(exitVerify, fmt.Errorf("verification failed: %w", err))
	}
	if a.output == "json" {
		out := map[string]any{"verified": true, "count": rep.Count, "runs": rep.Runs, "filtered": rep.Filtered, "digest": rep.Digest}
		for k, v := range extra {
			out[k] = v
		}
		return a.printJSON(out)
	}
	fmt.Fprintf(a.stdout, "verified: %d records of tenant %s, %s to %s, job %s, signed by key %s\n", rep.Count, rep.Digest.TenantID, rep.Digest.From, rep.Digest.To, rep.Digest.JobID, digestKeyID(rep.Digest))
	return nil
}

func digestKeyID(d audit.Digest) string {
	return d.KeyID
}

func (a *app) auditVerifyCommand() *cobra.Command {
	var jwks string
	cmd := &cobra.Command{
		Use:   "verify ARCHIVE [INTEGRITY] --jwks FILE|URL",
		Short: "Verify an export offline (audit.VerifyArchiveFile); exit 7 when it does not verify",
		Args:  args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if jwks == "" {
				return usageError("--jwks is required: the JWKS file or URL the export was signed under")
			}
			archive := argv[0]
			integrity := strings.TrimSuffix(archive, ".zip") + ".integrity.json"
			if len(argv) == 2 {
				integrity = argv[1]
			}
			return a.verifyExport(cmd.Context(), archive, integrity, jwks, nil)
		},
	}
	cmd.Flags().StringVar(&jwks, "jwks", "", "JWKS file or URL")
	return cmd
}
