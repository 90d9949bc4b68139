package main

import (
	"context"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
	"allot/store/remote"
)

// TestRemoteStoreAtAStandby: `allot bench --stores allot-cluster --addr`
// may name any node of the shard. Opened at a standby, the store's Load
// (pipelined sets, which a standby refuses naming the primary) and its
// sessions' captures (followed by the client) reach the primary, and the
// primary holds what they did. Sessions opened after a load start at the
// primary it found, and Rows reads there.
func TestRemoteStoreAtAStandby(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := privateCluster(ctx, t, nil)
	h, err := c.ready(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	standby := ""
	for _, n := range c.nodes {
		if n.resp != h.RESP {
			standby = n.resp
		}
	}
	// openAt opens a store at the standby, closed when the test ends.
	openAt := func(o remote.Options) *remote.Store {
		t.Helper()
		st, err := remote.Open(ctx, store.Config{Addr: standby, Durability: store.DurabilityFsync, Workers: 2, Timeout: 30 * time.Second}, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st := openAt(remote.Options{})
	row := inventory.RowKey{SKU: "standby-sku", Warehouse: "w1", Condition: "new", Source: "retail"}
	if err := st.Load(ctx, []inventory.Row{{Key: row, Count: 5, Price: 1}}); err != nil {
		t.Fatalf("Load at a standby: %v", err)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	if res, err := se.Capture(ctx, row.Group(), 2, nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("Capture at a standby: %+v, %v", res, err)
	}
	// Rows reads the primary the load found, not the standby (which applies
	// the log a moment behind it).
	rows, err := st.Rows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Count != 3 {
		t.Fatalf("Rows after a capture: %+v, want the row at 3", rows)
	}

	// A session opened after the load starts at the primary the load
	// found: its first pipeline of mutations goes through.
	pipeline := func(st *remote.Store) store.Pipeliner {
		t.Helper()
		se, err := st.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { se.Close() })
		pl, ok := se.(store.Pipeliner)
		if !ok {
			t.Fatal("the session does not pipeline")
		}
		return pl
	}
	ops := []inventory.Op{inventory.Capture(row.Group(), 1)}
	results := make([]inventory.Result, len(ops))
	if err := pipeline(st).Pipeline(ctx, ops, results); err != nil {
		t.Fatalf("a session opened after a load through a standby: its first pipeline: %v", err)
	}

	// A store that loaded nothing starts its sessions at the standby: the
	// first pipeline is refused (a standby applies nothing), the next goes
	// to the primary.
	bare := openAt(remote.Options{})
	pl := pipeline(bare)
	if err := pl.Pipeline(ctx, ops, results); err == nil {
		t.Fatal("a standby took a pipeline of captures")
	}
	if err := pl.Pipeline(ctx, ops, results); err != nil {
		t.Fatalf("the second pipeline, after the refusal: %v", err)
	}
	if rows, err = st.RowsAt(ctx, h.RESP); err != nil || len(rows) != 1 || rows[0].Count != 1 {
		t.Fatalf("the primary holds %+v (%v), want the row at 1", rows, err)
	}

	// The shared connection (allot-mux) follows as well.
	mux := openAt(remote.Options{Shared: true})
	mse, err := mux.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer mse.Close()
	if res, err := mse.Release(ctx, row, 4); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("Release through a shared connection at a standby: %+v, %v", res, err)
	}
	if rows, err = st.RowsAt(ctx, h.RESP); err != nil || len(rows) != 1 || rows[0].Count != 5 {
		t.Fatalf("the primary holds %+v (%v), want the row at 5", rows, err)
	}

	// Sessions that started at the primary a load found go back to the
	// node their store was opened at when that primary dies, not to the
	// dead primary: a plain session and the shared connection, each of a
	// store that loaded through the standby.
	loadedMux := openAt(remote.Options{Shared: true})
	if err := loadedMux.Load(ctx, []inventory.Row{{Key: row, Count: 5, Price: 1}}); err != nil {
		t.Fatalf("Load of the shared store at a standby: %v", err)
	}
	sessions := map[string]store.Session{}
	for name, loaded := range map[string]*remote.Store{"a session": st, "the shared connection": loadedMux} {
		se, err := loaded.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer se.Close()
		if res, err := se.Release(ctx, row, 1); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("%s, before the kill: %+v, %v", name, res, err)
		}
		sessions[name] = se
	}
	c.node(h.Node).kill()
	for name, se := range sessions {
		deadline := time.Now().Add(60 * time.Second)
		for {
			res, err := se.Release(ctx, row, 1)
			if err == nil && res.Code == inventory.CodeOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no release went through in 60 s after the primary died: %+v, %v", name, res, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
