package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/internal/serve"
)

func (a *app) serveCommand() *cobra.Command {
	var flags serve.Flags
	gfs := flag.NewFlagSet("serve", flag.ContinueOnError)
	flags.Register(gfs)
	migrate := true
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the server (the example server's flags, and --migrate)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := flags.Finish(a.stdout, a.stderr)
			if err != nil {
				return usageError("%v", err)
			}
			cfg.SkipMigrate = !migrate
			return serve.Run(cmd.Context(), cfg)
		},
	}
	cmd.Flags().AddGoFlagSet(gfs)
	cmd.Flags().BoolVar(&migrate, "migrate", true, "apply pending migrations at start; with --migrate=false /readyz answers 503 until `latchkey migrate up` has run")
	return cmd
}

func (a *app) loginCommand() *cobra.Command {
	var name, domain string
	var stdin bool
	cmd := &cobra.Command{
		Use:   "login --url URL --name NAME [--auth-domain D] [--password-stdin]",
		Short: "Log in with a password and keep the session in the profile",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return usageError("--name is required")
			}
			c, err := a.anon()
			if err != nil {
				return err
			}
			password, err := a.secret("Password for "+name+": ", "--password-stdin", stdin)
			if err != nil {
				return err
			}
			resp, err := a.passwordLogin(cmd.Context(), c, name, password, domain, stdin)
			if err != nil {
				return err
			}
			if err := a.writeProfile(profile{URL: c.base, AuthDomain: domain, Name: name, JWT: resp.JWT, RefreshToken: resp.RefreshToken}); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "Logged in to %s as %s (auth domain %s)\n", c.base, name, domain)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "user name")
	cmd.Flags().StringVar(&domain, "auth-domain", "root", "the tenant's code (auth_domain)")
	cmd.Flags().BoolVar(&stdin, "password-stdin", false, "read the password from stdin's first line (and a second factor's code, when asked, from the second)")
	return cmd
}

// mfaRefusal is the 403 of a password login that needs more (API-mfa.md).
type mfaRefusal struct {
	CodeDesc           string   `json:"codeDesc"`
	Message            string   `json:"message"`
	MFAToken           string   `json:"mfa_token"`
	Factors            []string `json:"factors"`
	EnrollmentDeadline string   `json:"enrollment_deadline"`
}

// passwordLogin signs in with a password and, when the account has a
// second factor, takes the second step with a one-time code or a
// recovery code: prompted for on the terminal, or stdin's next line with
// --password-stdin. A passkey as the only factor, or a factor still to
// enrol, cannot be done here: the login exits 3 saying where to do it.
func (a *app) passwordLogin(ctx context.Context, c *conn, name, password, domain string, fromStdin bool) (identity.TokenResponse, error) {
	var tok identity.TokenResponse
	resp, err := c.send(ctx, "POST", "/api/v1/auth/tokens/", "application/json", map[string]string{"name": name, "password": password, "auth_domain": domain})
	if err != nil {
		return tok, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return tok, json.NewDecoder(resp.Body).Decode(&tok)
	}
	if resp.StatusCode != http.StatusForbidden {
		return tok, readAPIError(resp)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var ref mfaRefusal
	if json.Unmarshal(b, &ref) != nil || ref.CodeDesc == "" {
		return tok, readAPIError(&http.Response{StatusCode: resp.StatusCode, Body: io.NopCloser(bytes.NewReader(b))})
	}
	switch ref.CodeDesc {
	case "MFA_REQUIRED":
	case "MFA_ENROLLMENT_REQUIRED":
		msg := "the tenant requires a second factor and " + name + " has none yet: enrol one in the hosted sign-in or the guide"
		if ref.EnrollmentDeadline != "" {
			msg += " (before " + ref.EnrollmentDeadline + ")"
		}
		return tok, codef(exitAuth, "%s, then log in again", msg)
	default: // MFA_LOCKED, MFA_ENROLLMENT_EXPIRED, or another refusal
		return tok, codef(exitAuth, "403 %s: %s", ref.CodeDesc, ref.Message)
	}
	if !slices.Contains(ref.Factors, "otp") && !slices.Contains(ref.Factors, "recovery_code") {
		return tok, codef(exitAuth, "%s's second factor is a passkey, which the command cannot use: sign in with it in a browser and set LATCHKEY_TOKEN", name)
	}
	prompt := "One-time code (or a recovery code) for " + name + ": "
	if !slices.Contains(ref.Factors, "otp") {
		prompt = "Recovery code for " + name + ": "
	}
	code, err := a.secret(prompt, "--password-stdin", fromStdin)
	if err != nil {
		return tok, err
	}
	code = strings.TrimSpace(code)
	step := map[string]string{"mfa_token": ref.MFAToken}
	if len(code) == 6 && strings.Trim(code, "0123456789") == "" {
		step["grant_type"], step["otp"] = "mfa_otp", code
	} else {
		step["grant_type"], step["recovery_code"] = "mfa_recovery_code", code
	}
	if err := c.do(ctx, "POST", "/api/v1/auth/tokens/", step, &tok); err != nil {
		return tok, err
	}
	if tok.RecoveryCodesLeft != nil {
		fmt.Fprintf(a.stderr, "%d recovery codes left\n", *tok.RecoveryCodesLeft)
	}
	if tok.JWT == "" {
		return tok, codef(exitAuth, "the login answered no token")
	}
	return tok, nil
}

func (a *app) logoutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the profile's session",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := a.profilePath()
			if err != nil {
				return err
			}
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				return err
			}
			return nil
		},
	}
}

