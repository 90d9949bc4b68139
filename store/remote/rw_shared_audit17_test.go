package remote_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"allot/engine"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
	"allot/store/storetest"
)

// countingProxy forwards TCP connections to target and counts those it
// accepted: how many connections a store really opened.
func countingProxy(t *testing.T, target string) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int64)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return ln.Addr().String(), accepted
}

// TestAudit17MuxRecordSessionsShareTheConnection: allot-mux's result says
// its sessions share one connection (Describe), and workload kv compares
// it with the tarantool stores, whose record sessions share theirs. Its
// record sessions used to open a connection each, as allot's do: a kv run
// of allot-mux measured allot under allot-mux's label. Sixteen sessions,
// each writing and reading a pipeline, now add no connection to the
// store's own (its client, the records' admin, the shared one), and what
// they write reads back.
func TestAudit17MuxRecordSessionsShareTheConnection(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	addr, accepted := countingProxy(t, s.RESPAddr())
	ctx := context.Background()
	st, err := remote.Open(ctx, store.Config{Addr: addr, Durability: store.DurabilityWrite, Workers: 16, Pipeline: 8}, remote.Options{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sp, err := st.RWOpen(ctx, store.RWOptions{Lock: store.RWLockHard, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	const sessions, depth = 16, 8
	var wg sync.WaitGroup
	for w := range sessions {
		se, err := sp.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer se.Close()
		p := se.(store.RWPipeliner)
		wg.Go(func() {
			recs := make([]store.RWRecord, depth)
			keys := make([]string, depth)
			for i := range recs {
				recs[i] = store.RWRecord{Key: fmt.Sprintf("k%02d-%d", w, i), Value: int64(w*100 + i)}
				keys[i] = recs[i].Key
			}
			if err := p.PipelineWrite(ctx, recs); err != nil {
				t.Errorf("session %d: write: %v", w, err)
				return
			}
			values, found := make([]int64, depth), make([]bool, depth)
			if err := p.PipelineRead(ctx, keys, values, found); err != nil {
				t.Errorf("session %d: read: %v", w, err)
				return
			}
			for i := range keys {
				if !found[i] || values[i] != recs[i].Value {
					t.Errorf("session %d: %s read %d (found %v), wrote %d", w, keys[i], values[i], found[i], recs[i].Value)
				}
			}
		})
	}
	wg.Wait()
	recs, err := sp.Records(ctx)
	if err != nil || len(recs) != sessions*depth {
		t.Fatalf("Records: %d records, %v; want %d", len(recs), err, sessions*depth)
	}
	// The store's client (HELLO; a pool of 2), the records' admin, the
	// shared connection: never one per session.
	if n := accepted.Load(); n > 4 {
		t.Fatalf("%d sessions of allot-mux opened %d connections: its record sessions do not share its connection", sessions, n)
	}
}

// TestAudit17MuxRecords runs the records suite on allot-mux's record
// sessions (the shared connection).
func TestAudit17MuxRecords(t *testing.T) {
	storetest.RunRecords(t, func(t *testing.T, d store.Durability) store.Store {
		s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.Durability(d)})
		st, err := remote.Open(context.Background(), store.Config{Addr: s.RESPAddr(), Durability: d}, remote.Options{Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}, storetest.RecordsCaps{Unlocked: true, Locked: true, InsertOverwrites: true})
}
