package sqlrecords

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"allot/services"
	"allot/services/servicestest"
	"allot/store"
)

// mariaDBSpace opens a record space on the project's MariaDB with the
// dialect store/mysql gives InnoDB (that package imports this one, so its
// RWOpen cannot be called from here).
func mariaDBSpace(t *testing.T, opts store.RWOptions) *Space {
	t.Helper()
	servicestest.Require(t, services.MariaDB)
	mc, err := mysql.ParseDSN(store.MariaDBDSN)
	if err != nil {
		t.Fatal(err)
	}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	table := "`audit17_rw_" + store.RWSpaceID() + "`"
	sp, err := Open(context.Background(), db, true, Dialect{
		Name:         "mysql InnoDB",
		Table:        table,
		Create:       "CREATE TABLE " + table + " (k VARCHAR(64) NOT NULL PRIMARY KEY, v BIGINT NOT NULL, ver BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		Placeholder:  func(int) string { return "?" },
		ShareLock:    "LOCK IN SHARE MODE",
		UpsertSuffix: " ON DUPLICATE KEY UPDATE v = VALUES(v)",
		IsConflict:   func(error) bool { return false },
		SessionSetup: []string{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"},
		Setting:      "test",
	}, opts)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}

// sessionStatus reads one of the session's own status counters on its
// connection.
func sessionStatus(t *testing.T, se *Session, name string) int64 {
	t.Helper()
	var n string
	var v int64
	if err := se.c.QueryRowContext(context.Background(), "SHOW SESSION STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A session's statements are prepared once, on its connection, as the
// mysql adapter's inventory sessions prepare theirs: go-sql-driver without
// interpolation runs a statement with arguments given as text by
// preparing it, executing it and closing it, every call (a prepare round
// trip before each execute). Every READ, MODIFY and WRITE of the MariaDB
// record spaces paid that, where PostgreSQL's driver caches its prepared
// statements per connection: the kv and rw results compared one round
// trip per statement with two.
func TestMariaDBStatementsArePreparedOnce(t *testing.T) {
	ctx := context.Background()
	for _, tx := range []bool{false, true} {
		t.Run(fmt.Sprintf("transactional=%v", tx), func(t *testing.T) {
			sp := mariaDBSpace(t, store.RWOptions{Lock: store.RWLockHard, Transactional: tx})
			recs := make([]store.RWRecord, 8)
			for i := range recs {
				recs[i] = store.RWRecord{Key: fmt.Sprintf("k%02d", i), Value: 100}
			}
			if err := sp.Load(ctx, recs); err != nil {
				t.Fatal(err)
			}
			s, err := sp.Session(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			se := s.(*Session)
			before := sessionStatus(t, se, "Com_stmt_prepare")
			const rounds = 50
			for i := range rounds {
				key := recs[i%len(recs)].Key
				if _, found, err := se.Read(ctx, key); err != nil || !found {
					t.Fatalf("read %s: found %v, %v", key, found, err)
				}
				for _, mode := range []store.RWModify{store.RWUnlocked, store.RWLocked, store.RWVersioned} {
					if _, err := se.Modify(ctx, []string{key}, 1, mode); err != nil {
						t.Fatalf("modify %s %v: %v", key, mode, err)
					}
				}
				if err := se.Write(ctx, []store.RWRecord{{Key: fmt.Sprintf("new%03d", i), Value: 1}}); err != nil {
					t.Fatal(err)
				}
				keys := []string{key, recs[(i+1)%len(recs)].Key}
				if err := se.PipelineRead(ctx, keys, make([]int64, 2), make([]bool, 2)); err != nil {
					t.Fatal(err)
				}
				if err := se.PipelineWrite(ctx, []store.RWRecord{{Key: keys[0], Value: 7}, {Key: keys[1], Value: 7}}); err != nil {
					t.Fatal(err)
				}
			}
			// A handful of statements (and a few batch shapes), each
			// prepared once: far fewer than the rounds.
			if got := sessionStatus(t, se, "Com_stmt_prepare") - before; got > 20 {
				t.Errorf("%d rounds of read, three modifies, write and two batches prepared %d statements on the session's connection; want each statement prepared once", rounds, got)
			}
			// What the session did is still what it was asked to.
			got, err := sp.Records(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sum := int64(0)
			for _, r := range got {
				sum += r.Value
			}
			if len(got) != len(recs)+rounds || sum <= 0 {
				t.Errorf("%d records (sum %d) after the rounds, want %d", len(got), sum, len(recs)+rounds)
			}
		})
	}
}
