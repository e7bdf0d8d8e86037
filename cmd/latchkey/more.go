package main

import "github.com/spf13/cobra"

// moreCommands are the commands of the second part (token, key, audit,
// migrate).
func (a *app) moreCommands() []*cobra.Command { return nil }

func (a *app) importCommand() *cobra.Command {
	return &cobra.Command{Use: "import", Short: "Import users with their password hashes", Hidden: true}
}
