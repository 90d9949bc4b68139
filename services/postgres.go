package services

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"allot/store"
)

// postgresServer runs PostgreSQL from Debian's postgresql package as the
// postgres system user (PostgreSQL refuses to run as root). Its settings
// live in <dir>/allot.conf, included from the cluster's postgresql.conf, so
// that a durability change (fsync and synchronous_commit, writeConf) is a
// rewrite of that file and a reload.
type postgresServer struct{}

func (postgresServer) name() string       { return Postgres }
func (postgresServer) basePort() int      { return 15432 }
func (postgresServer) packages() []string { return []string{"postgresql"} }
func (postgresServer) runAs() string      { return "postgres" }
func (postgresServer) exeNames() []string { return []string{"postgres"} }
func (postgresServer) pidFile(in *instance) string {
	return filepath.Join(in.dir, "data", "postmaster.pid")
}
func (postgresServer) logFile(in *instance) string { return filepath.Join(in.dir, "postgres.log") }

// lockFiles: the unix socket's lock file, which PostgreSQL checks as it
// does postmaster.pid.
func (postgresServer) lockFiles(in *instance) []string {
	return []string{filepath.Join(in.dir, ".s.PGSQL."+strconv.Itoa(in.port)+".lock")}
}
func (postgresServer) stopSignal() syscall.Signal   { return syscall.SIGINT } // fast shutdown: SIGTERM waits for clients
func (s postgresServer) installed() bool            { return s.binDir() != "" }
func (postgresServer) confFile(in *instance) string { return filepath.Join(in.dir, "allot.conf") }

// binDir is the newest /usr/lib/postgresql/<major>/bin that has a server.
func (postgresServer) binDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(a))))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(b))))
		return vb - va
	})
	if len(dirs) == 0 {
		return ""
	}
	return filepath.Dir(dirs[0])
}

func (s postgresServer) start(ctx context.Context, in *instance) (int, error) {
	bin := s.binDir()
	data := filepath.Join(in.dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		// No cluster, or one whose initdb was cut short: start afresh.
		// initdb writes PG_VERSION long before it is done, so it builds the
		// cluster in data.init and the complete one is renamed into place:
		// an initdb killed half way (Ctrl-C on a first up) leaves no data.
		if err := os.RemoveAll(data); err != nil {
			return 0, fmt.Errorf("removing a partial cluster: %w", err)
		}
		initDir := data + ".init"
		if err := os.RemoveAll(initDir); err != nil {
			return 0, fmt.Errorf("removing a partial cluster: %w", err)
		}
		if _, err := run(ctx, in.user, in.dir, filepath.Join(bin, "initdb"), "-D", initDir, "-U", "postgres",
			"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions"); err != nil {
			return 0, err
		}
		if err := os.Rename(initDir, data); err != nil {
			return 0, fmt.Errorf("moving the new cluster into place: %w", err)
		}
	}
	if err := s.writeConf(in, in.durability); err != nil {
		return 0, err
	}
	include := "include " + confQuote(s.confFile(in)) + "\n"
	main := filepath.Join(data, "postgresql.conf")
	b, err := os.ReadFile(main)
	if err != nil {
		return 0, err
	}
	if !strings.Contains(string(b), include) {
		f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return 0, err
		}
		_, err = f.WriteString("\n# allot services\n" + include)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, fmt.Errorf("adding allot.conf to %s: %w", main, err)
		}
	}
	// pg_ctl -w waits for the postmaster and notices when it dies early.
	_, err = run(ctx, in.user, in.dir, filepath.Join(bin, "pg_ctl"), "-D", data, "-l", s.logFile(in),
		"-w", "-t", strconv.Itoa(int(in.cfg.Timeout.Seconds())), "-s", "start")
	return 0, err
}

