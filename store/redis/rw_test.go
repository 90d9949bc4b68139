package redis_test

import (
	"context"
	"testing"

	"allot/bench/rw/rwtest"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/storetest"
)

func openRW(t *testing.T, d store.Durability) store.Store {
	t.Helper()
	servicestest.Require(t, "redis")
	st, err := store.Open(context.Background(), "redis", store.Config{Durability: d, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRecords(t *testing.T) {
	storetest.RunRecords(t, func(t *testing.T, d store.Durability) store.Store { return openRW(t, d) },
		storetest.RecordsCaps{Unlocked: true, Locked: true, Versioned: true, Transactional: true, SoftLock: true})
}

// TestLostUpdates: GET then SET from 8 clients on 4 keys loses updates;
// the Lua script and WATCH/MULTI/EXEC lose none.
func TestLostUpdates(t *testing.T) {
	st := openRW(t, store.DurabilityWrite)
	defer st.Close()
	lost := rwtest.LostUpdates(t, st, store.DurabilityWrite)
	if lost == 0 {
		t.Error("MODIFY without a lock lost no update on 8 workers and 4 records")
	}
	t.Logf("MODIFY without a lock: %d lost updates of 2000", lost)
	res := rwtest.Run(t, st, store.DurabilityWrite, 8, 2000, "--request-type", "MODIFY", "--versioned", "--records", "4")
	if !res.Check.OK || res.Extra["lost_updates"].(int64) != 0 {
		t.Errorf("MODIFY --versioned: check %+v, lost %v", res.Check, res.Extra["lost_updates"])
	}
	t.Logf("MODIFY --versioned: %d optimistic retries", res.ConflictRetries)
}
