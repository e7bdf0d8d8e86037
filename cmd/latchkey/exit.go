package main

import (
	"errors"
	"fmt"
)

// Exit codes (API-cli.md, "Credentials, output, exit codes").
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitAuth        = 3 // not logged in, 401 or 403, a refused client secret
	exitNotFound    = 4
	exitConflict    = 5
	exitPartial     = 6 // failed lines or pending work
	exitVerify      = 7 // verification failed
	exitInterrupted = 130
)

// exitError is an error with the exit code it ends the command with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so the command exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func codef(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

// usageError marks a usage mistake (exit 2).
func usageError(format string, args ...any) error { return codef(exitUsage, format, args...) }

// exitCode is the exit code err asks for: 1 unless it says otherwise.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return exitFailure
}
