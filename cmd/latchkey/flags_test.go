package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/latchkey/latchkey/internal/serve"
)

// TestNoFlagCarriesASecret walks the command tree: a flag named after a
// secret, password or token must end in -file or -stdin (API-cli.md).
func TestNoFlagCarriesASecret(t *testing.T) {
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			n++
			name := f.Name
			if (strings.Contains(name, "secret") || strings.Contains(name, "password") || strings.Contains(name, "token")) &&
				!strings.HasSuffix(name, "-file") && !strings.HasSuffix(name, "-stdin") {
				t.Errorf("%s --%s carries a secret on the command line", c.CommandPath(), name)
			}
		}
		c.Flags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCommand())
	if n < 30 {
		t.Fatalf("only %d flags walked", n)
	}
}

// TestServeFlagsMatchExampleServer: latchkey serve exposes the example
// server's flags with the same defaults and help, plus --migrate.
func TestServeFlagsMatchExampleServer(t *testing.T) {
	gfs := flag.NewFlagSet("server", flag.ContinueOnError)
	var f serve.Flags
	f.Register(gfs)
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	var serveCmd *cobra.Command
	for _, c := range a.rootCommand().Commands() {
		if c.Name() == "serve" {
			serveCmd = c
		}
	}
	if serveCmd == nil {
		t.Fatal("no serve command")
	}
	seen := map[string]bool{}
	gfs.VisitAll(func(g *flag.Flag) {
		seen[g.Name] = true
		p := serveCmd.Flags().Lookup(g.Name)
		if p == nil {
			t.Errorf("latchkey serve lacks --%s", g.Name)
			return
		}
		if p.DefValue != g.DefValue || p.Usage != g.Usage {
			t.Errorf("--%s: default %q usage %q; the example server's: %q %q", g.Name, p.DefValue, p.Usage, g.DefValue, g.Usage)
		}
	})
	serveCmd.Flags().VisitAll(func(p *pflag.Flag) {
		if !seen[p.Name] && p.Name != "migrate" {
			t.Errorf("latchkey serve has --%s, which the example server lacks", p.Name)
		}
	})
	if m := serveCmd.Flags().Lookup("migrate"); m == nil || m.DefValue != "true" {
		t.Errorf("--migrate: %+v, want default true", m)
	}
	// Both take --addr with two dashes.
	if err := gfs.Parse([]string{"--addr", "127.0.0.1:9", "-data", "x"}); err != nil || f.Config.Addr != "127.0.0.1:9" {
		t.Errorf("the example server's flags with two dashes: %v %q", err, f.Config.Addr)
	}
}
