package mysql

import (
	"context"
	"fmt"

	"allot/store"
	"allot/store/sqlrecords"
)

var _ store.RWStore = (*Store)(nil)

// RWOpen keeps records in a table of its own,
// <Options.Table>_rw_<store.RWSpaceID>, in this store's engine
// (package sqlrecords says how each request is written). --durable is the
// engine's server-wide setting, set here and put back on Close: InnoDB's
// innodb_flush_log_at_trx_commit 1 (flush the redo log at each commit) or
// 2 (write it at each commit, flush about once a second); MyISAM's flush
// ON (sync after each statement) or OFF (leave it to the OS). The seed
// bench's durable switch meant the same settings.
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	table := "`" + s.opt.Table + "_rw_" + store.RWSpaceID() + "`"
	variable, value := "innodb_flush_log_at_trx_commit", "2"
	if opts.Durable {
		value = "1"
	}
	if s.opt.Engine == MyISAM {
		variable, value = "flush", "OFF"
		if opts.Durable {
			value = "ON"
		}
	}
	var before string
	if err := s.db.QueryRowContext(ctx, "SELECT @@GLOBAL."+variable).Scan(&before); err != nil {
		return nil, fmt.Errorf("mysql: reading %s: %w", variable, err)
	}
	if _, err := s.db.ExecContext(ctx, "SET GLOBAL "+variable+" = "+value); err != nil {
		return nil, fmt.Errorf("mysql: setting %s: %w", variable, err)
	}
	restore := func(ctx context.Context) error {
		if before == "1" && variable == "flush" {
			before = "ON"
		} else if before == "0" && variable == "flush" {
			before = "OFF"
		}
		_, err := s.db.ExecContext(ctx, "SET GLOBAL "+variable+" = "+before)
		return err
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
		Setting:      variable + "=" + value + ", " + string(s.opt.Engine) + ", READ COMMITTED",
		Restore:      restore,
	}
	sp, err := sqlrecords.Open(ctx, s.db, false, d, opts)
	if err != nil {
		restore(ctx)
		return nil, fmt.Errorf("mysql: records: %w", err)
	}
	return sp, nil
}
