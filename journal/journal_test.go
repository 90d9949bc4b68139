package journal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"

	"allot/inventory"
	"allot/vfs"
)

const dir = "/data"

// genOps returns n ops that all apply with CodeOK in order, and the state
// after each prefix is recomputable by applying them to a fresh State.
func genOps(seed uint64, n int) []inventory.Op {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := inventory.NewState()
	var keys []inventory.RowKey
	var ops []inventory.Op
	for len(ops) < n {
		var op inventory.Op
		switch {
		case len(keys) < 3 || rng.IntN(20) == 0:
			k := inventory.RowKey{SKU: fmt.Sprintf("sku-%d", rng.IntN(5)), Warehouse: fmt.Sprintf("w%d", rng.IntN(3)), Condition: "new", Source: "s"}
			op = inventory.Stock(k, rng.Int64N(10), 100+rng.Int64N(10))
			keys = append(keys, k)
		case rng.IntN(2) == 0:
			op = inventory.Release(keys[rng.IntN(len(keys))], 1+rng.Int64N(3))
		default:
			op = inventory.Capture(keys[rng.IntN(len(keys))].Group(), 1+rng.Int64N(3))
		}
		if s.Apply(&op, nil).Code == inventory.CodeOK {
			ops = append(ops, op)
		}
	}
	return ops
}

func stateAfter(ops []inventory.Op) []inventory.Row {
	s := inventory.NewState()
	for i := range ops {
		if r := s.Apply(&ops[i], nil); r.Code != inventory.CodeOK {
			panic(fmt.Sprintf("op %d does not apply: %v", i, r))
		}
	}
	return s.Rows()
}

// writeOps appends ops in frames of frame ops each, syncing after every
// syncEvery frames (0: never).
func writeOps(t *testing.T, j *Journal, ops []inventory.Op, frame, syncEvery int) {
	t.Helper()
	for i := range ops {
		j.Add(&ops[i])
		if j.Pending() == frame || i == len(ops)-1 {
			if err := j.Write(); err != nil {
				t.Fatal(err)
			}
			if syncEvery > 0 && (i/frame)%syncEvery == 0 {
				if err := j.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func open(t *testing.T, fs vfs.FS, segBytes int64) (*Journal, *inventory.State, Recovery) {
	t.Helper()
	j, st, rec, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: segBytes})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return j, st, rec
}

func TestRoundTripAcrossSegmentsAndSnapshots(t *testing.T) {
	fs := vfs.NewMem()
	ops := genOps(1, 20000)
	j, _, _ := open(t, fs, 4096)
	writeOps(t, j, ops[:12000], 50, 1)
	if err := j.WriteSnapshot(&Snapshot{LSN: j.SnapshotLSN(), Rows: stateAfter(ops[:12000])}); err != nil {
		t.Fatal(err)
	}
	writeOps(t, j, ops[12000:], 50, 1)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	segs := 0
	for _, n := range fs.Names() {
		if strings.HasPrefix(path.Base(n), "journal-") {
			segs++
		}
	}
	j2, st, rec := open(t, fs, 4096)
	defer j2.Close()
	if rec.SnapshotLSN != 12000 || rec.Replayed != 8000 || rec.LastLSN != 20000 {
		t.Fatalf("recovery %+v: want snapshot at 12000 and 8000 ops replayed", rec)
	}
	if !slices.Equal(st.Rows(), stateAfter(ops)) {
		t.Fatal("recovered state differs from the ops' state")
	}
	if segs < 3 {
		t.Fatalf("expected the 4 KiB segments to rotate, found %d segments", segs)
	}
	// Appending after recovery continues the LSNs.
	more := genOps(1, 20100)[20000:]
	writeOps(t, j2, more, 10, 1)
	j2.Close()
	_, st3, rec3 := open(t, fs, 4096)
	if rec3.LastLSN != 20100 || !slices.Equal(st3.Rows(), stateAfter(genOps(1, 20100))) {
		t.Fatalf("after a second run: %+v", rec3)
	}
}

// TestCrashKeepsSyncedNeverMore crashes after a mix of synced and unsynced
// frames, keeping a random part of the unsynced tail (a lost write, a torn
// write, or all of it), and checks that recovery holds every synced op and
// exactly a prefix of the written ones.
func TestCrashKeepsSyncedNeverMore(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			fs := vfs.NewMem()
			ops := genOps(seed, 3000)
			j, _, _ := open(t, fs, 1<<14)
			synced := writeInChunks(t, j, ops, rng, 40, 3)
			mode := rng.IntN(3)
			crashed := fs.Crash(func(_ string, unsynced int) int {
				switch mode {
				case 0:
					return 0 // lost unsynced writes
				case 1:
					return rng.IntN(unsynced + 1) // torn
				}
				return unsynced // process crash: the OS kept everything
			})
			_, st, rec := open(t, crashed, 1<<14)
			got := int(rec.LastLSN)
			if got < synced || got > len(ops) {
				t.Fatalf("mode %d: recovered %d ops; %d were synced, %d written", mode, got, synced, len(ops))
			}
			if mode == 2 && got != len(ops) {
				t.Fatalf("process crash lost written ops: recovered %d of %d", got, len(ops))
			}
			if !slices.Equal(st.Rows(), stateAfter(ops[:got])) {
				t.Fatalf("recovered state is not the state after its %d ops", got)
			}
		})
	}
}

