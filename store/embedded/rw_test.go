package embedded_test

import (
	"context"
	"errors"
	"testing"

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
