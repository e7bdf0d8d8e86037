package main

import "github.com/spf13/cobra"

// moreCommands are the commands of the second part (token, key, audit,
// migrate).
func (a *app) moreCommands() []*cobra.Command { return nil }
