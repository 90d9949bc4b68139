package journal

import (
	"path"
	"slices"
	"testing"

	"allot/vfs"
)

// spareMapFS is a file system whose files map, and which tells, on
// mapped, when the spare segment's Map returned: from then on the spare's
// goroutine faults its pages in (mapSpare) with nothing else to order its
// writes against the test's.
type spareMapFS struct {
	vfs.FS
	mapped chan struct{}
}

func (fs spareMapFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &spareMapFile{File: f, fs: fs, name: name}, nil
}

type spareMapFile struct {
	vfs.File
	fs   spareMapFS
	name string
}

func (f *spareMapFile) Map(size int64) ([]byte, error) {
	b, err := f.File.(vfs.Mapper).Map(size)
	if err == nil && path.Base(f.name) == spareName {
		select {
		case f.fs.mapped <- struct{}{}:
		default:
		}
	}
	return b, err
}

func (f *spareMapFile) Unmap(b []byte) error { return f.File.(vfs.Mapper).Unmap(b) }

func (f *spareMapFile) Allocate(size int64) error { return f.File.(vfs.Allocator).Allocate(size) }

func (f *spareMapFile) WriteMapped(b []byte, off int64, p []byte) {
	vfs.CopyMapped(f.File, b, off, p)
}

// A mapped unsynced journal on the simulated file system faults in its
// spare segment's pages on a goroutine of its own, which a crash of the
// process does not wait for: the simulator takes what the next process
// finds (vfs.Mem.CrashProcess, CrashPages) while that goroutine may still
// write, or wrote with nothing ordering it before the crash. Those writes
// went into the mapping as plain copies, which the crash's reads of the
// mapped bytes raced with (go test -race ./sim: mapSpare against
// Mem.CrashPages); they go through the file (vfs.CopyMapped), under its
// lock, as the writer's copies of frames do. Fails under -race before.
// The process crash finds every frame written, and the spare as made.
func TestACrashDuringTheSparesPageFaultsFindsTheMappedBytes(t *testing.T) {
	mem := vfs.NewMem()
	mem.EnableMapping()
	fs := spareMapFS{FS: mem, mapped: make(chan struct{}, 1)}
	const segBytes = 16 * pageBytes
	j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: segBytes, Unsynced: true, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	ops := genOps(47, 10000)
	n := 0
	// Up to the frame that starts the spare, before a rotation takes it
	// (which would order its writes before the crash).
	for ; n < len(ops) && j.spare == nil; n++ {
		j.Add(&ops[n])
		if err := j.Write(); err != nil {
			t.Fatalf("op %d: %v", n, err)
		}
	}
	if j.spare == nil || len(j.segments) != 1 || j.mapped == nil {
		t.Fatalf("%d ops, %d segments, mapped %v: the journal did not start a spare in its first, mapped, segment", n, len(j.segments), j.mapped != nil)
	}
	<-fs.mapped
	// The process dies, and the machine with it, while the spare's pages
	// are faulted in.
	crashed := mem.CrashProcess()
	mem.CrashPages(func(string, int64) int { return vfs.PageBytes })
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	if spare, err := vfs.ReadFile(crashed, path.Join(dir, spareName)); err == nil {
		if len(spare) != segBytes || !slices.Equal(spare[:segmentHeaderSize], segmentHeader(modeUnsynced)) || !allZero(spare[segmentHeaderSize:]) {
			t.Fatalf("the crash found a spare of %d bytes, header %x: want %d, the header and zeros", len(spare), spare[:min(len(spare), segmentHeaderSize)], segBytes)
		}
	}
	j, st, rec, err := Open(Options{FS: crashed, Dir: dir, SegmentBytes: segBytes, Unsynced: true, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if rec.LastLSN != uint64(n) || !slices.Equal(st.Rows(), stateAfter(ops[:n])) {
		t.Fatalf("after the process crash recovered %d of the %d ops written, or a state that is not theirs", rec.LastLSN, n)
	}
}