func TestCorruptionBeforeTheTailRefusesToStart(t *testing.T) {
	fs := vfs.NewMem()
	ops := genOps(3, 500)
	j, _, _ := open(t, fs, 1<<20)
	writeOps(t, j, ops, 10, 1)
	j.Close()
	seg := path.Join(dir, segmentName(1))
	// Flip a byte inside the third frame's payload.
	buf, _ := vfs.ReadFile(fs, seg)
	off := segmentHeaderSize
	for k := 0; k < 2; k++ {
		_, size, bad, _ := parseFrame(buf[off:])
		if bad != "" {
			t.Fatal(bad)
		}
		off += size
	}
	if err := fs.Corrupt(seg, int64(off+frameHeaderSize+3)); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := Open(Options{FS: fs, Dir: dir})
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("want a corruption error, got %v", err)
	}
	if ce.File != seg || ce.Offset != int64(off) {
		t.Fatalf("error names %s at %d, want %s at %d", ce.File, ce.Offset, seg, off)
	}
	if !strings.Contains(err.Error(), "a valid frame follows") {
		t.Fatalf("error does not say why: %v", err)
	}
}

func TestCorruptLastFrameIsCut(t *testing.T) {
	fs := vfs.NewMem()
	ops := genOps(4, 100)
	j, _, _ := open(t, fs, 1<<20)
	writeOps(t, j, ops, 10, 1)
	j.Close()
	seg := path.Join(dir, segmentName(1))
	buf, _ := vfs.ReadFile(fs, seg)
	end := segmentHeaderSize // the end of the last frame; zeros of preallocation follow
	for {
		_, size, bad, _ := parseFrame(buf[end:])
		if bad != "" {
			break
		}
		end += size
	}
	if err := fs.Corrupt(seg, int64(end-2)); err != nil {
		t.Fatal(err)
	}
	_, st, rec := open(t, fs, 1<<20)
	if rec.LastLSN != 90 || rec.TailCut == 0 || rec.TailFile != seg {
		t.Fatalf("recovery %+v: want the last frame (ops 91..100) cut", rec)
	}
	if !slices.Equal(st.Rows(), stateAfter(ops[:90])) {
		t.Fatal("state after cutting the tail is wrong")
	}
}

func TestCorruptSnapshotRefusesToStart(t *testing.T) {
	fs := vfs.NewMem()
	ops := genOps(5, 100)
	j, _, _ := open(t, fs, 1<<20)
	writeOps(t, j, ops, 10, 1)
	if err := j.WriteSnapshot(&Snapshot{LSN: j.SnapshotLSN(), Rows: stateAfter(ops)}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	snap := path.Join(dir, snapshotName(100))
	if err := fs.Corrupt(snap, 30); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := Open(Options{FS: fs, Dir: dir})
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != snap {
		t.Fatalf("want a corruption error naming %s, got %v", snap, err)
	}
}

func TestMissingSegmentIsCorruption(t *testing.T) {
	fs := vfs.NewMem()
	ops := genOps(6, 2000)
	j, _, _ := open(t, fs, 4096)
	writeOps(t, j, ops, 10, 1)
	j.Close()
	segs := []string{}
	for _, n := range fs.Names() {
		if strings.HasPrefix(path.Base(n), "journal-") {
			segs = append(segs, n)
		}
	}
	if len(segs) < 3 {
		t.Fatalf("want >= 3 segments, got %d", len(segs))
	}
	if err := fs.Remove(segs[1]); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := Open(Options{FS: fs, Dir: dir})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a missing middle segment must be corruption, got %v", err)
	}
}

func TestTornWriteFailsTheJournal(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewFaulty(mem)
	ops := genOps(7, 200)
	// Preallocation would write zeros through the faulty FS too.
	j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 1 << 20, NoPreallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	writeOps(t, j, ops[:100], 10, 1)
	fs.FailWritesAfter(40) // the next frame is torn after 40 bytes
	for i := 100; i < 110; i++ {
		j.Add(&ops[i])
	}
	if err := j.Write(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("want the injected error, got %v", err)
	}
	// What a power cut leaves: the synced 100 ops; the torn frame is cut.
	_, st, rec := open(t, mem.Crash(func(string, int) int { return 1 << 30 }), 1<<20)
	if rec.LastLSN != 100 || rec.TailCut != 40 {
		t.Fatalf("recovery %+v: want 100 ops and a 40-byte torn tail cut", rec)
	}
	if !slices.Equal(st.Rows(), stateAfter(ops[:100])) {
		t.Fatal("wrong state")
	}
}

