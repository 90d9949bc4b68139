package services

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"

	_ "github.com/go-sql-driver/mysql"

	"allot/store"
)

var (
	//go:embed mariadb.cnf
	mariadbConf string
	//go:embed mariadb_setup.sql
	mariadbSetup string
)

// mariadbServer runs MariaDB from Debian's mariadb-server package, as the
// mysql system user when we are root. The accounts come from an init file
// (mariadb_setup.sql, every statement idempotent; mariadbd wants one
// statement per line and no comments there) that mariadbd runs at every
// start before it accepts connections, so there is no root login to manage.
type mariadbServer struct{}

func (mariadbServer) name() string                { return MariaDB }
func (mariadbServer) basePort() int               { return 13306 }
func (mariadbServer) packages() []string          { return []string{"mariadb-server"} }
func (mariadbServer) runAs() string               { return "mysql" }
func (mariadbServer) exeNames() []string          { return []string{"mariadbd", "mysqld"} }
func (mariadbServer) pidFile(in *instance) string { return filepath.Join(in.dir, "mariadbd.pid") }
func (mariadbServer) logFile(in *instance) string { return filepath.Join(in.dir, "mariadb.log") }
func (mariadbServer) stopSignal() syscall.Signal  { return syscall.SIGTERM }
func (mariadbServer) installed() bool {
	return findBinary("mariadbd") != "" && findBinary("mariadb-install-db") != ""
}

func (s mariadbServer) start(ctx context.Context, in *instance) (int, error) {
	cnf := filepath.Join(in.dir, "my.cnf")
	if err := s.writeConf(in, in.durability); err != nil {
		return 0, err
	}
	setup := filepath.Join(in.dir, "setup.sql")
	if err := writeShared(setup, []byte(mariadbSetup)); err != nil {
		return 0, err
	}
	data := filepath.Join(in.dir, "data")
	if _, err := os.Stat(filepath.Join(data, "mysql")); err != nil {
		// mariadb-install-db creates mysql/ first and fills it after, so it
		// works in data.init and the complete directory is renamed into
		// place: one killed half way (Ctrl-C on a first up) leaves no data.
		if err := os.RemoveAll(data); err != nil {
			return 0, fmt.Errorf("removing a partial data directory: %w", err)
		}
		initDir := data + ".init"
		if err := os.RemoveAll(initDir); err != nil {
			return 0, fmt.Errorf("removing a partial data directory: %w", err)
		}
		if _, err := run(ctx, in.user, in.dir, findBinary("mariadb-install-db"), "--defaults-file="+cnf,
			"--datadir="+initDir, "--auth-root-authentication-method=normal", "--skip-test-db"); err != nil {
			return 0, err
		}
		if err := os.Rename(initDir, data); err != nil {
			return 0, fmt.Errorf("moving the new data directory into place: %w", err)
		}
	}
	return startBackground(ctx, in.user, in.dir, s.logFile(in), findBinary("mariadbd"), "--defaults-file="+cnf, "--init-file="+setup)
}

func (s mariadbServer) writeConf(in *instance, d store.Durability) error {
	t, err := template.New("my.cnf").Funcs(template.FuncMap{"quote": optionFileQuote}).Parse(mariadbConf)
	if err != nil {
		return err
	}
	var b strings.Builder
	err = t.Execute(&b, map[string]any{
		"Data": filepath.Join(in.dir, "data"), "Port": in.port,
		"Socket": filepath.Join(in.dir, "mariadbd.sock"), "PIDFile": s.pidFile(in), "ErrorLog": s.logFile(in),
		"FlushLogAtTrxCommit": store.InnoDBFlushLogAtTrxCommit(d),
		"SyncBinlog":          store.MariaDBSyncBinlog(d),
	})
	if err != nil {
		return err
	}
	return writeShared(filepath.Join(in.dir, "my.cnf"), []byte(b.String()))
}

// optionFileQuote quotes a value for an option file, where an unquoted
// '#' or ';' would start a comment.
func optionFileQuote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

func mariadbDSN(in *instance) string {
	return fmt.Sprintf("allot:allot@tcp(%s)/allot?timeout=3s", in.addr())
}

func (mariadbServer) probe(ctx context.Context, in *instance) (probeResult, error) {
	db, err := sql.Open("mysql", mariadbDSN(in))
	if err != nil {
		return probeResult{}, err
	}
	defer db.Close()
	var version string
	var flush, logBin, syncBinlog int
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@GLOBAL.innodb_flush_log_at_trx_commit, @@GLOBAL.log_bin, @@GLOBAL.sync_binlog").Scan(&version, &flush, &logBin, &syncBinlog); err != nil {
		return probeResult{}, err
	}
	d := store.DurabilityFsync
	switch {
	case flush == 0:
		d = store.DurabilityNone
	case flush == 2 || (logBin == 1 && syncBinlog != 1):
		// With the binlog on, a commit is durable once the binlog is
		// synced too (store.MariaDBSyncBinlog).
		d = store.DurabilityWrite
	}
	return probeResult{version: "MariaDB " + version, durability: d}, nil
}

// setDurability sets innodb_flush_log_at_trx_commit and sync_binlog at
// runtime and in my.cnf for the next start.
func (s mariadbServer) setDurability(ctx context.Context, in *instance, d store.Durability) (bool, error) {
	if err := s.writeConf(in, d); err != nil {
		return false, err
	}
	db, err := sql.Open("mysql", mariadbDSN(in))
	if err != nil {
		return false, err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL innodb_flush_log_at_trx_commit = %d, GLOBAL sync_binlog = %d",
		store.InnoDBFlushLogAtTrxCommit(d), store.MariaDBSyncBinlog(d)))
	return false, err
}
