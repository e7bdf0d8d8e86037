package main

import "github.com/spf13/cobra"

// moreCommands are the vault, audit and migration commands.
func (a *app) moreCommands() []*cobra.Command {
	return []*cobra.Command{a.keyCommand(), a.auditCommand(), a.migrateCommand()}
}