func TestSyncFailureIsReported(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	j, _, _ := open(t, fs, 1<<20)
	ops := genOps(8, 10)
	writeOps(t, j, ops, 10, 0)
	fs.FailSyncs(true)
	if err := j.Sync(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("want the injected sync error, got %v", err)
	}
}

// BenchmarkRecovery measures replay speed: ops replayed per second by Open
// over a journal of seed-like ops (no snapshot).
func BenchmarkRecovery(b *testing.B) {
	fs := vfs.NewMem()
	const n = 500000
	ops := genOps(10, n)
	j, _, _, err := Open(Options{FS: fs, Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	for i := range ops {
		j.Add(&ops[i])
		if j.Pending() == 1000 {
			if err := j.Write(); err != nil {
				b.Fatal(err)
			}
		}
	}
	j.Write()
	j.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, _, rec, err := Open(Options{FS: fs, Dir: dir})
		if err != nil || rec.Replayed != n {
			b.Fatal(err, rec)
		}
		b.StopTimer()
		j.Close()
		// Open starts a new empty segment each time; remove it so that
		// every iteration replays the same log.
		fs.Remove(path.Join(dir, segmentName(n+1)))
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func TestSpareSegmentIsUsedAndCleanedUp(t *testing.T) {
	fs := vfs.NewMem()
	ops := genOps(13, 3000)
	j, _, _ := open(t, fs, 4096)
	hasSpare := func(m *vfs.Mem) bool {
		return slices.Contains(m.Names(), path.Join(dir, spareName))
	}
	// Write until several segments rotated and a spare is being made for
	// the next one, then wait for that spare to be ready.
	n := 0
	for n < len(ops) && (n < 1500 || j.spare == nil) {
		writeOps(t, j, ops[n:n+20], 20, 1)
		n += 20
	}
	if j.spare == nil {
		t.Fatal("no spare segment was started")
	}
	res := <-j.spare
	j.spare <- res
	if res.err != nil || !hasSpare(fs) {
		t.Fatalf("spare: %v", res.err)
	}
	crashed := fs.Crash(func(_ string, k int) int { return k })
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if hasSpare(fs) {
		t.Fatal("Close left the spare segment behind")
	}
	_, st, rec := open(t, crashed, 4096)
	if rec.LastLSN != uint64(n) || !slices.Equal(st.Rows(), stateAfter(ops[:n])) {
		t.Fatalf("recovery %+v, want %d ops", rec, n)
	}
	if hasSpare(crashed) {
		t.Fatal("Open left a stale spare segment behind")
	}
	segs := 0
	for _, name := range fs.Names() {
		if strings.HasPrefix(path.Base(name), "journal-") {
			segs++
		}
	}
	if segs < 4 {
		t.Fatalf("want rotations through spares, got %d segments", segs)
	}
}

// TestMmapOnTheRealFileSystem writes through a shared mapping across
// segment rotations, reopens, and finds every op.
func TestMmapOnTheRealFileSystem(t *testing.T) {
	d := t.TempDir()
	ops := genOps(14, 5000)
	j, _, _, err := Open(Options{Dir: d, SegmentBytes: 8192, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	if j.mapped == nil {
		t.Fatal("the OS file system did not map the segment")
	}
	writeOps(t, j, ops, 25, 0)
	// Read what is on disk before Close: a copy into the mapping must be
	// visible to readers of the file at once (it is the page cache).
	segs, _ := vfs.OS{}.List(d)
	if len(segs) < 3 {
		t.Fatalf("want rotations, got files %v", segs)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, st, rec, err := Open(Options{Dir: d, SegmentBytes: 8192, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	if rec.LastLSN != 5000 || !slices.Equal(st.Rows(), stateAfter(ops)) {
		t.Fatalf("recovery %+v", rec)
	}
}

// writeInChunks adds ops to j in frames of 1 to chunkMax ops, writing each,
// and syncs after one frame in syncOneIn; it returns how many ops the last
// sync covered.
func writeInChunks(t *testing.T, j *Journal, ops []inventory.Op, rng *rand.Rand, chunkMax, syncOneIn int) (synced int) {
	t.Helper()
	for i := 0; i < len(ops); {
		n := min(1+rng.IntN(chunkMax), len(ops)-i)
		for k := 0; k < n; k++ {
			j.Add(&ops[i+k])
		}
		if err := j.Write(); err != nil {
			t.Fatal(err)
		}
		i += n
		if rng.IntN(syncOneIn) == 0 {
			if err := j.Sync(); err != nil {
				t.Fatal(err)
			}
			synced = i
		}
	}
	return synced
}
