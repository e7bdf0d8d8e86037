package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/latchkey/latchkey/store/postgres"
	"github.com/latchkey/latchkey/store/sqlite"
	"github.com/latchkey/latchkey/store/sqlstore"
)

// migrator is a store opened without migrating.
type migrator interface {
	MigrationStatus(ctx context.Context) ([]sqlstore.MigrationState, error)
	Migrate(ctx context.Context) error
	Close() error
}

func (a *app) migrateCommand() *cobra.Command {
	var data, dsn string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Show or apply the database's migrations, straight to the database (--data or --postgres)",
		Long: `Migrations only go forward: there is no down. The database password goes in
PGPASSWORD or ~/.pgpass, not in the DSN.`,
	}
	cmd.PersistentFlags().StringVar(&data, "data", "./data", "the server's data directory (SQLite latchkey.db)")
	cmd.PersistentFlags().StringVar(&dsn, "postgres", "", "PostgreSQL DSN (instead of --data)")
	open := func(ctx context.Context) (migrator, error) {
		f := false
		if dsn != "" {
			return postgres.Open(ctx, dsn, postgres.Options{Migrate: &f})
		}
		return sqlite.Open(ctx, filepath.Join(data, "latchkey.db"), sqlite.Options{Migrate: &f})
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "List the migrations; exit 6 while some are pending",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			ms, err := st.MigrationStatus(cmd.Context())
			if err != nil {
				return err
			}
			pending := 0
			rows := make([][]string, len(ms))
			for i, m := range ms {
				state := "applied"
				if !m.Applied {
					state = "pending"
					pending++
				}
				rows[i] = []string{strconv.Itoa(m.Version), m.Name, state}
			}
			if a.output == "json" {
				if err := a.printJSON(ms); err != nil {
					return err
				}
			} else if err := a.printTable([]string{"VERSION", "NAME", "STATE"}, rows); err != nil {
				return err
			}
			if pending > 0 {
				return codef(exitPartial, "%d of %d migrations pending: run latchkey migrate up", pending, len(ms))
			}
			return nil
		},
	}
	up := &cobra.Command{
		Use:   "up",
		Short: "Apply the pending migrations",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			before, err := st.MigrationStatus(cmd.Context())
			if err != nil {
				return err
			}
			if err := st.Migrate(cmd.Context()); err != nil {
				return err
			}
			n := 0
			for _, m := range before {
				if !m.Applied {
					n++
				}
			}
			fmt.Fprintf(a.stdout, "applied %d migrations; %d in all\n", n, len(before))
			return nil
		},
	}
	cmd.AddCommand(status, up)
	return cmd
}
