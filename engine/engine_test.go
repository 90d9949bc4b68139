package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"allot/inventory"
	"allot/vfs"
)

func rk(sku, w string) inventory.RowKey {
	return inventory.RowKey{SKU: sku, Warehouse: w, Condition: "new", Source: "s1"}
}
func gk(sku string) inventory.GroupKey {
	return inventory.GroupKey{SKU: sku, Condition: "new", Source: "s1"}
}

func mustOpen(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// must returns res, and panics on an operational error: a test that gets
// one fails with its stack.
func must(res inventory.Result, err error) inventory.Result {
	if err != nil {
		panic(err)
	}
	return res
}

func TestOpsAndReopenInEveryMode(t *testing.T) {
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite, DurabilityNone} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			e := mustOpen(t, Config{Dir: dir, Durability: mode})
			must(e.Stock(rk("a", "w2"), 5, 10))
			must(e.Stock(rk("a", "w1"), 1, 10))
			res := must(e.Capture(gk("a"), 3, nil))
			if res.Code != inventory.CodeOK || !slices.Equal(res.Lines, []inventory.Line{{Warehouse: "w1", Count: 1}, {Warehouse: "w2", Count: 2}}) {
				t.Fatalf("capture: %+v", res)
			}
			if res := must(e.Capture(gk("a"), 4, nil)); res.Code != inventory.CodeInsufficient || res.Available != 3 {
				t.Fatalf("insufficient capture: %+v", res)
			}
			if res := must(e.Release(rk("a", "w1"), 2)); res.Code != inventory.CodeOK || res.Count != 2 {
				t.Fatalf("release: %+v", res)
			}
			if res := must(e.Release(rk("a", "w9"), 2)); res.Code != inventory.CodeNotFound {
				t.Fatalf("release of an unknown row: %+v", res)
			}
			if res := must(e.Available(gk("a"))); res.Count != 5 {
				t.Fatalf("available: %+v", res)
			}
			rows, err := e.RowsOfSKU("a")
			if err != nil || len(rows) != 2 {
				t.Fatalf("rows of a: %v %v", rows, err)
			}
			want, _ := e.Rows()
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Capture(gk("a"), 1, nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("after close: %v", err)
			}
			e2 := mustOpen(t, Config{Dir: dir, Durability: mode})
			defer e2.Close()
			got, _ := e2.Rows()
			if !slices.Equal(got, want) {
				t.Fatalf("after reopen:\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	e := mustOpen(t, Config{Dir: t.TempDir()})
	defer e.Close()
	must(e.Stock(rk("a", "w1"), 5, 10))
	bad := []inventory.Op{
		inventory.Capture(gk(""), 1),
		inventory.Capture(gk(strings.Repeat("x", 65)), 1),
		inventory.Capture(gk("a"), 0),
		inventory.Capture(gk("a"), -5),
		inventory.Release(rk("a", "w\x01"), 1),
		inventory.Release(rk("a", "w1"), 1<<31),
		inventory.Stock(rk("a", "w1"), -1, 1),
	}
	for _, op := range bad {
		res, err := e.Do(op, nil)
		if err != nil || res.Code != inventory.CodeInvalid || res.Detail == "" {
			t.Fatalf("%s %v n=%d: got %+v %v, want invalid with a detail", op.Kind, op.Key, op.N, res, err)
		}
	}
	if _, err := e.RowsOfSKU(""); err == nil {
		t.Fatal("RowsOfSKU with an empty sku must fail")
	}
	if res := must(e.Get(rk("a", "w1"))); res.Count != 5 {
		t.Fatalf("state changed: %+v", res)
	}
	if st := e.Stats(); st.Journaled != 1 {
		t.Fatalf("journaled %d ops, want only the stock", st.Journaled)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(Config{}); err == nil || !strings.Contains(err.Error(), "no data directory") {
		t.Fatalf("no dir: %v", err)
	}
	if _, err := Open(Config{Dir: t.TempDir(), Durability: "sometimes"}); err == nil || !strings.Contains(err.Error(), `unknown durability "sometimes"`) {
		t.Fatalf("bad durability: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := Open(Config{Dir: filepath.Join(file, "data")}); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("unusable dir: %v", err)
	}
	if os.Geteuid() != 0 {
		ro := t.TempDir()
		os.Chmod(ro, 0o500)
		if _, err := Open(Config{Dir: ro}); err == nil {
			t.Fatal("read-only dir opened")
		}
	}
	dir := t.TempDir()
	e := mustOpen(t, Config{Dir: dir})
	defer e.Close()
	if _, err := Open(Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second engine on one dir: %v", err)
	}
}

// TestBackPressure: a queue of one, many submitters; nothing is dropped.
func TestBackPressure(t *testing.T) {
	e := mustOpen(t, Config{Dir: t.TempDir(), QueueMax: 1, Durability: DurabilityWrite})
	must(e.Stock(rk("a", "w1"), 0, 1))
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if res, err := e.Release(rk("a", "w1"), 1); err != nil || res.Code != inventory.CodeOK {
					t.Errorf("release: %+v %v", res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if res := must(e.Get(rk("a", "w1"))); res.Count != 32*200 {
		t.Fatalf("count %d, want %d", res.Count, 32*200)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestJournalFailureStopsTheEngine: after a failed fdatasync nothing is
// acknowledged any more, and Close reports the failure.
func TestJournalFailureStopsTheEngine(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	e := mustOpen(t, Config{Dir: "/d", FS: fs})
	must(e.Stock(rk("a", "w1"), 5, 1))
	fs.FailSyncs(true)
	if _, err := e.Capture(gk("a"), 1, nil); !errors.Is(err, vfs.ErrInjected) || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("capture during a failing sync: want an unknown outcome, got %v", err)
	}
	fs.FailSyncs(false)
	if _, err := e.Capture(gk("a"), 1, nil); !errors.Is(err, vfs.ErrInjected) || !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("capture after a failed sync must be refused (unavailable): %v", err)
	}
	if _, err := e.Get(rk("a", "w1")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a read after a failed sync must be refused too: %v", err)
	}
	if !e.Stats().Failed {
		t.Fatal("stats do not say failed")
	}
	if err := e.Close(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("close: %v", err)
	}
}

func TestSnapshotsBoundRecovery(t *testing.T) {
	dir := t.TempDir()
	e := mustOpen(t, Config{Dir: dir, Durability: DurabilityWrite, SnapshotEveryOps: 1000, SegmentBytes: 8192, KeepSnapshots: 1})
	must(e.Stock(rk("a", "w1"), 0, 1))
	for i := 0; i < 5000; i++ {
		must(e.Release(rk("a", "w1"), 1))
	}
	e.Close()
	e2 := mustOpen(t, Config{Dir: dir, KeepSnapshots: 1})
	defer e2.Close()
	rec := e2.Recovery()
	if rec.SnapshotLSN == 0 || rec.Replayed >= 2000 || rec.LastLSN != 5001 {
		t.Fatalf("recovery %+v: want a snapshot and a short replay", rec)
	}
	if res := must(e2.Get(rk("a", "w1"))); res.Count != 5000 {
		t.Fatalf("count %d", res.Count)
	}
	names, _ := os.ReadDir(dir)
	segs := 0
	for _, n := range names {
		if strings.HasPrefix(n.Name(), "journal-") {
			segs++
		}
	}
	if segs > 10 { // without snapshots: about 25 segments of 8 KiB
		t.Fatalf("%d segments left: snapshots must remove covered ones", segs)
	}
}

// TestSimulatedCrashes runs concurrent clients against an engine on the
// in-memory FS, cuts the power at a random moment (keeping a random part of
// every unsynced tail), recovers, and checks: every acknowledged op is in
// the recovered state, and that state is the state after some prefix of the
// journal. Failures print the seed.
func TestSimulatedCrashes(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		for _, mode := range []Durability{DurabilityFsync, DurabilityWrite} {
			simulateCrash(t, seed, mode)
		}
	}
}

func simulateCrash(t *testing.T, seed uint64, mode Durability) {
	rng := rand.New(rand.NewPCG(seed, 3))
	mem := vfs.NewMem()
	e := mustOpen(t, Config{Dir: "/d", FS: mem, Durability: mode, SnapshotEveryOps: int64(200 + rng.IntN(500)), SegmentBytes: 4096})
	// Each client releases to its own row: the count of row c after
	// recovery is exactly the number of its releases that survived, and
	// those must be a prefix of what it sent, containing every ack.
	const clients = 8
	for c := 0; c < clients; c++ {
		must(e.Stock(rk("a", fmt.Sprint("w", c)), 0, 1))
	}
	var acked, ackedAtCrash [clients]int64
	var mu sync.Mutex
	crashAt := 200 + rng.IntN(2000)
	var crashed *vfs.Mem
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var total int64
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := e.Release(rk("a", fmt.Sprint("w", c)), 1)
				if err != nil {
					return
				}
				if res.Code != inventory.CodeOK {
					t.Errorf("seed %d: release %+v", seed, res)
					return
				}
				mu.Lock()
				acked[c] = res.Count
				total++
				if total == int64(crashAt) && crashed == nil {
					// Power cut: what the disk holds now is all there is.
					// Anything acked before this moment must survive.
					crashed = mem.Crash(func(string, int) int { return rng.IntN(64) })
					if mode == DurabilityWrite {
						// write mode promises only a process crash: the OS
						// keeps every write, and every directory entry.
						crashed = mem.CrashProcess()
					}
					ackedAtCrash = acked
					close(stop)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	e.Close()
	e2, err := Open(Config{Dir: "/d", FS: crashed})
	if err != nil {
		t.Fatalf("seed %d %s: recover: %v", seed, mode, err)
	}
	defer e2.Close()
	for c := 0; c < clients; c++ {
		res := must(e2.Get(rk("a", fmt.Sprint("w", c))))
		// ackedAtCrash[c] is the count the client saw last before the
		// crash; it may have had one more release in flight.
		if res.Count < ackedAtCrash[c] || res.Count > ackedAtCrash[c]+1 {
			t.Fatalf("seed %d %s client %d: recovered count %d, acknowledged %d", seed, mode, c, res.Count, ackedAtCrash[c])
		}
	}
}

func TestStatsCountRequestsInEveryMode(t *testing.T) {
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite, DurabilityNone} {
		e := mustOpen(t, Config{Dir: t.TempDir(), Durability: mode})
		must(e.Stock(rk("a", "w1"), 5, 1))
		must(e.Capture(gk("a"), 1, nil))
		must(e.Get(rk("a", "w1")))
		e.Close() // the last flush
		st := e.Stats()
		if st.Requests != 3 || st.Batches < 1 || st.Journaled != 2 {
			t.Fatalf("%s: stats %+v", mode, st)
		}
		var sum int64
		for _, n := range st.BatchSize {
			sum += n
		}
		if sum != st.Batches {
			t.Fatalf("%s: batch size histogram holds %d batches, %d counted", mode, sum, st.Batches)
		}
	}
}

// TestCheckedIsTakenOnce: a request marked Checked skips the engine's own
// check once; reused without the mark, a malformed op is refused again
// (CodeInvalid, state unchanged), in Submit and in SubmitBatch alike.
func TestCheckedIsTakenOnce(t *testing.T) {
	for _, durability := range []Durability{DurabilityWrite, DurabilityFsync} {
		e, err := Open(Config{Dir: t.TempDir(), Durability: durability})
		if err != nil {
			t.Fatal(err)
		}
		k := inventory.RowKey{SKU: "ample", Warehouse: "w1", Condition: "new", Source: "retail"}
		if _, err := e.Stock(k, 10, 1); err != nil {
			t.Fatal(err)
		}
		r := NewRequest()
		r.Op = inventory.Capture(k.Group(), 2)
		r.Checked = true
		if err := e.Submit(r); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(); err != nil || r.Result.Code != inventory.CodeOK {
			t.Fatalf("%s: checked capture: %v %v", durability, r.Result, err)
		}
		for _, batch := range []bool{false, true} {
			r.Op = inventory.Capture(inventory.GroupKey{SKU: "ample", Condition: "new\x00", Source: "retail"}, 1)
			if batch {
				other := NewRequest()
				other.Op = inventory.Available(k.Group())
				if _, err := e.SubmitBatch([]*Request{r, other}); err != nil {
					t.Fatal(err)
				}
				other.Wait()
			} else if err := e.Submit(r); err != nil {
				t.Fatal(err)
			}
			if err := r.Wait(); err != nil || r.Result.Code != inventory.CodeInvalid {
				t.Fatalf("%s, batch %v: a malformed op after a checked one: %v %v, want %s", durability, batch, r.Result, err, inventory.CodeInvalid)
			}
		}
		if res, err := e.Available(k.Group()); err != nil || res.Count != 8 {
			t.Fatalf("%s: available %v %v, want 8", durability, res, err)
		}
		e.Close()
	}
}
