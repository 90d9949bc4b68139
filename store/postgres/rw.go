package postgres

import (
	"context"
	"errors"
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
// written). --durable picks the settings of durability fsync (fsync=on)
// or, without it, of write (fsync=off: a commit returns once its WAL is
// written to the OS, never flushed; a crash of the server loses nothing
// acknowledged, a power cut may), synchronous_commit=on in both, set per
// session. fsync is the server's: RWOpen sets it (setFsync) and Close puts
// back what ran before, as MariaDB's adapter does with its globals.
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	name := "rw_records_" + store.RWSpaceID()
	table := pgx.Identifier{name}
	if s.opt.Schema != "" {
		table = pgx.Identifier{s.opt.Schema, name}
	}
	mode := store.DurabilityWrite
	if opts.Durable {
		mode = store.DurabilityFsync
	}
	sync, fsync := store.PostgresSynchronousCommit(mode), store.PostgresFsync(mode)
	cc := s.pool.Config().ConnConfig
	before, err := setFsync(ctx, cc.Copy(), fsync, mode)
	if err != nil {
		return nil, fmt.Errorf("postgres: records: %w", err)
	}
	restore := func(ctx context.Context) error {
		if before == fsync {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		_, err := setFsync(ctx, cc.Copy(), before, s.cfg.Durability)
		return err
	}
	d := sqlrecords.Dialect{
		Name:         "postgres",
		Table:        table.Sanitize(),
		Create:       "CREATE TABLE " + table.Sanitize() + " (k text PRIMARY KEY, v bigint NOT NULL, ver bigint NOT NULL DEFAULT 0)",
		Placeholder:  func(i int) string { return "$" + strconv.Itoa(i) },
		ShareLock:    "FOR SHARE",
		UpsertSuffix: " ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
		IsConflict:   IsConflict,
		// Transactions are BEGIN ... COMMIT on the session's connection
		// (package sqlrecords): their isolation is the session's, not
		// whatever default_transaction_isolation the server was given.
		SessionSetup: []string{"SET synchronous_commit = " + sync, "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED"},
		Setting:      "fsync=" + fsync + ", synchronous_commit=" + sync + ", READ COMMITTED",
		Restore:      restore,
	}
	db := stdlib.OpenDB(*cc.Copy())
	sp, err := sqlrecords.Open(ctx, db, true, d, opts)
	if err != nil {
		db.Close()
		return nil, errors.Join(fmt.Errorf("postgres: records: %w", err), restore(ctx))
	}
	return sp, nil
}
