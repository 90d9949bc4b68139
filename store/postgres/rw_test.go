package postgres_test

import (
	"testing"

	"allot/bench/rw/rwtest"
	"allot/store"
	"allot/store/storetest"
)

func TestRecords(t *testing.T) {
	storetest.RunRecords(t, func(t *testing.T, d store.Durability) store.Store { return open(t, d) },
		storetest.RecordsCaps{Unlocked: true, Locked: true, Versioned: true, Transactional: true, SoftLock: true})
}

// TestLostUpdates: MODIFY without a lock loses updates on PostgreSQL at
// READ COMMITTED (8 workers on 4 records), FOR UPDATE loses none, and a
// versioned compare-and-set loses none either.
func TestLostUpdates(t *testing.T) {
	st := open(t, store.DurabilityWrite)
	defer st.Close()
	lost := rwtest.LostUpdates(t, st, store.DurabilityWrite)
	if lost == 0 {
		t.Error("MODIFY without a lock lost no update on 8 workers and 4 records")
	}
	t.Logf("MODIFY without a lock: %d lost updates of 2000", lost)
	res := rwtest.Run(t, st, store.DurabilityWrite, 8, 2000, "--request-type", "MODIFY", "--versioned", "--records", "4")
	if !res.Check.OK || res.Extra["lost_updates"].(int64) != 0 || res.ConflictRetries == 0 {
		t.Errorf("MODIFY --versioned: check %+v, lost %v, retries %d", res.Check, res.Extra["lost_updates"], res.ConflictRetries)
	}
}
