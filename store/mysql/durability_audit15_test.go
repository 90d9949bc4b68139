package mysql_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"allot/store"
	"allot/store/mysql"
)

// The binary log is on for every engine: MariaDB writes a MyISAM
// statement to it as it does an InnoDB commit, and with sync_binlog=1 it
// fdatasyncs it at each one. The MyISAM store set only flush, so its
// figures were whatever sync_binlog the run before it left: on this
// machine, seed, 16 workers, --durability write, 4,186 and 4,193 ops/s
// after sync_binlog=0 against 1,539 and 1,430 after sync_binlog=1, with
// one and the same description ("flush=OFF"). A MyISAM run must set the
// binlog's sync as its durability says (store.MariaDBSyncBinlog, as the
// InnoDB store does) and name it in its description; so must the records
// space.
func TestMyISAMSetsTheBinlogSync(t *testing.T) {
	ctx := context.Background()
	// The server is shared: put back what the test found.
	was := serverVars(t, "sync_binlog", "flush")
	t.Cleanup(func() {
		setServerVars(t, fmt.Sprintf("SET GLOBAL sync_binlog = %d, GLOBAL flush = %d", was[0], was[1]))
	})
	if v := serverVars(t, "log_bin"); v[0] == 0 {
		t.Skip("the server runs without a binary log")
	}
	for _, tc := range []struct {
		d     store.Durability
		start int // sync_binlog left by an earlier run
		want  int
	}{
		{store.DurabilityWrite, 1, 0},
		{store.DurabilityNone, 1, 0},
		{store.DurabilityFsync, 0, 1},
	} {
		setServerVars(t, fmt.Sprintf("SET GLOBAL sync_binlog = %d", tc.start))
		st := open(t, mysql.MyISAM, tc.d)
		if v := serverVars(t, "sync_binlog"); v[0] != tc.want {
			t.Errorf("MyISAM %s opened after sync_binlog=%d: sync_binlog=%d, want %d", tc.d, tc.start, v[0], tc.want)
		}
		d, err := st.Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w := fmt.Sprintf("sync_binlog=%d", tc.want); !strings.Contains(d, w) {
			t.Errorf("MyISAM %s: Describe = %q, want it to name %s", tc.d, d, w)
		}
		st.Close()
	}

	// The records space: --durable=false leaves the binlog to the OS,
	// --durable syncs it, and Close puts back what was there.
	st := open(t, mysql.MyISAM, store.DurabilityFsync)
	defer st.Close()
	for _, durable := range []bool{false, true} {
		start := map[bool]int{false: 1, true: 0}[durable]
		setServerVars(t, fmt.Sprintf("SET GLOBAL sync_binlog = %d", start))
		sp, err := st.RWOpen(ctx, store.RWOptions{Lock: store.RWLockHard, Durable: durable})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]int{false: 0, true: 1}[durable]
		if v := serverVars(t, "sync_binlog"); v[0] != want {
			t.Errorf("MyISAM records space, durable %v, opened after sync_binlog=%d: sync_binlog=%d, want %d", durable, start, v[0], want)
		}
		if s, w := sp.Info().Setting, fmt.Sprintf("sync_binlog=%d", want); !strings.Contains(s, w) {
			t.Errorf("MyISAM records space, durable %v: setting %q does not name %s", durable, s, w)
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
		if v := serverVars(t, "sync_binlog"); v[0] != start {
			t.Errorf("MyISAM records space closed: sync_binlog=%d, want %d back", v[0], start)
		}
	}
}