// tenantFlag adds --tenant, defaulting to $LATCHKEY_TENANT.
func (a *app) tenantFlag(cmd *cobra.Command, ref *string) {
	cmd.Flags().StringVar(ref, "tenant", "", "tenant id or code (default $LATCHKEY_TENANT)")
}

// tenantID resolves a tenant given by id or code.
func (c *conn) tenantID(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		ref = c.a.getenv("LATCHKEY_TENANT")
	}
	if ref == "" {
		return "", usageError("--tenant is required (or set LATCHKEY_TENANT)")
	}
	if identity.IsGUID(ref) {
		return ref, nil
	}
	var p listPage
	if err := c.do(ctx, "GET", "/api/v1/admin/tenants?code="+url.QueryEscape(strings.ToUpper(ref)), nil, &p); err != nil {
		return "", err
	}
	for _, raw := range p.Resources {
		var t struct{ ID, Code string }
		if json.Unmarshal(raw, &t) == nil && strings.EqualFold(t.Code, ref) {
			return t.ID, nil
		}
	}
	return "", codef(exitNotFound, "tenant %s not found", ref)
}

var tenantFields = []string{"id", "code", "name", "createdAt"}

func (a *app) tenantCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tenant", Short: "Create, list and show tenants"}
	var code string
	create := &cobra.Command{
		Use:   "create NAME [--code CODE]",
		Short: "Create a tenant",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.admin(cmd.Context())
			if err != nil {
				return err
			}
			var t json.RawMessage
			if err := c.do(cmd.Context(), "POST", "/api/v1/admin/tenants", map[string]string{"name": argv[0], "code": code}, &t); err != nil {
				return err
			}
			return a.printItem(t, tenantFields)
		},
	}
	create.Flags().StringVar(&code, "code", "", "the tenant's code: its auth_domain at login")
	list := &cobra.Command{
		Use:   "list",
		Short: "List tenants",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.admin(cmd.Context())
			if err != nil {
				return err
			}
			items, err := c.listAll(cmd.Context(), "/api/v1/admin/tenants", nil)
			if err != nil {
				return err
			}
			return a.printItems(items, []string{"ID", "CODE", "NAME", "CREATED"}, tenantFields)
		},
	}
	get := &cobra.Command{
		Use:   "get ID|CODE",
		Short: "Show a tenant",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, id, err := a.adminOf(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			var t json.RawMessage
			if err := c.do(cmd.Context(), "GET", "/api/v1/admin/tenants/"+id, nil, &t); err != nil {
				return err
			}
			return a.printItem(t, tenantFields)
		},
	}
	cmd.AddCommand(create, list, get)
	return cmd
}

var userFields = []string{"id", "name", "roles", "externalId", "email", "displayName", "passwordScheme", "createdAt"}

func (a *app) userCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Create, list and import users"}
	var tenant string
	var roles []string
	var stdin bool
	var email, displayName string
	create := &cobra.Command{
		Use:   "create NAME --tenant T [--role R] [--password-stdin]",
		Short: "Create a user (the password is prompted for, or read from stdin)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, tid, err := a.adminOf(cmd.Context(), tenant)
			if err != nil {
				return err
			}
			password, err := a.secret("Password for "+argv[0]+": ", "--password-stdin", stdin)
			if err != nil {
				return err
			}
			body := map[string]any{"name": argv[0], "password": password, "roles": roles}
			if email != "" {
				body["email"] = email
			}
			if displayName != "" {
				body["displayName"] = displayName
			}
			var u json.RawMessage
			if err := c.do(cmd.Context(), "POST", "/api/v1/admin/tenants/"+tid+"/users", body, &u); err != nil {
				return err
			}
			return a.printItem(u, userFields)
		},
	}
	a.tenantFlag(create, &tenant)
	create.Flags().StringSliceVar(&roles, "role", nil, "role (repeatable): user, tenant-admin, application-owner")
	create.Flags().BoolVar(&stdin, "password-stdin", false, "read the password from stdin's first line")
	create.Flags().StringVar(&email, "email", "", "e-mail address")
	create.Flags().StringVar(&displayName, "display-name", "", "display name")
	list := a.tenantListCommand("List a tenant's users, with the scheme of their password hash", "users",
		[]string{"ID", "NAME", "ROLES", "EXTERNAL ID", "EMAIL", "SCHEME"}, []string{"id", "name", "roles", "externalId", "email", "passwordScheme"})
	cmd.AddCommand(create, list, a.importCommand())
	return cmd
}

var clientFields = []string{"client_id", "name", "scopes", "role", "createdAt"}

