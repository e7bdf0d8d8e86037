package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// readLineFrom reads the next line of r, without its line ending.
func readLineFrom(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// stdinLine reads stdin's next line: one reader for the whole run, so
// that login reads the password and then the second factor's code.
func (a *app) stdinLine() (string, error) {
	if a.stdinLines == nil {
		a.stdinLines = bufio.NewReader(a.stdin)
	}
	return readLineFrom(a.stdinLines)
}

// secret reads a secret from stdin (fromStdin), else prompts for it on the
// terminal without echo. Without a terminal it asks for the -stdin flag.
func (a *app) secret(prompt, stdinFlag string, fromStdin bool) (string, error) {
	if fromStdin {
		s, err := a.stdinLine()
		if err != nil {
			return "", err
		}
		if s == "" {
			return "", usageError("%s: stdin is empty", stdinFlag)
		}
		return s, nil
	}
	f, ok := a.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", usageError("no terminal to prompt on: pass %s", stdinFlag)
	}
	fmt.Fprint(a.stderr, prompt)
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(a.stderr)
	if err != nil {
		return "", err
	}
	if len(b) == 0 {
		return "", usageError("empty secret")
	}
	return string(b), nil
}

// writeSecretFile writes a secret to path, mode 0600, refusing to replace
// an existing file.
func writeSecretFile(path, secret string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
