package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/postgres"
)

// superDSN reaches the project's server as its superuser (trust on
// loopback), to read and put back the server-wide fsync.
const superDSN = "postgres://postgres@127.0.0.1:15432/allot?sslmode=disable"

// keepServerFsync puts the shared server's fsync back as it was when the
// test ends: opening a store in another durability switches it (ALTER
// SYSTEM), and other tests share the server. An fsync set in
// postgresql.auto.conf is set back to its value; one from the
// configuration file (allot.conf, services') is left to it again.
func keepServerFsync(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, superDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var before string
	var file *string
	if err := c.QueryRow(ctx, "SELECT setting, sourcefile FROM pg_settings WHERE name = 'fsync'").Scan(&before, &file); err != nil {
		t.Fatal(err)
	}
	put := "ALTER SYSTEM RESET fsync"
	if file != nil && strings.HasSuffix(*file, "postgresql.auto.conf") {
		put = "ALTER SYSTEM SET fsync = " + before
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, superDSN)
		if err != nil {
			t.Errorf("putting fsync back: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, put); err != nil {
			t.Errorf("putting fsync back: %s: %v", put, err)
			return
		}
		if _, err := c.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			t.Errorf("putting fsync back: %v", err)
			return
		}
		for {
			if got := serverFsync(t, ctx, c); got == before || ctx.Err() != nil {
				if got != before {
					t.Errorf("fsync is %s after putting back %s", got, before)
				}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

func serverFsync(t *testing.T, ctx context.Context, c *pgx.Conn) string {
	t.Helper()
	var got string
	if err := c.QueryRow(ctx, "SELECT current_setting('fsync')").Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestAudit15WriteModeIsFsyncOffWithSynchronousCommit (the kill audit
// shows the crash; this holds the settings): allot's write promises that an
// acknowledged op survives a crash of the server process. PostgreSQL's
// synchronous_commit=off does not keep it (a commit returns with its WAL
// still in shared buffers; the kill audit lost 109 acknowledged ops in 5
// kills); synchronous_commit=on with fsync=off does (the WAL is written
// to the OS before the commit returns, never flushed). fsync is the whole
// server's, so opening a store must leave the server running with the
// durability's: write off, fsync on, none off (its tables are unlogged,
// its sessions synchronous_commit=off). Each store is opened over the
// last, so the server is switched both ways.
func TestAudit15WriteModeIsFsyncOffWithSynchronousCommit(t *testing.T) {
	servicestest.Require(t, services.Postgres)
	keepServerFsync(t)
	ctx := context.Background()
	for _, tc := range []struct {
		d           store.Durability
		fsync, sync string
	}{
		{store.DurabilityWrite, "off", "on"},
		{store.DurabilityFsync, "on", "on"},
		{store.DurabilityNone, "off", "off"},
		{store.DurabilityWrite, "off", "on"},
		{store.DurabilityFsync, "on", "on"},
	} {
		st, err := postgres.Open(ctx, store.Config{Durability: tc.d, Workers: 2}, postgres.Options{Schema: testSchema})
		if err != nil {
			t.Fatalf("%s: %v", tc.d, err)
		}
		var fsync, sync string
		if err := st.Pool().QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &sync); err != nil {
			t.Fatal(err)
		}
		if fsync != tc.fsync || sync != tc.sync {
			t.Errorf("durability %s: a session runs with fsync=%s, synchronous_commit=%s; want fsync=%s, synchronous_commit=%s",
				tc.d, fsync, sync, tc.fsync, tc.sync)
		}
		// fsync is the server's: a connection of anyone else's, opened
		// now, runs with it too.
		c, err := pgx.Connect(ctx, store.PostgresDSN)
		if err != nil {
			t.Fatal(err)
		}
		if got := serverFsync(t, ctx, c); got != tc.fsync {
			t.Errorf("durability %s: the server runs with fsync=%s, want %s", tc.d, got, tc.fsync)
		}
		c.Close(ctx)
		if err := st.Load(ctx, nil); err != nil {
			t.Fatal(err)
		}
		desc, err := st.Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"fsync=" + tc.fsync, "synchronous_commit=" + tc.sync} {
			if !strings.Contains(desc, w) {
				t.Errorf("durability %s: Describe = %q, want it to name %s", tc.d, desc, w)
			}
		}
		st.Close()
	}
}

// TestAudit15RWDurableIsTheServersFsync: the rw workload's --durable picks
// fsync mode's settings, and without it write's: fsync=off on the server
// and synchronous_commit=on (off, as it was, lost acknowledged writes on
// a crash of the server). Closing the space puts back the server's fsync
// as the store runs it.
func TestAudit15RWDurableIsTheServersFsync(t *testing.T) {
	servicestest.Require(t, services.Postgres)
	keepServerFsync(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, store.Config{Durability: store.DurabilityFsync, Workers: 2}, postgres.Options{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := pgx.Connect(ctx, store.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, durable := range []bool{false, true} {
		sp, err := st.RWOpen(ctx, store.RWOptions{Lock: store.RWLockHard, Durable: durable})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "on", false: "off"}[durable]
		if got := serverFsync(t, ctx, c); got != want {
			t.Errorf("--durable=%v: the server runs with fsync=%s, want %s", durable, got, want)
		}
		setting := sp.Info().Setting
		if !strings.Contains(setting, "fsync="+want) || !strings.Contains(setting, "synchronous_commit=on") {
			t.Errorf("--durable=%v: setting %q, want fsync=%s and synchronous_commit=on", durable, setting, want)
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
		if got := serverFsync(t, ctx, c); got != "on" {
			t.Errorf("--durable=%v: after Close the server runs with fsync=%s, want the store's on", durable, got)
		}
	}
}

// TestAudit15OtherServersFsyncIsLeftAlone: ALTER SYSTEM outlives the run,
// and fsync=off left on a server allot services does not run would put
// every commit of its owner at the mercy of a power cut. A server without
// allot.managed = on in its configuration is refused, naming the
// statements to run, and left as it was. (The DSN sets the marker off for
// the store's sessions, as a server without it reads.)
func TestAudit15OtherServersFsyncIsLeftAlone(t *testing.T) {
	servicestest.Require(t, services.Postgres)
	keepServerFsync(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, store.Config{Durability: store.DurabilityFsync, Workers: 1}, postgres.Options{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	foreign := store.PostgresDSN + "&" + store.PostgresManagedSetting + "=off"
	st, err = postgres.Open(ctx, store.Config{Durability: store.DurabilityWrite, Workers: 1, Addr: foreign}, postgres.Options{Schema: testSchema})
	if err == nil {
		st.Close()
		t.Fatal("a write store opened on a server allot services does not run, running with fsync=on")
	}
	if !errors.Is(err, store.ErrDurabilityMismatch) || !strings.Contains(err.Error(), "ALTER SYSTEM SET fsync = off") {
		t.Errorf("refusal = %v; want ErrDurabilityMismatch naming ALTER SYSTEM SET fsync = off", err)
	}
	c, err := pgx.Connect(ctx, store.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if got := serverFsync(t, ctx, c); got != "on" {
		t.Errorf("after the refusal the server runs with fsync=%s, want on (left alone)", got)
	}
}

// TestAudit15CloseLeavesTheServersFsync: a write store switches the
// server to fsync=off; closing it puts back what the server ran with, so
// that a write run leaves no fsync=off behind it for whatever uses the
// server next.
func TestAudit15CloseLeavesTheServersFsync(t *testing.T) {
	servicestest.Require(t, services.Postgres)
	keepServerFsync(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, store.Config{Durability: store.DurabilityFsync, Workers: 1}, postgres.Options{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = postgres.Open(ctx, store.Config{Durability: store.DurabilityWrite, Workers: 1}, postgres.Options{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, store.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if got := serverFsync(t, ctx, c); got != "off" {
		t.Fatalf("with a write store open the server runs with fsync=%s, want off", got)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := pgx.Connect(ctx, store.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	if got := serverFsync(t, ctx, c2); got != "on" {
		t.Errorf("after the write store closed the server runs with fsync=%s, want on (as it found it)", got)
	}
}
