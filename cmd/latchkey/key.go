package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
)

// vaultKeys is the vault's key collection (API-keys.md).
const vaultKeys = "/api/v1/vault/keys2"

var keyFields = []string{"id", "name", "algorithm", "size", "curve", "state", "version", "usageMask", "createdAt"}

func (a *app) keyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Vault keys, the platform's signing keys platform-jwt and platform-oidc-rs256 among them",
	}
	keyPath := func(k string) string { return vaultKeys + "/" + url.PathEscape(k) }

	var algorithm, curve, hash string
	var size int
	create := &cobra.Command{
		Use:   "create NAME --algorithm AES|CHACHA20|HMAC|RSA|EC|ED25519|ML-DSA|ML-KEM|X-WING [--size N] [--curve C]",
		Short: "Create a vault key",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.admin(cmd.Context())
			if err != nil {
				return err
			}
			body := map[string]any{"name": argv[0], "algorithm": algorithm}
			if size > 0 {
				body["size"] = size
			}
			if curve != "" {
				body["curve"] = curve
			}
			if hash != "" {
				body["hash"] = hash
			}
			var k json.RawMessage
			if err := c.do(cmd.Context(), "POST", vaultKeys, body, &k); err != nil {
				return err
			}
			return a.printItem(k, keyFields)
		},
	}
	create.Flags().StringVar(&algorithm, "algorithm", "AES", "key type")
	create.Flags().IntVar(&size, "size", 0, "key size in bits (or the ML-DSA/ML-KEM parameter set)")
	create.Flags().StringVar(&curve, "curve", "", "EC curve: P-256 or P-384")
	create.Flags().StringVar(&hash, "hash", "", "HMAC hash: SHA-256, SHA-384, SHA-512")

	list := &cobra.Command{
		Use:   "list",
		Short: "List the vault keys",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.admin(cmd.Context())
			if err != nil {
				return err
			}
			items, err := c.listAll(cmd.Context(), vaultKeys, nil)
			if err != nil {
				return err
			}
			return a.printItems(items, []string{"ID", "NAME", "ALGORITHM", "SIZE", "CURVE", "STATE", "VERSION"}, keyFields[:7])
		},
	}

	rotate := &cobra.Command{
		Use:   "rotate KEY",
		Short: "Add a version to a key and make it the one used",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.admin(cmd.Context())
			if err != nil {
				return err
			}
			var k json.RawMessage
			if err := c.do(cmd.Context(), "POST", keyPath(argv[0])+"/rotate", map[string]any{}, &k); err != nil {
				return err
			}
			return a.printItem(k, keyFields)
		},
	}

	// op posts one crypto operation and returns its answer.
	op := func(cmd *cobra.Command, key, name string, body map[string]any) (map[string]any, error) {
		c, err := a.admin(cmd.Context())
		if err != nil {
			return nil, err
		}
		var out map[string]any
		err = c.do(cmd.Context(), "POST", keyPath(key)+"/"+name, body, &out)
		return out, err
	}
	stdinB64 := func() (string, error) {
		b, err := io.ReadAll(io.LimitReader(a.stdin, 64<<10+1))
		if err != nil {
			return "", err
		}
		if len(b) > 64<<10 {
			return "", usageError("the input is over 64 KiB")
		}
		return base64.StdEncoding.EncodeToString(b), nil
	}
	var aad string
	encrypt := &cobra.Command{
		Use:   "encrypt KEY [--associated-data S] < plaintext",
		Short: "Encrypt stdin; prints the ciphertext",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			pt, err := stdinB64()
			if err != nil {
				return err
			}
			body := map[string]any{"plaintext": pt}
			if aad != "" {
				body["associated_data"] = base64.StdEncoding.EncodeToString([]byte(aad))
			}
			out, err := op(cmd, argv[0], "encrypt", body)
			if err != nil {
				return err
			}
			if a.output == "json" {
				return a.printJSON(out)
			}
			_, err = fmt.Fprintln(a.stdout, out["ciphertext"])
			return err
		},
	}
	encrypt.Flags().StringVar(&aad, "associated-data", "", "associated data the ciphertext is bound to")
	var daad string
	decrypt := &cobra.Command{
		Use:   "decrypt KEY [--associated-data S] < ciphertext",
		Short: "Decrypt the ciphertext on stdin; writes the plaintext's bytes",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			b, err := io.ReadAll(io.LimitReader(a.stdin, 1<<20))
			if err != nil {
				return err
			}
			body := map[string]any{"ciphertext": strings.TrimSpace(string(b))}
			if daad != "" {
				body["associated_data"] = base64.StdEncoding.EncodeToString([]byte(daad))
			}
			out, err := op(cmd, argv[0], "decrypt", body)
			if err != nil {
				return err
			}
			if a.output == "json" {
				return a.printJSON(out)
			}
			s, _ := out["plaintext"].(string)
			pt, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(pt)
			return err
		},
	}
	decrypt.Flags().StringVar(&daad, "associated-data", "", "associated data the ciphertext is bound to")
	var jws bool
	sign := &cobra.Command{
		Use:   "sign KEY [--jws] < input",
		Short: "Sign stdin; prints the signature (or the compact JWS of the input)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			in, err := stdinB64()
			if err != nil {
				return err
			}
			body := map[string]any{"input": in}
			if jws {
				body["output"] = "jws"
			}
			out, err := op(cmd, argv[0], "sign", body)
			if err != nil {
				return err
			}
			if a.output == "json" {
				return a.printJSON(out)
			}
			if jws {
				_, err = fmt.Fprintln(a.stdout, out["jws"])
			} else {
				_, err = fmt.Fprintln(a.stdout, out["signature"])
			}
			return err
		},
	}
	sign.Flags().BoolVar(&jws, "jws", false, "answer the compact JWS of the input")
	var signature, jwsIn string
	verify := &cobra.Command{
		Use:   "verify KEY (--signature SIG < input | --jws JWS)",
		Short: "Verify a signature or a JWS; exit 7 when it does not verify",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			body := map[string]any{}
			switch {
			case jwsIn != "":
				body["jws"] = jwsIn
			case signature != "":
				in, err := stdinB64()
				if err != nil {
					return err
				}
				body["input"], body["signature"] = in, signature
			default:
				return usageError("pass --signature (the input on stdin) or --jws")
			}
			out, err := op(cmd, argv[0], "verify", body)
			if err != nil {
				return err
			}
			if a.output == "json" {
				if err := a.printJSON(out); err != nil {
					return err
				}
			}
			if valid, _ := out["valid"].(bool); !valid {
				return withCode(exitVerify, fmt.Errorf("not valid: %v", out["reason"]))
			}
			if a.output != "json" {
				fmt.Fprintln(a.stdout, "valid")
			}
			return nil
		},
	}
	verify.Flags().StringVar(&signature, "signature", "", "the signature (lk:v…); the signed input on stdin")
	verify.Flags().StringVar(&jwsIn, "jws", "", "a compact JWS")
	cmd.AddCommand(create, list, rotate, encrypt, decrypt, sign, verify)
	return cmd
}
