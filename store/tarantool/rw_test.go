package tarantool

import (
	"context"
	"testing"

	"allot/bench/rw/rwtest"
	"allot/store"
	"allot/store/storetest"
)

func TestRecords(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			d := requireServer(t)
			storetest.RunRecords(t, func(t *testing.T, d store.Durability) store.Store {
				st, err := store.Open(context.Background(), name, store.Config{Durability: d, Workers: 8})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}, storetest.RecordsCaps{Unlocked: true, Locked: true, Versioned: true, Transactional: true, SoftLock: true, Durability: d})
		})
	}
}

// TestLostUpdates: a select, then a write back, from 8 workers on 4
// records loses updates (other fibers run between the two requests);
// allot_rw.modify and the versioned compare-and-set lose none.
func TestLostUpdates(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			d := requireServer(t)
			st, err := store.Open(context.Background(), name, store.Config{Durability: d, Workers: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			lost := rwtest.LostUpdates(t, st, d)
			if lost == 0 {
				t.Error("MODIFY without a lock lost no update on 8 workers and 4 records")
			}
			t.Logf("MODIFY without a lock: %d lost updates of 2000", lost)
			res := rwtest.Run(t, st, d, 8, 2000, "--request-type", "MODIFY", "--versioned", "--records", "4")
			if !res.Check.OK || res.Extra["lost_updates"].(int64) != 0 {
				t.Errorf("MODIFY --versioned: check %+v, lost %v", res.Check, res.Extra["lost_updates"])
			}
		})
	}
}
