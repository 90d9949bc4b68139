package remote_test

import (
	"context"
	"testing"

	"allot/bench/rw/rwtest"
	"allot/engine"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
	"allot/store/storetest"
)

// TestRecords runs the records suite over RESP against an in-process
// server in the durability each test asks for.
func TestRecords(t *testing.T) {
	storetest.RunRecords(t, func(t *testing.T, d store.Durability) store.Store {
		s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.Durability(d)})
		st, err := remote.Open(context.Background(), store.Config{Addr: s.RESPAddr(), Durability: d}, remote.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}, storetest.RecordsCaps{Unlocked: true, Locked: true, InsertOverwrites: true})
}

// TestLostUpdates: STOCK.GET then STOCK.SET over RESP from 8 connections
// on 4 records loses updates; MODIFY_LOCKED (one RELEASE each) loses none.
func TestLostUpdates(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	st, err := remote.Open(context.Background(), store.Config{Addr: s.RESPAddr(), Durability: store.DurabilityWrite}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lost := rwtest.LostUpdates(t, st, store.DurabilityWrite)
	if lost == 0 {
		t.Error("MODIFY without a lock lost no update on 8 connections and 4 records")
	}
	t.Logf("MODIFY without a lock: %d lost updates of 2000", lost)
}
