package remote_test

import (
	"context"
	"testing"

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
