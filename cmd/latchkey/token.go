package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// clientCreds are the OAuth client's id and secret flags.
type clientCreds struct {
	secretFile string
	stdin      bool
}

func (cc *clientCreds) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&cc.secretFile, "client-secret-file", "", "read the client secret from this file")
	cmd.Flags().BoolVar(&cc.stdin, "client-secret-stdin", false, "read the client secret from stdin's first line")
}

// resolve returns the client id (LATCHKEY_CLIENT_ID) and its secret:
// LATCHKEY_CLIENT_SECRET, --client-secret-file, --client-secret-stdin, or
// a prompt.
func (cc *clientCreds) resolve(a *app) (id, secret string, err error) {
	id = a.getenv("LATCHKEY_CLIENT_ID")
	if id == "" {
		return "", "", usageError("set LATCHKEY_CLIENT_ID to the OAuth client's id")
	}
	switch {
	case a.getenv("LATCHKEY_CLIENT_SECRET") != "":
		secret = a.getenv("LATCHKEY_CLIENT_SECRET")
	case cc.secretFile != "":
		b, err := os.ReadFile(cc.secretFile)
		if err != nil {
			return "", "", fmt.Errorf("--client-secret-file: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	default:
		if secret, err = a.secret("Client secret for "+id+": ", "--client-secret-stdin", cc.stdin); err != nil {
			return "", "", err
		}
	}
	return id, secret, nil
}

// tokenAnswer is the OAuth token endpoint's answer.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope,omitempty"`
}

// clientCredentials performs the client_credentials grant (RFC 6749
// §4.4) with HTTP Basic client authentication. A refused secret
// (invalid_client, 400 or 401) exits 3.
func (c *conn) clientCredentials(ctx context.Context, id, secret string, scopes []string) (tokenAnswer, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+"/oauth/v1/token", strings.NewReader(form.Encode()))
	if err != nil {
		return tokenAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	resp, err := c.http.Do(req)
	if err != nil {
		return tokenAnswer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return tokenAnswer{}, readAPIError(resp)
	}
	var t tokenAnswer
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return tokenAnswer{}, err
	}
	return t, nil
}

func (a *app) tokenCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "OAuth grants"}
	var cc clientCreds
	var scopes []string
	cred := &cobra.Command{
		Use:   "client-credentials [--scope S...]",
		Short: "Perform the client_credentials grant and print the bare token (-o json: the answer and its claims)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.anon()
			if err != nil {
				return err
			}
			id, secret, err := cc.resolve(a)
			if err != nil {
				return err
			}
			t, err := c.clientCredentials(cmd.Context(), id, secret, scopes)
			if err != nil {
				return err
			}
			if a.output != "json" {
				_, err := fmt.Fprintln(a.stdout, t.AccessToken)
				return err
			}
			claims, err := jwtClaims(t.AccessToken)
			if err != nil {
				return fmt.Errorf("the access token is not a JWT: %w", err)
			}
			return a.printJSON(struct {
				tokenAnswer
				Claims map[string]any `json:"claims"`
			}{t, claims})
		},
	}
	cc.register(cred)
	cred.Flags().StringSliceVar(&scopes, "scope", nil, "scopes to ask for (default the client's)")
	cmd.AddCommand(cred)
	return cmd
}
