package sim

import (
	"bytes"
	"errors"
	"testing"

	"allot/engine"
	"allot/vfs"
)

// A dead process writes nothing, into a mapping either: a copy into a
// mapped segment makes no call that could fail, so the journal's
// goroutines (the spare's page faults, the writer's frames) went on
// writing the machine's file system after the process died, up to and
// during the taking of what the next process finds, which read those
// bytes as they changed (a data race, and a crash point no real process
// has). The process is dead from its death on, after takeKilled as well
// (which made it live again: its calls went through until the runner
// swapped file systems, and so did a crash the runner took without a
// kill). Fails before: the mapped write lands, and the write after
// takeKilled succeeds.
func TestADeadProcessWritesNothingIntoAMapping(t *testing.T) {
	mem := vfs.NewMem()
	mem.EnableMapping()
	if err := mem.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	ffs := newFaultFS(mem, 1, 0)
	ffs.mem, ffs.machine = mem, newMachine()
	name := dir + "/journal-00000000000000000001.log"
	f, err := ffs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	const size = 2 * vfs.PageBytes
	if err := f.(vfs.Allocator).Allocate(size); err != nil {
		t.Fatal(err)
	}
	b, err := f.(vfs.Mapper).Map(size)
	if err != nil {
		t.Fatal(err)
	}
	vfs.CopyMapped(f, b, 100, []byte("alive"))
	// The process dies in the segment's fdatasync.
	ffs.killRate, ffs.kills = 1, true
	if err := f.Sync(); !errors.Is(err, errKilled) {
		t.Fatalf("sync: %v, want the process killed", err)
	}
	vfs.CopyMapped(f, b, 200, []byte("dead"))
	killed := ffs.takeKilled()
	if killed == nil {
		t.Fatal("the kill left nothing for the next process")
	}
	vfs.CopyMapped(f, b, 300, []byte("dead"))
	if _, err := f.WriteAt([]byte("dead"), 400); !errors.Is(err, errKilled) {
		t.Fatalf("a write of the dead process after takeKilled: %v, want it to fail as killed", err)
	}
	for _, c := range []struct {
		what string
		fs   *vfs.Mem
	}{{"the machine's file system", mem}, {"what the next process finds", killed}} {
		got, err := vfs.ReadFile(c.fs, name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[100:105], []byte("alive")) {
			t.Fatalf("%s lost the mapped write made before the death", c.what)
		}
		for _, off := range []int{200, 300, 400} {
			if !allZeros(got[off : off+4]) {
				t.Fatalf("%s holds %q at %d, written by the dead process", c.what, got[off:off+4], off)
			}
		}
	}
}

func allZeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Mapped runs with crashes, the spare segment prepared on the journal's
// goroutine while the simulator takes what the next process finds: under
// -race this raced (mapSpare against vfs.Mem.CrashPages and
// CrashProcess) before the mapped writes went through the file system.
func TestMappedRunsCrashWithoutARace(t *testing.T) {
	for _, d := range []engine.Durability{engine.DurabilityWrite, engine.DurabilityNone} {
		for seed := uint64(1); seed <= 8; seed++ {
			res := Run(Config{Seed: seed, Ops: 2000, Durability: d, FaultRate: -1})
			if res.Failed() {
				t.Fatalf("seed %d, %s: %v\nreplay: %s", seed, d, res.Violations, res.ReplayCommand())
			}
			if res.Crashes == 0 {
				t.Fatalf("seed %d, %s: no crash", seed, d)
			}
		}
	}
}
