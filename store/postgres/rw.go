package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"allot/store"
	"allot/store/sqlrecords"
)

var _ store.RWStore = (*Store)(nil)

// RWOpen keeps records in a table of its own, rw_records_<store.RWSpaceID>
// (in Options.Schema), over
// connections of their own (package sqlrecords says how each request is
// written). --durable is synchronous_commit, set per session: on, or off
// (a commit returns before its WAL record is flushed; a crash of the
// server may lose the last ones, never corrupt them).
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	name := "rw_records_" + store.RWSpaceID()
	table := pgx.Identifier{name}
	if s.opt.Schema != "" {
		table = pgx.Identifier{s.opt.Schema, name}
	}
	sync := "off"
	if opts.Durable {
		sync = "on"
	}
	d := sqlrecords.Dialect{
		Name:         "postgres",
		Table:        table.Sanitize(),
		Create:       "CREATE TABLE " + table.Sanitize() + " (k text PRIMARY KEY, v bigint NOT NULL, ver bigint NOT NULL DEFAULT 0)",
		Placeholder:  func(i int) string { return "$" + strconv.Itoa(i) },
		ShareLock:    "FOR SHARE",
		UpsertSuffix: " ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
		IsConflict:   IsConflict,
		SessionSetup: []string{"SET synchronous_commit = " + sync},
		Setting:      "synchronous_commit=" + sync + ", READ COMMITTED",
	}
	db := stdlib.OpenDB(*s.pool.Config().ConnConfig.Copy())
	sp, err := sqlrecords.Open(ctx, db, true, d, opts)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: records: %w", err)
	}
	return sp, nil
}
