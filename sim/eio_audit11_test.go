package sim

import (
	"errors"
	"testing"

	"allot/engine"
	"allot/inventory"
	"allot/vfs"
)

// An fdatasync that fails with EIO (fsync mode) stops the engine: the op
// whose sync failed is answered "outcome unknown", and every later
// mutation is refused until a restart. Linux has marked the pages that
// sync did not write clean: the restart, on the same machine, replays the
// op from the page cache and acknowledges more after it; a power cut then
// must lose none of those. Recovery's sync of what it replayed wrote
// nothing of the clean pages, so the power cut cut the journal before the
// ops acknowledged after the restart, and the next start refused it as
// corrupt (a segment beginning past a hole).
func TestEIOOnSyncThenRestartThenPowerCut(t *testing.T) {
	row := inventory.RowKey{SKU: "a", Warehouse: "w1", Condition: "new", Source: "s"}
	mem := vfs.NewMem()
	faulty := vfs.NewFaulty(mem)
	e1, err := engine.Open(engine.Config{Dir: dir, FS: faulty, Durability: engine.DurabilityFsync, TickInterval: -1, SegmentBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer e1.Close()
	if _, err := e1.Stock(row, 100, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if res, err := e1.Capture(row.Group(), 1, nil); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("capture: %+v, %v", res, err)
		}
	}
	faulty.FailSyncs(true)
	if _, err := e1.Capture(row.Group(), 5, nil); !errors.Is(err, engine.ErrOutcomeUnknown) {
		t.Fatalf("the capture whose fdatasync failed: %v, want outcome unknown", err)
	}
	faulty.FailSyncs(false)
	// Fail-stop: nothing more is taken, though the disk answers again.
	for _, op := range []func() (inventory.Result, error){
		func() (inventory.Result, error) { return e1.Capture(row.Group(), 1, nil) },
		func() (inventory.Result, error) { return e1.Release(row, 1) },
		func() (inventory.Result, error) { return e1.Stock(row, 1, 1) },
	} {
		if _, err := op(); !errors.Is(err, engine.ErrUnavailable) || errors.Is(err, engine.ErrOutcomeUnknown) {
			t.Fatalf("a mutation after the failed sync: %v, want unavailable (refused, not applied)", err)
		}
	}

	restart := mem.CrashProcess() // the process is restarted; the machine stays up
	e2, err := engine.Open(engine.Config{Dir: dir, FS: restart, Durability: engine.DurabilityFsync, TickInterval: -1, SegmentBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if res, err := e2.Get(row); err != nil || res.Count != 85 {
		t.Fatalf("after the restart the row holds %+v (%v), want 85: the capture of 5 is in the page cache", res, err)
	}
	for i := 0; i < 20; i++ {
		if res, err := e2.Capture(row.Group(), 1, nil); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("capture after the restart: %+v, %v", res, err)
		}
	}

	e3, err := engine.Open(engine.Config{Dir: dir, FS: restart.Crash(nil), Durability: engine.DurabilityFsync, TickInterval: -1, SegmentBytes: 8 << 10})
	if err != nil {
		t.Fatalf("after the power cut: %v; 20 captures were acknowledged (synced) after the restart", err)
	}
	defer e3.Close()
	if res, err := e3.Get(row); err != nil || res.Count != 65 {
		t.Fatalf("after the power cut the row holds %+v (%v), want 65", res, err)
	}
}