func (a *app) clientCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "client", Short: "Create, list and delete OAuth clients"}
	var tenant, role, secretFile string
	var scopes []string
	create := &cobra.Command{
		Use:   "create NAME --tenant T --scope S... [--role R] [--secret-file F]",
		Short: "Register an OAuth client; its secret is printed once, or written only to --secret-file (0600)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, tid, err := a.adminOf(cmd.Context(), tenant)
			if err != nil {
				return err
			}
			body := map[string]any{"name": argv[0], "scopes": scopes}
			if role != "" {
				body["role"] = role
			}
			var out map[string]any
			if err := c.do(cmd.Context(), "POST", "/api/v1/admin/tenants/"+tid+"/oauth-clients", body, &out); err != nil {
				return err
			}
			secret, _ := out["client_secret"].(string)
			if secretFile != "" && secret != "" {
				delete(out, "client_secret")
				if err := writeSecretFile(secretFile, secret); err != nil {
					return fmt.Errorf("--secret-file: %w (the client %v exists; delete it and create it again)", err, out["client_id"])
				}
			}
			raw, _ := json.Marshal(out)
			fields := clientFields
			if _, ok := out["client_secret"]; ok {
				fields = append(fields[:len(fields):len(fields)], "client_secret")
			}
			return a.printItem(raw, fields)
		},
	}
	a.tenantFlag(create, &tenant)
	create.Flags().StringSliceVar(&scopes, "scope", nil, "scope (repeatable or comma-separated)")
	create.Flags().StringVar(&role, "role", "", "the client's role")
	create.Flags().StringVar(&secretFile, "secret-file", "", "write the secret to this new file (0600) instead of printing it")
	list := a.tenantListCommand("List a tenant's OAuth clients", "oauth-clients", []string{"CLIENT ID", "NAME", "SCOPES", "ROLE", "CREATED"}, clientFields)
	var delTenant string
	del := &cobra.Command{
		Use:   "delete CLIENT_ID --tenant T",
		Short: "Delete an OAuth client and revoke its tokens everywhere",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, tid, err := a.adminOf(cmd.Context(), delTenant)
			if err != nil {
				return err
			}
			return c.do(cmd.Context(), "DELETE", "/api/v1/admin/tenants/"+tid+"/oauth-clients/"+url.PathEscape(argv[0]), nil, nil)
		},
	}
	a.tenantFlag(del, &delTenant)
	cmd.AddCommand(create, list, del)
	return cmd
}

func (a *app) apiCommand() *cobra.Command {
	var input string
	var headers []string
	cmd := &cobra.Command{
		Use:   "api METHOD PATH [--input FILE|-] [-H 'Name: value']",
		Short: "Call any route with the stored credential, as gh api does",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.admin(cmd.Context())
			if err != nil {
				return err
			}
			method, path := strings.ToUpper(argv[0]), argv[1]
			if !strings.HasPrefix(path, "/") {
				path = "/" + path
			}
			var body any
			switch input {
			case "":
			case "-":
				b, err := io.ReadAll(a.stdin)
				if err != nil {
					return err
				}
				body = b
			default:
				b, err := os.ReadFile(input)
				if err != nil {
					return err
				}
				body = b
			}
			ctype := "application/json"
			for _, h := range headers {
				k, v, ok := strings.Cut(h, ":")
				if !ok {
					return usageError("-H %q: want 'Name: value'", h)
				}
				if strings.EqualFold(strings.TrimSpace(k), "Content-Type") {
					ctype = strings.TrimSpace(v)
				}
			}
			resp, err := c.send(cmd.Context(), method, path, ctype, body)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode >= 300 {
				b, _ := io.ReadAll(resp.Body)
				a.stdout.Write(b)
				if len(b) > 0 && b[len(b)-1] != '\n' {
					fmt.Fprintln(a.stdout)
				}
				return withCode(statusCode(resp.StatusCode, ""), fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, http.StatusText(resp.StatusCode)))
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			var v any
			if json.Unmarshal(b, &v) == nil {
				return a.printJSON(v)
			}
			_, err = a.stdout.Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&input, "input", "", "request body from this file, or - for stdin")
	cmd.Flags().StringArrayVarP(&headers, "header", "H", nil, "request header (only Content-Type is sent; credentials come from the profile)")
	return cmd
}

// tenantListCommand is `list --tenant T` of a tenant's collection at
// /api/v1/admin/tenants/{t}/{collection}: every page, as a table of the
// fields under headers (or -o json).
func (a *app) tenantListCommand(short, collection string, headers, fields []string) *cobra.Command {
	var tenant string
	list := &cobra.Command{
		Use:   "list --tenant T",
		Short: short,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, tid, err := a.adminOf(cmd.Context(), tenant)
			if err != nil {
				return err
			}
			items, err := c.listAll(cmd.Context(), "/api/v1/admin/tenants/"+tid+"/"+collection, nil)
			if err != nil {
				return err
			}
			return a.printItems(items, headers, fields)
		},
	}
	a.tenantFlag(list, &tenant)
	return list
}
