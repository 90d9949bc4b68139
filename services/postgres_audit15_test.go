package services

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"allot/store"
)

// TestAudit15PostgresDurabilityIsFsync: allot's write promises to survive
// a crash of the server process. PostgreSQL's synchronous_commit=off does
// not (a commit returns with its WAL in shared buffers); fsync=off with
// synchronous_commit=on does (the WAL is written to the OS before the
// commit returns, never flushed). So each mode is a pair, switched at
// runtime by a reload: fsync on/on, write off/on, none off/off. An fsync
// the adapter set with ALTER SYSTEM (postgresql.auto.conf, which outranks
// allot.conf) is dropped when services switches or starts the server.
func TestAudit15PostgresDurabilityIsFsync(t *testing.T) {
	cfg := privateConfig(t)
	requireInstalled(t, cfg, Postgres)
	ctx := context.Background()
	settings := func(c *pgx.Conn) (fsync, sync, file string) {
		t.Helper()
		if err := c.QueryRow(ctx, "SELECT setting, sourcefile, current_setting('synchronous_commit') FROM pg_settings WHERE name = 'fsync'").Scan(&fsync, &file, &sync); err != nil {
			t.Fatal(err)
		}
		return fsync, sync, file
	}
	var pid int
	var c *pgx.Conn
	up := func(d store.Durability, fsync, sync string, restart bool) {
		t.Helper()
		cfg.Durability = d
		if err := Up(ctx, cfg, Postgres); err != nil {
			t.Fatal(err)
		}
		st := statusOf(t, cfg, Postgres)
		if st.Durability != d {
			t.Errorf("asked for %s: status %v", d, st)
		}
		if pid != 0 && (st.PID != pid) != restart {
			t.Errorf("asked for %s: pid %d then %d, want a restart: %v", d, pid, st.PID, restart)
		}
		pid = st.PID
		if c != nil {
			c.Close(ctx)
		}
		var err error
		if c, err = pgx.Connect(ctx, "postgres://postgres@"+st.Addr+"/postgres?sslmode=disable"); err != nil {
			t.Fatal(err)
		}
		gotFsync, gotSync, file := settings(c)
		if gotFsync != fsync || gotSync != sync || !strings.HasSuffix(file, "allot.conf") {
			t.Errorf("durability %s: the server runs with fsync=%s (from %s), synchronous_commit=%s; want fsync=%s from allot.conf, synchronous_commit=%s",
				d, gotFsync, file, gotSync, fsync, sync)
		}
	}
	// alterFsync sets fsync as the adapter does when it opens a store in
	// another durability than the server runs in.
	alterFsync := func(v string) {
		t.Helper()
		if _, err := c.Exec(ctx, "ALTER SYSTEM SET fsync = "+v); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			t.Fatal(err)
		}
	}
	up(store.DurabilityWrite, "off", "on", false)
	up(store.DurabilityFsync, "on", "on", false)
	up(store.DurabilityNone, "off", "off", false)
	up(store.DurabilityWrite, "off", "on", false)
	alterFsync("on") // an fsync-mode store opened on the write server
	up(store.DurabilityWrite, "off", "on", false)
	up(store.DurabilityFsync, "on", "on", false)
	alterFsync("off") // a write-mode store opened on the fsync server, then a restart
	c.Close(ctx)
	c = nil
	if err := Down(ctx, cfg, Postgres); err != nil {
		t.Fatal(err)
	}
	pid = 0
	up(store.DurabilityFsync, "on", "on", false)
	c.Close(ctx)
}
