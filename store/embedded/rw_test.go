package embedded_test

import (
	"context"
	"errors"
	"testing"

	"allot/bench/rw/rwtest"
	"allot/store"
	"allot/store/embedded"
	"allot/store/storetest"
)

func TestRecords(t *testing.T) {
	storetest.RunRecords(t, func(t *testing.T, d store.Durability) store.Store {
		st, err := embedded.Open(context.Background(), store.Config{Durability: d, DataDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}, storetest.RecordsCaps{Unlocked: true, Locked: true, InsertOverwrites: true})
}

func TestRecordsRefuseWhatAllotCannotExpress(t *testing.T) {
	st, err := embedded.Open(context.Background(), store.Config{Durability: store.DurabilityFsync, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, o := range []store.RWOptions{
		{Lock: store.RWLockHard, Durable: true, Transactional: true},
		{Lock: store.RWLockHard, Durable: true, Versioned: true},
		{Lock: store.RWLockSoft, Durable: true},
		{Lock: store.RWLockHard, Durable: false},
	} {
		if _, err := st.(store.RWStore).RWOpen(context.Background(), o); !errors.Is(err, store.ErrRWUnsupported) {
			t.Errorf("%+v: err %v, want ErrRWUnsupported", o, err)
		}
	}
}

// TestLostUpdates: STOCK.GET then STOCK.SET from 8 workers on 4 records
// loses updates; MODIFY_LOCKED (one RELEASE each) loses none.
func TestLostUpdates(t *testing.T) {
	st, err := embedded.Open(context.Background(), store.Config{Durability: store.DurabilityWrite, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rwtest.LostUpdates(t, st, store.DurabilityWrite) // MODIFY_LOCKED loses none
	// In-process calls are so short that two workers rarely meet between
	// a GET and its SET: it takes more than the 2,000 modifies of
	// LostUpdates to see it happen.
	res := rwtest.Run(t, st, store.DurabilityWrite, 8, 200000, "--request-type", "MODIFY", "--records", "4")
	lost := res.Extra["lost_updates"].(int64)
	if !res.Check.OK || lost == 0 {
		t.Errorf("MODIFY without a lock on 8 workers, 4 records, 200,000 modifies: check %+v, %d lost", res.Check, lost)
	}
	t.Logf("MODIFY without a lock: %d lost updates of 200000", lost)
}
