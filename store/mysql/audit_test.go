package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"allot/store"
	"allot/store/mysql"
	"allot/store/storetest"
)

// serverVars reads global variables of the project's MariaDB.
func serverVars(t *testing.T, names ...string) []int {
	t.Helper()
	mc, err := gomysql.ParseDSN(store.MariaDBDSN)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gomysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	sel := make([]string, len(names))
	vals := make([]int, len(names))
	dst := make([]any, len(names))
	for i, n := range names {
		sel[i] = "@@GLOBAL." + n
		dst[i] = &vals[i]
	}
	if err := db.QueryRow("SELECT " + strings.Join(sel, ", ")).Scan(dst...); err != nil {
		t.Fatal(err)
	}
	return vals
}

func setServerVars(t *testing.T, q string) {
	t.Helper()
	mc, err := gomysql.ParseDSN(store.MariaDBDSN)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gomysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		t.Error(err)
	}
}

// With the binary log on (the project's MariaDB runs with log_bin, for
// `allot ingest mysql`), InnoDB's commit skips its own redo-log fsync and
// relies on the binlog for crash recovery: a transaction prepared in
// InnoDB but missing from the binlog is rolled back. With sync_binlog=0
// the binlog is left to the OS, so an acknowledged commit can be lost to
// a power cut (MariaDB KB, "Binlog group commit and
// innodb_flush_log_at_trx_commit"). The fsync mode promises survival of
// power loss: it must sync the binlog too, and say so in Describe. The
// records workload's --durable promises the same.
func TestFsyncSyncsTheBinlog(t *testing.T) {
	ctx := context.Background()
	// The server is shared: put back what the test found.
	was := serverVars(t, "sync_binlog", "innodb_flush_log_at_trx_commit")
	t.Cleanup(func() {
		setServerVars(t, fmt.Sprintf("SET GLOBAL sync_binlog = %d, GLOBAL innodb_flush_log_at_trx_commit = %d", was[0], was[1]))
	})
	st := open(t, mysql.InnoDB, store.DurabilityFsync)
	defer st.Close()
	v := serverVars(t, "log_bin", "sync_binlog", "innodb_flush_log_at_trx_commit")
	if v[0] == 0 {
		t.Skip("the server runs without a binary log")
	}
	if v[1] != 1 || v[2] != 1 {
		t.Errorf("fsync durability with log_bin on: sync_binlog=%d innodb_flush_log_at_trx_commit=%d, want 1 and 1", v[1], v[2])
	}
	d, err := st.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d, "sync_binlog=1") {
		t.Errorf("Describe = %q, want it to name sync_binlog=1", d)
	}

	// The records workload: --durable=false puts the binlog back to the
	// OS, --durable syncs it, and Close restores what was there.
	for _, durable := range []bool{false, true} {
		sp, err := st.RWOpen(ctx, store.RWOptions{Lock: store.RWLockHard, Durable: durable})
		if err != nil {
			t.Fatal(err)
		}
		v := serverVars(t, "sync_binlog", "innodb_flush_log_at_trx_commit")
		want := []int{0, 2}
		if durable {
			want = []int{1, 1}
		}
		if v[0] != want[0] || v[1] != want[1] {
			t.Errorf("records space, durable %v: sync_binlog=%d innodb_flush_log_at_trx_commit=%d, want %v", durable, v[0], v[1], want)
		}
		if s := sp.Info().Setting; !strings.Contains(s, "sync_binlog="+map[bool]string{true: "1", false: "0"}[durable]) {
			t.Errorf("records space, durable %v: setting %q does not name sync_binlog", durable, s)
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
		if v := serverVars(t, "sync_binlog", "innodb_flush_log_at_trx_commit"); v[0] != 1 || v[1] != 1 {
			t.Errorf("records space closed: sync_binlog=%d innodb_flush_log_at_trx_commit=%d, want the store's 1 and 1 back", v[0], v[1])
		}
	}
}

func TestCancelPastDeadlineExpires(t *testing.T) {
	storetest.RunCancelPastDeadline(t, func(t *testing.T) store.Store { return open(t, mysql.InnoDB, store.DurabilityWrite) })
}