// writeConf writes the settings allot owns. It is root's file, readable by
// the server. The durability is fsync and synchronous_commit
// (store.PostgresFsync, store.PostgresSynchronousCommit): fsync mode is
// on and on; write is fsync=off with synchronous_commit=on (a commit's WAL
// is written to the OS before it returns, never flushed: it survives a
// crash of the server, not a power cut; synchronous_commit=off would
// acknowledge commits still in shared buffers, which a crash loses); none
// is off and off (its tables are unlogged, so neither matters to them).
// store.PostgresManagedSetting marks the server as one services runs: the
// adapter changes the fsync of no other.
func (s postgresServer) writeConf(in *instance, d store.Durability) error {
	conf := fmt.Sprintf(`# Written by allot services; rewritten on every start.
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = %s
max_connections = 200
shared_buffers = '256MB'
fsync = %s
synchronous_commit = %s
%s = on
`, in.port, confQuote(`"`+strings.ReplaceAll(in.dir, `"`, `""`)+`"`), store.PostgresFsync(d), store.PostgresSynchronousCommit(d), store.PostgresManagedSetting)
	return writeShared(s.confFile(in), []byte(conf))
}

// postgresDurability is the mode a server's fsync and default
// synchronous_commit are writeConf's for, or "" for a pair no mode writes
// (Up then switches the server to the mode it is asked for).
func postgresDurability(fsync, sync string) store.Durability {
	for _, d := range []store.Durability{store.DurabilityFsync, store.DurabilityWrite, store.DurabilityNone} {
		if fsync == store.PostgresFsync(d) && sync == store.PostgresSynchronousCommit(d) {
			return d
		}
	}
	return ""
}

// resetFsync drops an fsync set with ALTER SYSTEM (the adapter sets it so
// when it opens a store in another durability than the server runs in:
// store/postgres's setFsync), whose postgresql.auto.conf would otherwise
// outrank allot.conf, reloads, and waits until c reads back want: the
// postmaster rereads the files before it signals the backends, c's among
// them, so every backend started after that runs with want. It waits up
// to in's Config.Timeout.
func resetFsync(ctx context.Context, in *instance, c *pgx.Conn, want string) error {
	ctx, cancel := context.WithTimeout(ctx, in.cfg.Timeout)
	defer cancel()
	if _, err := c.Exec(ctx, "ALTER SYSTEM RESET fsync"); err != nil {
		return err
	}
	if _, err := c.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	for {
		var got string
		if err := c.QueryRow(ctx, "SELECT current_setting('fsync')").Scan(&got); err != nil {
			return err
		}
		if got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fsync is still %s after a reload: %w", got, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// confQuote quotes a string for postgresql.conf, where a quote or a
// backslash in it would end or escape it. unix_socket_directories is a
// list besides: a directory in it is double-quoted so that a comma or a
// space stays part of its name.
func confQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(v) + "'"
}

// superDSN connects as the cluster's superuser over loopback (trust).
func superDSN(in *instance) string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=3", in.addr())
}

func (postgresServer) probe(ctx context.Context, in *instance) (probeResult, error) {
	conn, err := pgx.Connect(ctx, superDSN(in))
	if err != nil {
		return probeResult{}, err
	}
	defer conn.Close(context.Background())
	var version, fsync, sync string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')").Scan(&version, &fsync, &sync); err != nil {
		return probeResult{}, err
	}
	return probeResult{version: "PostgreSQL " + version, durability: postgresDurability(fsync, sync)}, nil
}

// setup creates role allot and database allot, once. It runs after every
// start, and first drops an fsync an adapter left with ALTER SYSTEM, so
// that the server runs with allot.conf's, as it was started to.
func (postgresServer) setup(ctx context.Context, in *instance) error {
	conn, err := pgx.Connect(ctx, superDSN(in))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := resetFsync(ctx, in, conn, store.PostgresFsync(in.durability)); err != nil {
		return fmt.Errorf("putting back allot.conf's fsync: %w", err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = 'allot'").Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := conn.Exec(ctx, "CREATE ROLE allot LOGIN"); err != nil {
			return err
		}
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = 'allot'").Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := conn.Exec(ctx, "CREATE DATABASE allot OWNER allot ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"); err != nil {
			return err
		}
	}
	return nil
}

// setDurability rewrites allot.conf and reloads: fsync and
// synchronous_commit need no restart. An fsync an adapter set with ALTER
// SYSTEM is dropped, so that allot.conf's rules.
func (s postgresServer) setDurability(ctx context.Context, in *instance, d store.Durability) (bool, error) {
	if err := s.writeConf(in, d); err != nil {
		return false, err
	}
	conn, err := pgx.Connect(ctx, superDSN(in))
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	return false, resetFsync(ctx, in, conn, store.PostgresFsync(d))
}
