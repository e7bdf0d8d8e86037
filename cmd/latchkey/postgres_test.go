package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// postgresSchema makes a schema of its own in dsn's database for one
// script and returns a DSN whose search_path is that schema; it is
// dropped when the test ends.
func postgresSchema(dsn string) (string, func(), error) {
	b := make([]byte, 6)
	rand.Read(b)
	schema := "cli_" + hex.EncodeToString(b)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, err
	}
	drop := func() {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		drop()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}
