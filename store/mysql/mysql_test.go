package mysql_test

import (
	"context"
	"strings"
	"testing"

	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/mysql"
	"allot/store/storetest"
)

// open opens a store on a test table of its own, apart from the bench's.
func open(t *testing.T, e mysql.Engine, d store.Durability) *mysql.Store {
	t.Helper()
	servicestest.Require(t, services.MariaDB)
	st, err := mysql.Open(context.Background(), store.Config{Durability: d, Workers: 16},
		mysql.Options{Engine: e, Table: "test_" + strings.ToLower(string(e))})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestConformance(t *testing.T) {
	for _, e := range []mysql.Engine{mysql.InnoDB, mysql.MyISAM} {
		t.Run(string(e), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store { return open(t, e, store.DurabilityWrite) })
		})
	}
}

func TestDescribeReadsTheServerBack(t *testing.T) {
	for _, tc := range []struct {
		e    mysql.Engine
		d    store.Durability
		want []string
	}{
		{mysql.InnoDB, store.DurabilityFsync, []string{"MariaDB 10", "InnoDB", "innodb_flush_log_at_trx_commit=1"}},
		{mysql.InnoDB, store.DurabilityWrite, []string{"InnoDB", "innodb_flush_log_at_trx_commit=2"}},
		{mysql.InnoDB, store.DurabilityNone, []string{"InnoDB", "innodb_flush_log_at_trx_commit=0"}},
		{mysql.MyISAM, store.DurabilityFsync, []string{"MyISAM", "flush=ON"}},
		{mysql.MyISAM, store.DurabilityWrite, []string{"MyISAM", "flush=OFF"}},
	} {
		st := open(t, tc.e, tc.d)
		ctx := context.Background()
		got, err := st.Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %s: Describe = %q, want it to mention %q", tc.e, tc.d, got, w)
			}
		}
		se, err := st.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := se.(store.Retrier); !ok {
			t.Error("a mysql session does not report conflict retries")
		}
		se.Close()
		st.Close()
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []mysql.Options{{Engine: "Aria"}, {Table: "rows; DROP TABLE x"}, {Table: "Rows"}} {
		if err := o.Validate(); err == nil {
			t.Errorf("Options %+v passed Validate", o)
		}
	}
	o := mysql.Options{Engine: mysql.MyISAM}
	if err := o.Validate(); err != nil || o.Table != "rows_myisam" {
		t.Errorf("MyISAM defaults: %+v, %v", o, err)
	}
}
