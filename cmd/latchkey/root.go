package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// app is one run of the command: its streams and the global flags.
type app struct {
	stdin          io.Reader
	stdinLines     *bufio.Reader // stdin read line by line (secrets), made on first use
	stdout, stderr io.Writer
	getenv         func(string) string

	// batchDone, when set, is called after each import batch is
	// counted (tests interrupt an import there).
	batchDone func()

	url, cacert string
	output      string // table or json
	noProgress  bool
}

// Main runs the command with the process's arguments and streams and
// returns its exit code; testscript runs it in-process too.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	return a.run(ctx, os.Args[1:])
}

func (a *app) run(ctx context.Context, args []string) int {
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	var e *exitError
	if !errors.As(err, &e) {
		// cobra's own errors (unknown command, bad flag, wrong number
		// of arguments) are usage errors.
		if isCobraUsage(err) {
			code = exitUsage
		}
	}
	if ctx.Err() != nil && code == exitFailure {
		code = exitInterrupted
	}
	if !errors.Is(err, errSilent) {
		fmt.Fprintln(a.stderr, "latchkey:", err)
	}
	return code
}

// errSilent ends a command whose message is already printed.
var errSilent = errors.New("already reported")

// usageErr is how rootCommand's FlagErrorFunc and argument checks mark
// cobra's usage errors.
type usageErr struct{ error }

func (e usageErr) Unwrap() error { return e.error }

func isCobraUsage(err error) bool {
	var u usageErr
	if errors.As(err, &u) {
		return true
	}
	// cobra reports unknown commands and flags as plain errors.
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "latchkey",
		Short:         "Latchkey's operator command",
		Long:          "latchkey runs the Latchkey server and drives a running one.\nCredentials: LATCHKEY_URL, LATCHKEY_TOKEN, LATCHKEY_TENANT, LATCHKEY_CLIENT_ID, LATCHKEY_CLIENT_SECRET, or the profile written by `latchkey login`.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.output != "table" && a.output != "json" {
				return usageError("-o must be table or json, not %q", a.output)
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.url, "url", "", "server URL (default $LATCHKEY_URL, else the profile's); plain http only to loopback hosts")
	pf.StringVar(&a.cacert, "cacert", "", "PEM file of CAs to trust besides the system's, e.g. the example server's <data>/server.crt")
	pf.StringVarP(&a.output, "output", "o", "table", "output: table or json")
	pf.BoolVar(&a.noProgress, "no-progress", false, "plain progress lines instead of a bar")
	root.AddCommand(a.serveCommand(), a.loginCommand(), a.logoutCommand(), a.tenantCommand(), a.userCommand(),
		a.clientCommand(), a.tokenCommand(), a.apiCommand())
	for _, c := range a.moreCommands() {
		root.AddCommand(c)
	}
	return root
}

// args wraps a cobra argument check so its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageErr{err}
		}
		return nil
	}
}
