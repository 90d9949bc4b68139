package mysql_test

import (
	"testing"

	"allot/bench/rw/rwtest"
	"allot/store"
	"allot/store/mysql"
	"allot/store/storetest"
)

func TestRecordsInnoDB(t *testing.T) {
	storetest.RunRecords(t, func(t *testing.T, d store.Durability) store.Store { return open(t, mysql.InnoDB, d) },
		storetest.RecordsCaps{Unlocked: true, Locked: true, Versioned: true, Transactional: true, SoftLock: true})
}

func TestRecordsMyISAM(t *testing.T) {
	storetest.RunRecords(t, func(t *testing.T, d store.Durability) store.Store { return open(t, mysql.MyISAM, d) },
		storetest.RecordsCaps{Unlocked: true, Locked: true, Versioned: true})
}

// TestLostUpdates: MODIFY without a lock loses updates on both engines (8
// workers on 4 records); FOR UPDATE (InnoDB) and LOCK TABLES (MyISAM) lose
// none.
func TestLostUpdates(t *testing.T) {
	for _, e := range []mysql.Engine{mysql.InnoDB, mysql.MyISAM} {
		t.Run(string(e), func(t *testing.T) {
			st := open(t, e, store.DurabilityWrite)
			defer st.Close()
			lost := rwtest.LostUpdates(t, st, store.DurabilityWrite)
			if lost == 0 {
				t.Error("MODIFY without a lock lost no update on 8 workers and 4 records")
			}
			t.Logf("MODIFY without a lock: %d lost updates of 2000", lost)
		})
	}
}
