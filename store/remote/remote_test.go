package remote_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"allot/engine"
	"allot/inventory"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
	"allot/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }

// TestConformance runs the shared suite against servers the store starts
// itself, as allot bench --store allot does, in every durability mode.
func TestConformance(t *testing.T) {
	bin := servertest.BuildAllot(t)
	for _, d := range []store.Durability{store.DurabilityFsync, store.DurabilityWrite, store.DurabilityNone} {
		t.Run(string(d), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				st, err := remote.Open(context.Background(), store.Config{Durability: d, Workers: 8}, remote.Options{Binary: bin})
				if err != nil {
					t.Fatal(err)
				}
				return st
			})
		})
	}
}

// TestConformanceShared runs the suite with every session on one shared
// connection (the allot-mux store).
func TestConformanceShared(t *testing.T) {
	bin := servertest.BuildAllot(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		st, err := remote.Open(context.Background(), store.Config{Durability: store.DurabilityWrite, Workers: 8}, remote.Options{Binary: bin, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// TestAddr drives a server given by address (here one started in-process),
// and refuses one whose durability differs from the one asked.
func TestAddr(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	ctx := context.Background()
	st, err := remote.Open(ctx, store.Config{Addr: s.RESPAddr(), Durability: store.DurabilityWrite}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	desc, err := st.Describe(ctx)
	if err != nil || !strings.Contains(desc, "durability write") || !strings.Contains(desc, s.RESPAddr()) {
		t.Fatalf("Describe: %q %v", desc, err)
	}
	rows := []inventory.Row{{Key: inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, Count: 5, Price: 1}}
	if err := st.Load(ctx, rows); err != nil {
		t.Fatal(err)
	}
	got, err := st.Rows(ctx)
	if err != nil || !reflect.DeepEqual(got, rows) {
		t.Fatalf("Rows: %v %v", got, err)
	}

	_, err = remote.Open(ctx, store.Config{Addr: s.RESPAddr(), Durability: store.DurabilityFsync}, remote.Options{})
	if err == nil || !strings.Contains(err.Error(), "runs durability write, the bench asked for fsync") {
		t.Fatalf("durability mismatch: %v", err)
	}
	_, err = remote.Open(ctx, store.Config{Addr: "127.0.0.1:1", Durability: store.DurabilityWrite}, remote.Options{})
	if !errors.Is(err, store.ErrServerDown) {
		t.Fatalf("no server: %v, want store.ErrServerDown", err)
	}
}

// TestPipeliner runs ops through the Pipeliner capability and one by one on
// two fresh stores: outcomes agree.
func TestPipeliner(t *testing.T) {
	bin := servertest.BuildAllot(t)
	ctx := context.Background()
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	rows := []inventory.Row{{Key: g.Row("w1"), Count: 3, Price: 1}, {Key: g.Row("w2"), Count: 4, Price: 1}}
	var ops []inventory.Op
	for i := range 64 {
		if i%3 == 2 {
			ops = append(ops, inventory.Release(g.Row("w2"), 1))
		} else {
			ops = append(ops, inventory.Capture(g, int64(i%4+1)))
		}
	}
	open := func(pipeline int) (store.Store, store.Session) {
		st, err := store.Open(ctx, "allot", store.Config{Durability: store.DurabilityWrite, Pipeline: pipeline})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		})
		if err := st.Load(ctx, rows); err != nil {
			t.Fatal(err)
		}
		se, err := st.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { se.Close() })
		return st, se
	}
	t.Setenv("ALLOT_BIN", bin)
	_, one := open(1)
	var want []inventory.Result
	for _, op := range ops {
		var r inventory.Result
		var err error
		if op.Kind == inventory.KindCapture {
			r, err = one.Capture(ctx, op.Key.Group(), op.N, nil)
		} else {
			r, err = one.Release(ctx, op.Key, op.N)
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	_, se := open(64)
	p, ok := se.(store.Pipeliner)
	if !ok {
		t.Fatal("the session does not implement Pipeliner")
	}
	if p.PipelineDepth() != 64 {
		t.Fatalf("PipelineDepth %d, want 64", p.PipelineDepth())
	}
	got := make([]inventory.Result, len(ops))
	if err := p.Pipeline(ctx, ops, got); err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("op %d %+v: pipelined %+v, one by one %+v", i, ops[i], got[i], want[i])
		}
	}
}

// TestChildStops checks that Close stops the server the store started and
// removes its data directory.
func TestChildStops(t *testing.T) {
	bin := servertest.BuildAllot(t)
	dir := t.TempDir()
	st, err := remote.Open(context.Background(), store.Config{DataDir: dir}, remote.Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	addr := st.Addr()
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := remote.Open(context.Background(), store.Config{Addr: addr}, remote.Options{}); !errors.Is(err, store.ErrServerDown) {
		t.Fatalf("the server still answers after Close: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a DataDir given by the caller was removed: %v", err)
	}
}

func TestNoBinary(t *testing.T) {
	t.Setenv("ALLOT_BIN", "")
	t.Setenv("PATH", t.TempDir())
	_, err := remote.Open(context.Background(), store.Config{}, remote.Options{})
	if err == nil || !strings.Contains(err.Error(), "no allot executable") {
		t.Fatalf("%v", err)
	}
}
