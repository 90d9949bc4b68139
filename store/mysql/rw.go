package mysql

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"allot/store"
	"allot/store/sqlrecords"
)

var _ store.RWStore = (*Store)(nil)

// RWOpen keeps records in a table of its own,
// <Options.Table>_rw_<store.RWSpaceID>, in this store's engine
// (package sqlrecords says how each request is written). --durable is the
// engine's server-wide setting, set here and put back on Close: InnoDB's
// innodb_flush_log_at_trx_commit 1 (flush the redo log at each commit) or
// 2 (write it at each commit, flush about once a second), with
// sync_binlog 1 or 0 (with the binary log on, a commit is durable only
// once the binlog is synced: store.MariaDBSyncBinlog); MyISAM's flush ON
// (sync after each statement) or OFF (leave it to the OS), with the same
// sync_binlog (the binlog takes its statements too). The seed
// bench's durable switch meant the same settings.
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	table := "`" + s.opt.Table + "_rw_" + store.RWSpaceID() + "`"
	mode := store.DurabilityWrite
	if opts.Durable {
		mode = store.DurabilityFsync
	}
	type setting struct{ variable, value, before string }
	settings := []setting{
		{variable: "innodb_flush_log_at_trx_commit", value: strconv.Itoa(store.InnoDBFlushLogAtTrxCommit(mode))},
		{variable: "sync_binlog", value: strconv.Itoa(store.MariaDBSyncBinlog(mode))},
	}
	if s.opt.Engine == MyISAM {
		// The binary log takes MyISAM's statements too: its sync is set
		// as for InnoDB (durabilitySQL).
		settings = []setting{settings[1], {variable: "flush", value: map[bool]string{true: "ON", false: "OFF"}[opts.Durable]}}
	}
	names := make([]string, len(settings))
	for i := range settings {
		st := &settings[i]
		names[i] = st.variable + "=" + st.value
		if err := s.db.QueryRowContext(ctx, "SELECT @@GLOBAL."+st.variable).Scan(&st.before); err != nil {
			return nil, fmt.Errorf("mysql: reading %s: %w", st.variable, err)
		}
		if st.variable == "flush" {
			st.before = map[bool]string{true: "ON", false: "OFF"}[st.before == "1"]
		}
	}
	// set puts value (or before) in every variable.
	set := func(ctx context.Context, restore bool) error {
		var err error
		for _, st := range settings {
			v := st.value
			if restore {
				v = st.before
			}
			if _, e := s.db.ExecContext(ctx, "SET GLOBAL "+st.variable+" = "+v); e != nil {
				err = errors.Join(err, fmt.Errorf("mysql: setting %s: %w", st.variable, e))
			}
		}
		return err
	}
	restore := func(ctx context.Context) error { return set(ctx, true) }
	if err := set(ctx, false); err != nil {
		return nil, errors.Join(err, restore(ctx))
	}
	d := sqlrecords.Dialect{
		Name:         "mysql " + string(s.opt.Engine),
		Table:        table,
		Create:       "CREATE TABLE " + table + " (k VARCHAR(64) NOT NULL PRIMARY KEY, v BIGINT NOT NULL, ver BIGINT NOT NULL DEFAULT 0) ENGINE=" + string(s.opt.Engine),
		Placeholder:  func(int) string { return "?" },
		ShareLock:    "LOCK IN SHARE MODE",
		TableLocks:   s.opt.Engine == MyISAM,
		UpsertSuffix: " ON DUPLICATE KEY UPDATE v = VALUES(v)",
		IsConflict:   isConflict,
		// Transactions are BEGIN ... COMMIT on the session's connection
		// (package sqlrecords): their isolation is the session's.
		SessionSetup: []string{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"},
		Setting:      strings.Join(names, ", ") + ", " + string(s.opt.Engine) + ", READ COMMITTED",
		Restore:      restore,
	}
	sp, err := sqlrecords.Open(ctx, s.db, false, d, opts)
	if err != nil {
		restore(ctx)
		return nil, fmt.Errorf("mysql: records: %w", err)
	}
	return sp, nil
}
