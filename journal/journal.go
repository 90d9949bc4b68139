package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"allot/inventory"
	"allot/vfs"
)

// SegmentBytesDefault is the segment size when Options.SegmentBytes is
// zero: 16 MiB, preallocated and synced ahead of use (in an unsynced
// journal allocated rather than written where the file system can:
// preallocate), so that a rotation costs a rename and the directory sync.
const SegmentBytesDefault = 16 << 20

// Options configure a journal.
type Options struct {
	// FS is the file system; nil means the real one.
	FS vfs.FS
	// Dir holds the segments and snapshots; it is created if missing.
	Dir string
	// SegmentBytes is the size past which a new segment is started
	// (default SegmentBytesDefault).
	SegmentBytes int64
	// NoPreallocate turns off zero-filling segments ahead of use. By
	// default every segment is written full of zeros and synced before it
	// takes frames (with Unsynced, allocated and synced, not written,
	// where the file system can: preallocate), so that a frame write
	// changes no file size and, in a synced journal, an fdatasync flushes
	// data only, not metadata: on ext4 that measured ~105-115 µs per
	// write+fdatasync against ~155-160 µs when appending.
	// The next segment is prepared in the background once the current one
	// is half full.
	NoPreallocate bool
	// Mmap writes frames by copying them into a shared mapping of the
	// (preallocated) segment instead of calling write(2): no system call
	// per frame. The bytes are in the page cache at once, so they survive
	// a crash of the process, which is all the engine's write and none
	// modes promise; Sync still makes them durable. It is left off for
	// fsync mode, where every sync would write-protect the pages again and
	// the next frame would pay a page fault instead of the system call.
	// A spare segment is mapped, its pages faulted in, before the writer
	// takes it (mapSpare).
	// Ignored when the file system cannot map files or NoPreallocate is set.
	Mmap bool
	// Unsynced says frames are acknowledged once written, before they are
	// synced (the engine's write and none modes). Each segment records it
	// in its header (segment.go): after a power cut, a hole in such a
	// segment followed by frames that were never synced is cut at
	// recovery, while a segment written with Unsynced false keeps refusing
	// damage before its tail as corruption of acknowledged data.
	Unsynced bool
	// Replica says the journal is a node's copy of a replicated log (the
	// engine's Replicated): a standby writes the frames it applies without
	// syncing them, and every frame is in the log too. After a power cut
	// the last segment may have lost any of its pages (its header's
	// included) before frames that survived: recovery cuts it where the
	// damage begins, as in an unsynced segment, and the node takes the
	// rest from the log again, where a segment of a single server is
	// refused as corrupt. Full segments are synced before the next one is
	// begun, so damage before the last segment stays corruption.
	Replica bool
	// Logger receives recovery notices (a cut tail); nil discards them.
	Logger *slog.Logger
	// Broken deliberately breaks the journal, for the simulator's test of
	// its own power (package sim): it must catch each one. Zero (BrokenNone)
	// in every real use.
	Broken Broken
	// RetentionMS is the state machine's retention window for finished
	// holds and idempotency keys while the journal replays (0:
	// inventory.RetentionDefault). The engine replays with
	// inventory.ReplayRetentionMS, under which every journaled op is new
	// again whatever window it was applied with, and sets its own after.
	RetentionMS int64
	// KeepSnapshots is how many snapshots a snapshot leaves in the
	// directory, with every segment after the oldest of them (0:
	// KeepSnapshotsDefault; the state before the first snapshot counts as
	// one). Recovery loads the newest; the change stream can be read from
	// the oldest on (Oldest), so a reader that fell behind (a relay whose
	// broker was down) has at least one snapshot interval of history
	// before it finds its position gone.
	KeepSnapshots int
}

// KeepSnapshotsDefault is Options.KeepSnapshots's default: the newest
// snapshot and the one before it.
const KeepSnapshotsDefault = 2

// KeepSnapshotsMax bounds Options.KeepSnapshots.
const KeepSnapshotsMax = 1000

// Validate fills defaults and checks the options.
func (o *Options) Validate() error {
	if o.FS == nil {
		o.FS = vfs.OS{}
	}
	if o.Dir == "" {
		return errors.New("journal: no directory given")
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = SegmentBytesDefault
	}
	if o.SegmentBytes < 4096 {
		return fmt.Errorf("journal: segment size %d is below 4096 bytes", o.SegmentBytes)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.KeepSnapshots == 0 {
		o.KeepSnapshots = KeepSnapshotsDefault
	}
	if o.KeepSnapshots < 1 || o.KeepSnapshots > KeepSnapshotsMax {
		return fmt.Errorf("journal: snapshots to keep must be 1..%d, got %d", KeepSnapshotsMax, o.KeepSnapshots)
	}
	return nil
}

// keptFrom is the LSN of the oldest snapshot to keep of snaps (sorted)
// when keep are kept: 0 (the empty state) while there are fewer.
func keptFrom(snaps []uint64, keep int) uint64 {
	if len(snaps) < keep {
		return 0
	}
	return snaps[len(snaps)-keep]
}

// Broken names a deliberately broken journal behaviour.
type Broken uint8

const (
	// BrokenNone: the journal as shipped.
	BrokenNone Broken = iota
	// BrokenLateAppend: WriteFrame returns before it appends the frame,
	// which goes to the segment only with the next WriteFrame: the engine
	// applies and acknowledges ops before they are in the journal.
	BrokenLateAppend
	// BrokenKeepTornTail: recovery reads up to a torn tail or a hole but
	// does not cut it off, and starts the next segment after it.
	BrokenKeepTornTail
	// BrokenSnapshotWithoutCatalog: snapshots leave out the catalog's
	// section, so the records set before a snapshot are gone once the
	// segments behind it are.
	BrokenSnapshotWithoutCatalog
	// BrokenReplayLongRetention: recovery replays under the default
	// retention window (24 h) instead of Options.RetentionMS, as the
	// engine did before it replayed under the shortest: a hold id or key
	// reused past a shorter window it ran with replays as a repeat.
	BrokenReplayLongRetention
	// BrokenNoRecoveryRewrite: recovery syncs the segments it replayed
	// without writing their frames again first, so the pages a failed
	// fdatasync left clean (in the page cache, not on disk) stay unwritten
	// under the ops acknowledged after the restart.
	BrokenNoRecoveryRewrite
	// BrokenNoRecoverySync: recovery neither writes again nor syncs the
	// segments it replayed (the sync loop of commit f9373cd deleted):
	// frames a killed process left in the page cache are replayed, ops
	// acknowledged after the restart build on them, and a power cut loses
	// them.
	BrokenNoRecoverySync
	// BrokenSegmentNameNotSynced: a new segment (at Open, and at each
	// rotation of a synced journal) takes frames without the sync of the
	// directory that makes its name durable: its frames are synced and
	// acknowledged, and a power cut loses the file they are in.
	BrokenSegmentNameNotSynced
	// BrokenStampRawClock: the engine stamps each batch with its clock as
	// read, which may go back after a step of the wall clock, instead of
	// its own time, which never does (engine.Engine's beginLocked).
	BrokenStampRawClock
	// BrokenSnapshotInPlace: a snapshot is written under its final name,
	// without a temporary file renamed into place: a crash while it is
	// written leaves a torn newest snapshot.
	BrokenSnapshotInPlace
	// BrokenRetryDirSync: when the directory sync that makes a new
	// segment's name durable fails, it is tried again, and the segment
	// takes frames if that succeeds; after a failed sync no later one
	// tells whether the name is on the disk.
	BrokenRetryDirSync
	// BrokenDataDirNameNotSynced: the data directory's parent is never
	// synced, so the name of a data directory made at Open is not durable.
	BrokenDataDirNameNotSynced
	// BrokenSpareNotSynced: in an unsynced journal a segment allocated
	// (vfs.Allocator) takes frames with neither its header nor its size
	// synced: a power cut can keep the frames' pages and lose the
	// header's.
	BrokenSpareNotSynced
	// BrokenNoHistorySync: recovery syncs only the segments it replayed,
	// not the history kept before the newest snapshot for change-stream
	// readers: frames a killed process left in the page cache there are
	// lost to a power cut after the restart, a hole in the readers' way.
	BrokenNoHistorySync
)

// Recovery describes what Open found.
type Recovery struct {
	SnapshotLSN uint64 // 0: no snapshot
	Replayed    int64  // ops replayed from segments
	LastLSN     uint64 // the last op in the recovered state
	TailCut     int64  // bytes cut from a torn tail, 0 if none
	TailFile    string
}

type segment struct {
	name     string
	firstLSN uint64
}

// Journal appends frames to the current segment.
//
// Concurrency: Add and Seal are called under the caller's lock (they touch
// only the pending frame); WriteFrame, startSegment and Close by one
// goroutine at a time (the engine's flusher); Sync and WriteSnapshot may run
// at the same time as WriteFrame. The journal runs two goroutines of its
// own: one preallocates the spare segment (and in an unsynced journal maps
// it and faults its pages in: mapSpare), and in an unsynced journal one
// syncs and closes each full segment (retire); Close waits for both, and
// Sync for the second.
type Journal struct {
	opts Options
	mode segmentMode // recorded in every segment this journal starts

	// Owned by the writer goroutine.
	pending      []byte // the frame being built, header space first
	sealed       []byte // the last sealed frame, until the next Seal
	pendingCount uint32
	pendingStamp int64  // the pending frame's time stamp
	nextLSN      uint64 // LSN of the next op Add will get
	written      int64  // bytes in the current segment, its header included

	late   []byte           // with BrokenLateAppend: the frame not yet appended
	spare  chan spareResult // the next segment being preallocated, or nil
	mapped []byte           // the current segment mapped, with Options.Mmap
	// retiring is the background sync of the last full unsynced segment
	// (see startSegment) until the writer noted its end, or nil;
	// retireErr its failure, sticky.
	retiring  *retirement
	retireErr error
	// lastRetirement is the last retirement started, guarded by mu (for
	// Sync, on another goroutine than the writer, which alone reads
	// retiring), or nil.
	lastRetirement *retirement
	// rotationWaits counts rotations that waited on the writer goroutine:
	// for a spare not yet prepared, or for the previous retirement.
	rotationWaits atomic.Int64

	mu       sync.Mutex // guards file swaps and segments against Sync and snapshots
	file     vfs.File
	segments []segment // oldest first; the last is the current one
	closed   bool

	// dirMu serializes the syncs of the directory (syncDir); dirErr is the
	// first of them that failed, sticky.
	dirMu  sync.Mutex
	dirErr error

	// bytes counts journal bytes since Open, for metrics. Atomic, not under
	// mu: mu is held across fdatasync, and Write must never wait for a sync.
	bytes atomic.Int64
}

func segmentName(lsn uint64) string { return fmt.Sprintf("journal-%020d.log", lsn) }

// spareName is the preallocated file that becomes the next segment.
const spareName = "segment.spare"

// retirement is a full segment's background sync (retire): done is
// closed when it ended, err its result.
type retirement struct {
	done chan struct{}
	err  error
}

type spareResult struct {
	file   vfs.File
	mapped []byte // the file mapped and its pages faulted in, or nil
	err    error
}

func parseName(name, prefix, suffix string) (uint64, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	n, err := strconv.ParseUint(name[len(prefix):len(name)-len(suffix)], 10, 64)
	return n, err == nil
}

// MakeDir makes the directory opts.Dir, with its missing parents, and
// makes its name durable. A directory made is a new entry in its parent,
// on the disk only once the parent is synced (as a segment's name is only
// with its directory): a power cut before that loses the directory and
// every segment synced into it. Every directory from the data directory's
// parent up to the root is synced on every call, not only the parents of
// what this call made: a process that made some of them may have stopped
// before its syncs, and a retry then finds them made.
//
// A parent this process cannot open (a sync opens the directory for
// reading: mode 0711, owned by another user) refuses its sync with a
// permission error. For the name of a directory this call made, that is
// an error: the name just made would not be durable (and the next call,
// finding the directory, warns). For one that existed, it matters only if
// an earlier call made it and stopped before its sync: it is logged as a
// warning to opts.Logger, and the directory is used.
func MakeDir(opts Options) error {
	fs, dir := opts.FS, path.Clean(opts.Dir)
	if fs == nil {
		fs = vfs.OS{}
	}
	if a, ok := fs.(vfs.Absolver); ok && !path.IsAbs(dir) {
		// A relative name's parents stop at "."; the working directory's
		// own (made by mkdir -p just before, which syncs nothing) go on
		// to the root.
		abs, err := a.Abs(dir)
		if err != nil {
			return fmt.Errorf("journal: data directory %s: %w", dir, err)
		}
		dir = abs
	}
	// made: the directories this call makes. A directory that cannot be
	// listed (no read permission) exists all the same: only "does not
	// exist" makes it one to make.
	made := map[string]bool{}
	for d := dir; d != "/" && d != "."; d = path.Dir(d) {
		if _, err := fs.List(d); !errors.Is(err, vfs.ErrNotExist) {
			break
		}
		made[d] = true
	}
	if err := fs.MkdirAll(dir); err != nil {
		return fmt.Errorf("journal: create %s: %w", dir, err)
	}
	if opts.Broken == BrokenDataDirNameNotSynced {
		return nil
	}
	for d := dir; d != "/" && d != "."; {
		p := path.Dir(d)
		err := fs.SyncDir(p)
		if err != nil && !made[d] && errors.Is(err, iofs.ErrPermission) {
			if opts.Logger != nil {
				opts.Logger.Warn("journal: cannot sync a parent of the data directory, which holds the name of the directory below it (no read permission on it); the data directory existed already, so it is used, but if it was made by a process that stopped before its own syncs, a power cut may still take it", "dir", dir, "parent", p, "err", err)
			}
		} else if err != nil {
			return fmt.Errorf("journal: sync directory %s, which holds the name of %s: %w", p, d, err)
		}
		d = p
	}
	return nil
}

// Open recovers the state from dir and opens the journal for appending. It
// returns the recovered state (a fresh one for an empty directory).
func Open(opts Options) (*Journal, *inventory.State, Recovery, error) {
	var rec Recovery
	if err := opts.Validate(); err != nil {
		return nil, nil, rec, err
	}
	fs, dir := opts.FS, opts.Dir
	if err := fs.MkdirAll(dir); err != nil {
		return nil, nil, rec, fmt.Errorf("journal: create %s: %w", dir, err)
	}
	names, err := fs.List(dir)
	if err != nil {
		return nil, nil, rec, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	var snaps []uint64
	var segs []segment
	for _, name := range names {
		if lsn, ok := parseName(name, "snapshot-", ".snap"); ok {
			snaps = append(snaps, lsn)
		} else if lsn, ok := parseName(name, "journal-", ".log"); ok {
			segs = append(segs, segment{name: name, firstLSN: lsn})
		} else if strings.HasSuffix(name, ".snap.tmp") || name == spareName {
			// A snapshot or a spare segment that was being written when the
			// process stopped.
			_ = fs.Remove(path.Join(dir, name))
		}
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i] < snaps[j] })
	sort.Slice(segs, func(i, j int) bool { return segs[i].firstLSN < segs[j].firstLSN })
	mode := modeSynced
	if opts.Unsynced {
		mode = modeUnsynced
	}

	d := inventory.NewDecoder()
	state := inventory.NewState()
	retention := opts.RetentionMS
	if opts.Broken == BrokenReplayLongRetention {
		retention = inventory.RetentionDefault
	}
	if retention > 0 {
		state.SetRetention(retention)
	}
	if len(snaps) > 0 {
		name := path.Join(dir, snapshotName(snaps[len(snaps)-1]))
		buf, err := vfs.ReadFile(fs, name)
		if err != nil {
			return nil, nil, rec, fmt.Errorf("journal: read %s: %w", name, err)
		}
		lsn, st, err := decodeSnapshot(name, buf, d)
		if err != nil {
			return nil, nil, rec, err
		}
		if lsn != snaps[len(snaps)-1] {
			return nil, nil, rec, &CorruptionError{File: name, Offset: 8, Reason: fmt.Sprintf("holds LSN %d, its name says %d", lsn, snaps[len(snaps)-1])}
		}
		if retention > 0 {
			st.SetRetention(retention)
		}
		state, rec.SnapshotLSN = st, lsn
	}

	// Segments wholly before the snapshot are not replayed. Those before
	// the oldest snapshot kept (Options.KeepSnapshots) are no longer
	// needed: a crash between writing a snapshot and trimming them leaves
	// them here, and no later snapshot would look at them again (it trims
	// only the segments this journal lists), so they go now, with older
	// snapshots. The others stay as history for the change stream.
	from := keptFrom(snaps, opts.KeepSnapshots)
	kept, first := 0, 0
	for kept+1 < len(segs) && segs[kept+1].firstLSN <= from+1 {
		kept++
	}
	for first+1 < len(segs) && segs[first+1].firstLSN <= rec.SnapshotLSN+1 {
		first++
	}
	first = max(first, kept)
	oldSnaps := snaps[:0:0]
	for _, lsn := range snaps {
		if lsn < from {
			oldSnaps = append(oldSnaps, lsn)
		}
	}
	if err := removeCovered(fs, dir, segs[:kept], oldSnaps); err != nil {
		return nil, nil, rec, err
	}
	history := segs[kept:first]
	segs = segs[first:]
	next := rec.SnapshotLSN + 1
	if len(segs) > 0 && segs[0].firstLSN > next {
		return nil, nil, rec, &CorruptionError{File: path.Join(dir, segs[0].name), Offset: 0,
			Reason: fmt.Sprintf("ops %d..%d are missing: the log starts at %d and the snapshot ends at %d", next, segs[0].firstLSN-1, segs[0].firstLSN, rec.SnapshotLSN)}
	}
	var op inventory.Op
	var lines []inventory.Line
	// holeAt is the index of an unsynced segment with a hole that is not
	// the last segment, or -1: the segments after it are dropped, and only
	// then is it cut at holeOff (a retry after a failure in between finds
	// the hole again).
	holeAt, holeOff := -1, 0
	prevMode := modeSynced
	// prevEnd is the LSN after the previous segment's last frame, and
	// prevRoom the bytes after that frame (zeros) where frames it lost
	// whole could have been: -1 when it held no frame (its first frame
	// may be of any size).
	var prevEnd uint64
	var prevRoom int64
	// toSync are the segments kept, to sync before appending: for the
	// last rewriteSegments of them, with their bytes up to the end of
	// their last frame, to write again first.
	var toSync []keptSegment
	for i, seg := range segs {
		name := path.Join(dir, seg.name)
		buf, err := vfs.ReadFile(fs, name)
		if err != nil {
			return nil, nil, rec, fmt.Errorf("journal: read %s: %w", name, err)
		}
		last := i == len(segs)-1
		if i > 0 && seg.firstLSN < prevEnd {
			// Each segment starts where the one before it ends: a
			// segment that repeats ops is not of this log (a copy, or
			// another data directory's).
			return nil, nil, rec, &CorruptionError{File: name, Offset: 0, Reason: fmt.Sprintf("starts at op %d, but %s already holds ops up to %d: segments overlap", seg.firstLSN, segs[i-1].name, prevEnd-1)}
		}
		if seg.firstLSN > next {
			// The previous segment lost its last frames whole: its end
			// reads as zeros, a hole all the same. Only if they fit
			// there, though (a frame header and at least a byte an op):
			// else a whole segment is missing, which no crash leaves (a
			// segment is synced before the one after the next is begun).
			lost := seg.firstLSN - prevEnd
			if i > 0 && prevMode == modeUnsynced && (prevRoom < 0 || lost <= uint64(max(prevRoom-frameHeaderSize, 0))) {
				holeAt, holeOff = i-1, -1
				break
			}
			reason := fmt.Sprintf("starts at op %d, expected %d", seg.firstLSN, next)
			if i > 0 && prevMode == modeUnsynced {
				reason += fmt.Sprintf(": ops %d..%d are missing, more than fit in the %d bytes after the last frame of unsynced segment %s (a segment is missing)", prevEnd, seg.firstLSN-1, prevRoom, segs[i-1].name)
			}
			return nil, nil, rec, &CorruptionError{File: name, Offset: 0, Reason: reason}
		}
		segMode, off, bad, unknown := parseSegmentHeader(buf)
		if unknown {
			return nil, nil, rec, fmt.Errorf("%w: %s: %s", ErrUnknownVersion, name, bad)
		}
		if bad != "" {
			// A header is synced before its segment takes a frame, so a
			// damaged one is either the end of a segment being created
			// when the machine stopped (the last, with no frame in it) or
			// corruption.
			if !last || (findValidFrame(buf) >= 0 && !opts.Replica) {
				return nil, nil, rec, &CorruptionError{File: name, Offset: 0, Reason: bad}
			}
			rec.TailCut, rec.TailFile = int64(lastNonZero(buf)+1), name
			if err := cutTail(fs, name, 0); err != nil {
				return nil, nil, rec, err
			}
			opts.Logger.Warn("journal: cut a segment whose header was never completed", "file", name, "reason", bad)
			continue
		}
		// expect is the LSN the segment's next frame must start at: its
		// frames follow each other from the op its name gives.
		expect, frames := seg.firstLSN, 0
		for off < len(buf) {
			h, size, bad, unknown := parseFrame(buf[off:])
			if unknown {
				return nil, nil, rec, fmt.Errorf("%w: %s at offset %d: %s", ErrUnknownVersion, name, off, bad)
			}
			if bad != "" && allZero(buf[off:]) {
				break // the preallocated, never written end of a segment
			}
			if bad != "" {
				// In an unsynced segment a hole is what a power cut leaves
				// (pages written back in any order): everything from it on
				// was never synced, so none of it was promised. In a synced
				// one only a torn tail is.
				hole := segMode == modeUnsynced || (opts.Replica && last)
				if !hole && !last {
					return nil, nil, rec, &CorruptionError{File: name, Offset: int64(off), Reason: bad + " in a segment that is not the last"}
				}
				if j := findValidFrame(buf[off:]); j >= 0 && !hole {
					return nil, nil, rec, &CorruptionError{File: name, Offset: int64(off), Reason: bad + fmt.Sprintf("; a valid frame follows at offset %d", off+j)}
				}
				// Report the bytes that held something, not the zeros of a
				// preallocated segment after them.
				rec.TailCut, rec.TailFile = int64(lastNonZero(buf[off:])+1), name
				if hole && !last {
					holeAt, holeOff = i, off
				} else if opts.Broken != BrokenKeepTornTail {
					if err := cutTail(fs, name, int64(off)); err != nil {
						return nil, nil, rec, err
					}
				}
				if hole {
					opts.Logger.Warn("journal: cut an unsynced segment at a hole", "file", name, "offset", off, "bytes", rec.TailCut, "reason", bad)
				} else {
					opts.Logger.Warn("journal: cut a torn tail", "file", name, "offset", off, "bytes", rec.TailCut, "reason", bad)
				}
				buf = buf[:off]
				break
			}
			end := h.firstLSN + uint64(h.count)
			if h.firstLSN != expect {
				return nil, nil, rec, &CorruptionError{File: name, Offset: int64(off), Reason: fmt.Sprintf("frame starts at op %d, expected %d after the frames before it in this segment", h.firstLSN, expect)}
			}
			expect, frames = end, frames+1
			switch {
			case end <= next:
				// Already in the snapshot.
			case h.firstLSN != next:
				return nil, nil, rec, &CorruptionError{File: name, Offset: int64(off), Reason: fmt.Sprintf("frame starts at op %d, expected %d", h.firstLSN, next)}
			default:
				d.Reset(buf[off+h.headerSize : off+size])
				d.Version = h.version
				state.SetTime(h.stamp)
				for k := uint32(0); k < h.count; k++ {
					if err := d.Op(&op); err != nil {
						return nil, nil, rec, &CorruptionError{File: name, Offset: int64(off + h.headerSize + d.Pos()), Reason: fmt.Sprintf("op %d: %v", next, err)}
					}
					// Every journaled op changed state when it was
					// applied; the same op on the same state must again.
					if res := state.Apply(&op, lines); !res.Changed {
						return nil, nil, rec, &CorruptionError{File: name, Offset: int64(off), Reason: fmt.Sprintf("op %d (%s) does not replay: %s %s", next, op.Kind, res.Code, res.Detail)}
					} else {
						lines = res.Lines
					}
					next++
					rec.Replayed++
				}
				if !d.Done() {
					return nil, nil, rec, &CorruptionError{File: name, Offset: int64(off), Reason: "bytes after the frame's last op"}
				}
			}
			off += size
		}
		if segMode == modeUnsynced || frames > 0 {
			toSync = append(toSync, keptSegment{name: name, frames: buf[:off]})
			if n := len(toSync); n > rewriteSegments {
				toSync[n-1-rewriteSegments].frames = nil // sync only, and let it go
			}
		}
		prevMode, prevEnd, prevRoom = segMode, expect, -1
		if frames > 0 {
			prevRoom = max(int64(len(buf)), opts.SegmentBytes) - int64(off)
		}
		if holeAt >= 0 {
			break
		}
	}
	if prevEnd <= rec.SnapshotLSN {
		// The segments end before the newest snapshot: it came from
		// elsewhere (a cluster node that caught up from the shard's
		// stored snapshot) or the frames up to it were lost. What came
		// before it is no history of it: a reader would meet the gap.
		var older []uint64
		for _, lsn := range snaps {
			if lsn >= from && lsn < rec.SnapshotLSN {
				older = append(older, lsn)
			}
		}
		if err := removeCovered(fs, dir, history, older); err != nil {
			return nil, nil, rec, err
		}
		history = nil
	}
	if holeAt >= 0 {
		if err := dropAfterHole(fs, dir, segs[holeAt].name, segs[holeAt+1:], opts.Logger); err != nil {
			return nil, nil, rec, err
		}
		if holeOff >= 0 && opts.Broken != BrokenKeepTornTail {
			if err := cutTail(fs, path.Join(dir, segs[holeAt].name), int64(holeOff)); err != nil {
				return nil, nil, rec, err
			}
		}
		segs = segs[:holeAt+1]
	}
	// Frames replayed may still be only in the page cache (the last
	// process crashed, the machine did not): those of unsynced segments,
	// and in a synced one those written but not yet synced when it was
	// killed. Sync them before anything is appended: the ops acknowledged
	// from now on build on them, and a segment must never follow a hole.
	//
	// A sync is not enough for pages an fdatasync failed to write: Linux
	// marks them clean all the same, so a reader (this replay) gets their
	// bytes from the page cache, but no later fdatasync writes them, and a
	// power cut after the restart would cut the journal there, under ops
	// acknowledged since. The last rewriteSegments segments are written
	// again, the same bytes, which dirties their pages again, before they
	// are synced. The engine stops at a failed sync, and every segment
	// before the last two was synced in full before the one after the
	// next was begun (startSegment, retire), or by an earlier recovery.
	// On a normal start this writes and syncs up to two segments' frames
	// once more: on ext4 (a virtual machine's disk) a full 16 MiB segment
	// took 8-14 ms to write again and sync, against 0.1-0.5 ms to sync it
	// clean and some 250 ms to replay its ops.
	// Rejected: rewriting only after a failed sync, which a restarted
	// process cannot know of (the failure is not on disk, and a marker of
	// a clean shutdown would be one more file to create, sync and trust);
	// and copying the frames to a new segment, the same writes and a
	// rename more.
	// The history segments (kept for change-stream readers, not replayed)
	// are synced as well: in an unsynced journal a full segment is synced
	// in the background, and a process that died first left its frames in
	// the page cache only; once a snapshot covers them a power cut after
	// this restart would leave the readers a hole. Those among the last
	// rewriteSegments segments are written again first, whole (they were
	// not parsed, and their zeros write as cheaply as their frames).
	if len(history) > 0 && opts.Broken != BrokenNoHistorySync {
		kept := make([]keptSegment, len(history), len(history)+len(toSync))
		for i, s := range history {
			kept[i].name = path.Join(dir, s.name)
		}
		for i := max(0, len(kept)-(rewriteSegments-len(toSync))); i < len(kept) && len(toSync) < rewriteSegments; i++ {
			buf, err := vfs.ReadFile(fs, kept[i].name)
			if err != nil {
				return nil, nil, rec, fmt.Errorf("journal: read %s: %w", kept[i].name, err)
			}
			kept[i].frames = buf
		}
		toSync = append(kept, toSync...)
	}
	if opts.Broken != BrokenNoRecoverySync {
		for _, s := range toSync {
			var err error
			if s.frames != nil && opts.Broken != BrokenNoRecoveryRewrite {
				err = rewriteFile(fs, s.name, s.frames)
			} else {
				err = syncFile(fs, s.name)
			}
			if err != nil {
				return nil, nil, rec, err
			}
		}
	}
	if len(toSync) > 0 {
		if err := fs.SyncDir(dir); err != nil {
			return nil, nil, rec, fmt.Errorf("journal: sync directory %s: %w", dir, err)
		}
	}
	if err := state.CheckInvariants(); err != nil {
		return nil, nil, rec, fmt.Errorf("journal: recovered state is inconsistent: %w", err)
	}
	rec.LastLSN = next - 1

	j := &Journal{opts: opts, mode: mode, nextLSN: next, pending: make([]byte, frameHeaderSize, 64<<10)}
	// Always start a fresh segment: appending after a cut tail or to a file
	// of unknown history buys nothing and a new file is simpler to reason
	// about.
	j.segments = append(append(j.segments, history...), segs...)
	if err := j.startSegment(next); err != nil {
		return nil, nil, rec, err
	}
	return j, state, rec, nil
}

// dropAfterHole removes the segments after an unsynced segment that was
// cut at a hole (held, its name): their frames follow ops that are gone.
// Only unsynced segments may be dropped: frames of a synced one were
// acknowledged as durable, and a hole before them is corruption.
func dropAfterHole(fs vfs.FS, dir, held string, later []segment, logger *slog.Logger) error {
	for _, s := range later {
		name := path.Join(dir, s.name)
		buf, err := vfs.ReadFile(fs, name)
		if err != nil {
			return fmt.Errorf("journal: read %s: %w", name, err)
		}
		mode, start, bad, _ := parseSegmentHeader(buf)
		if bad == "" && mode == modeSynced && holdsFrame(buf[start:]) {
			return &CorruptionError{File: name, Offset: 0, Reason: fmt.Sprintf("a synced segment follows unsynced segment %s, which lost frames before its end", held)}
		}
		if err := fs.Remove(name); err != nil {
			return fmt.Errorf("journal: remove %s, which follows a hole in %s: %w", name, held, err)
		}
		logger.Warn("journal: removed a segment that follows a hole", "file", name, "hole_in", held)
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("journal: sync directory %s: %w", dir, err)
	}
	return nil
}

// rewriteSegments is how many of the last segments recovery writes again
// before syncing them: those that may hold pages a failed fdatasync left
// clean but not on disk (see Open).
const rewriteSegments = 2

// keptSegment is a segment recovery keeps: its path, and for the last
// rewriteSegments its bytes up to the end of its last valid frame (nil:
// sync only).
type keptSegment struct {
	name   string
	frames []byte
}

// rewriteFile writes b again at the start of the existing file name, then
// syncs it: every page of b is dirty again, so the sync writes it whether
// or not the disk has it.
func rewriteFile(fs vfs.FS, name string, b []byte) error {
	f, err := fs.OpenWrite(name)
	if err != nil {
		return fmt.Errorf("journal: rewrite %s: %w", name, err)
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal: rewrite %s: %w", name, err)
	}
	return nil
}

// syncFile makes an existing file durable.
func syncFile(fs vfs.FS, name string) error {
	// Read-only is enough for fdatasync: a segment before the last two
	// (rewriteFile) needs no write permission to be recovered.
	f, err := fs.Open(name)
	if err != nil {
		return fmt.Errorf("journal: sync %s: %w", name, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal: sync %s: %w", name, err)
	}
	return nil
}

func cutTail(fs vfs.FS, name string, size int64) error {
	f, err := fs.OpenAppend(name)
	if err != nil {
		return fmt.Errorf("journal: cut tail of %s: %w", name, err)
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal: cut tail of %s: %w", name, err)
	}
	return nil
}

// startSegment syncs and closes the current segment (if any) and creates
// the next one, named by the LSN of the first op it will hold.
//
// In an unsynced journal (the engine's write and none modes) rotation runs
// on the request path, under the engine's lock, so the full segment is not
// synced there: it is handed to a goroutine that syncs it, unmaps and
// closes it, then syncs the directory (retire). What may still block the
// writer is bounded and counted (RotationWaits): the spare segment, when
// its background preallocation (started at half the current segment) has
// not finished, at most one preallocation; and the previous retirement,
// when one segment filled before the last one's fdatasync ended, at most
// one fdatasync. A retirement's failure fails the next write.
//
// Rejected: syncing nothing at rotation in unsynced mode. Nothing would
// bound how much of the journal sits in the page cache, and recovery after
// a power cut would face holes in every segment, not just the last ones.
func (j *Journal) startSegment(firstLSN uint64) error {
	name := segmentName(firstLSN)
	full := path.Join(j.opts.Dir, name)
	// Under mu: WriteSnapshot trims segments from another goroutine.
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.segments) > 0 && j.segments[len(j.segments)-1].name == name && j.file != nil {
		return nil // nothing was written since the last one started
	}
	if j.file != nil && j.mode == modeUnsynced {
		return j.rotateUnsynced(name, full, firstLSN)
	}
	if j.file != nil {
		if err := j.file.Sync(); err != nil {
			return fmt.Errorf("journal: sync before starting a segment: %w", err)
		}
		if err := j.unmap(); err != nil {
			return err
		}
		if err := j.file.Close(); err != nil {
			return fmt.Errorf("journal: close segment: %w", err)
		}
		j.file = nil
	}
	if n := len(j.segments); n > 0 && j.segments[n-1].name == name {
		// An empty segment left by an earlier run, or by a cut tail that
		// emptied it: start it again.
		j.segments = j.segments[:n-1]
	}
	f, mapped, err := j.newSegmentFile(full)
	if err != nil {
		return err
	}
	// The new name (a created file, or the spare renamed) is durable only
	// with its directory: a file's fdatasync does not write its name.
	if j.opts.Broken != BrokenSegmentNameNotSynced {
		err := j.syncDir()
		if err != nil && j.opts.Broken == BrokenRetryDirSync {
			err = j.opts.FS.SyncDir(j.opts.Dir)
		}
		if err != nil {
			closeSpare(spareResult{file: f, mapped: mapped})
			return err
		}
	}
	j.file, j.mapped = f, mapped
	j.written = segmentHeaderSize
	if err := j.mapSegment(full); err != nil {
		return err
	}
	j.segments = append(j.segments, segment{name: name, firstLSN: firstLSN})
	return nil
}

// mapSegment maps the current segment, with Options.Mmap, unless it came
// mapped (a spare).
func (j *Journal) mapSegment(full string) error {
	if !j.opts.Mmap || j.opts.NoPreallocate || j.mapped != nil {
		return nil
	}
	b, err := j.mapFile(j.file, full)
	j.mapped = b
	return err
}

// mapFile maps segment file f of name, SegmentBytes long; nil where the
// file system maps nothing (write(2) it is, then).
func (j *Journal) mapFile(f vfs.File, name string) ([]byte, error) {
	m, ok := f.(vfs.Mapper)
	if !ok {
		return nil, nil
	}
	b, err := m.Map(j.opts.SegmentBytes)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: map segment %s: %w", name, err)
	}
	return b, nil
}

// rotateUnsynced is startSegment's unsynced path, with the old segment
// open: the new segment takes over at once and the old one is retired in
// the background.
func (j *Journal) rotateUnsynced(name, full string, firstLSN uint64) error {
	if err := j.waitRetired(); err != nil {
		return err
	}
	old, oldMapped, oldName := j.file, j.mapped, j.segments[len(j.segments)-1].name
	j.file, j.mapped = nil, nil
	f, mapped, err := j.newSegmentFile(full)
	rt := &retirement{done: make(chan struct{})}
	j.retiring, j.lastRetirement = rt, rt
	go func() {
		rt.err = j.retire(old, oldMapped, oldName)
		close(rt.done)
	}()
	if err != nil {
		return err
	}
	j.file, j.mapped = f, mapped
	j.written = segmentHeaderSize
	if err := j.mapSegment(full); err != nil {
		return err
	}
	j.segments = append(j.segments, segment{name: name, firstLSN: firstLSN})
	return nil
}

// retire makes a full segment durable and releases it: fdatasync (which
// also writes back the pages dirtied through its mapping), unmap, close,
// then a sync of the directory, which holds the name of the segment that
// replaced it.
func (j *Journal) retire(f vfs.File, mapped []byte, name string) error {
	err := f.Sync()
	if err != nil {
		err = fmt.Errorf("journal: fdatasync full segment %s: %w", name, err)
	}
	if mapped != nil {
		if uerr := f.(vfs.Mapper).Unmap(mapped); uerr != nil && err == nil {
			err = fmt.Errorf("journal: unmap full segment %s: %w", name, uerr)
		}
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("journal: close full segment %s: %w", name, cerr)
	}
	if err == nil {
		err = j.syncDir()
	}
	return err
}

// syncDir syncs the journal's directory. Once a sync failed, none is tried
// again and every later call fails: what a failed directory sync left on
// the disk is unknown (the entries it covered may have reached it or not,
// and a later sync that succeeds need not write them), so a segment's
// name created or renamed before it may never be durable, however often
// the directory is synced again. The syncs are serialized, so that one
// failing on a snapshot's goroutine cannot fall unseen between a new
// segment's rename and that segment's own sync: the segment then fails
// to start and the engine stops, where it went on acknowledging frames in
// a segment a remount took away (sim's
// TestAFailedSnapshotDirectorySyncStopsTheEngine).
func (j *Journal) syncDir() error {
	j.dirMu.Lock()
	defer j.dirMu.Unlock()
	if j.dirErr != nil {
		return j.dirErr
	}
	if err := j.opts.FS.SyncDir(j.opts.Dir); err != nil {
		j.dirErr = fmt.Errorf("journal: sync directory %s: %w", j.opts.Dir, err)
		return j.dirErr
	}
	return nil
}

// dirSyncFS is the journal's file system with the syncs of its directory
// made by syncDir, for the snapshot's vfs.WriteFileAtomic.
type dirSyncFS struct {
	vfs.FS
	j *Journal
}

func (f dirSyncFS) SyncDir(dir string) error {
	if path.Clean(dir) == path.Clean(f.j.opts.Dir) {
		return f.j.syncDir()
	}
	return f.FS.SyncDir(dir)
}

// waitRetired waits for the retirement under way, if any, and returns the
// first retirement failure.
func (j *Journal) waitRetired() error {
	if rt := j.retiring; rt != nil {
		select {
		case <-rt.done:
		default:
			j.rotationWaits.Add(1)
			<-rt.done
		}
		j.noteRetired()
	}
	return j.retireErr
}

// noteRetired takes the end of the retirement under way, which is done.
func (j *Journal) noteRetired() {
	if err := j.retiring.err; err != nil && j.retireErr == nil {
		j.retireErr = err
	}
	j.retiring = nil
}

// RotationWaits returns how many segment rotations made the writer wait
// (for a spare not yet prepared, or for the previous full segment's
// background sync).
func (j *Journal) RotationWaits() int64 { return j.rotationWaits.Load() }

// prepareSpare starts preallocating the next segment in the background once
// the current one is half full: early enough to be ready when it is needed,
// late enough not to compete with the first fdatasyncs of a fresh journal.
func (j *Journal) prepareSpare() {
	if j.opts.NoPreallocate || j.spare != nil || j.written < j.opts.SegmentBytes/2 {
		return
	}
	j.spare = make(chan spareResult, 1)
	go func(ch chan<- spareResult) {
		name := path.Join(j.opts.Dir, spareName)
		f, err := j.preallocate(name)
		var mapped []byte
		if err == nil {
			mapped, err = j.mapSpare(f, name)
			if err != nil {
				f.Close()
				j.opts.FS.Remove(name)
			}
		}
		ch <- spareResult{f, mapped, err}
	}(j.spare)
}

// mapSpare maps a prepared spare segment, with Options.Mmap, and faults
// in every page of the mapping with a write, so that the writer, which
// copies frames into the mapping under the engine's lock, does not take
// a page fault per page (a trap into the kernel and the file system's
// page_mkwrite, each): the spare's preparation on its own goroutine takes
// them. A page stays writable until the kernel writes it back: the
// segment's retirement, a Sync, or the kernel's own writeback (periodic,
// or past its dirty thresholds). It returns nil where nothing is mapped.
func (j *Journal) mapSpare(f vfs.File, name string) ([]byte, error) {
	if !j.opts.Mmap || j.mode != modeUnsynced {
		// A synced journal's spare holds synced zeros: writing into its
		// pages would make the first frame's fdatasync write them all.
		return nil, nil
	}
	b, err := j.mapFile(f, name)
	if b == nil {
		return nil, err
	}
	// Past the header the spare holds zeros: writing a zero into each
	// page changes no byte. Through vfs.CopyMapped, as every write into a
	// mapping: a simulated file system (vfs.Mem) reads the mapped bytes
	// on other goroutines, at a crash among others.
	page := os.Getpagesize()
	zero := []byte{0}
	vfs.CopyMapped(f, b, segmentHeaderSize, zero)
	for off := page; off < len(b); off += page {
		vfs.CopyMapped(f, b, int64(off), zero)
	}
	return b, nil
}

// newSegmentFile returns the file for a new segment named full: the spare
// prepared in the background when there is one (with its mapping, if it
// was mapped), else a file made now.
func (j *Journal) newSegmentFile(full string) (vfs.File, []byte, error) {
	if j.spare != nil {
		var res spareResult
		select {
		case res = <-j.spare:
		default:
			j.rotationWaits.Add(1)
			res = <-j.spare
		}
		j.spare = nil
		if res.err == nil {
			err := j.opts.FS.Rename(path.Join(j.opts.Dir, spareName), full)
			if err == nil {
				return res.file, res.mapped, nil
			}
			closeSpare(res)
			res.err = fmt.Errorf("journal: rename the spare segment to %s: %w", full, err)
		}
		// The spare failed; make the segment the slow way, on the
		// writer's path.
		j.opts.Logger.Warn("journal: the spare segment failed; making the next one on the writer's path", "segment", full, "err", res.err)
	}
	if j.opts.NoPreallocate {
		f, err := j.opts.FS.Create(full)
		if err != nil {
			return nil, nil, fmt.Errorf("journal: create segment %s: %w", full, err)
		}
		_, err = f.WriteAt(segmentHeader(j.mode), 0)
		if err == nil && j.mode == modeUnsynced {
			// No frame sync will carry the header to the disk before
			// frames are acknowledged: sync it now.
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			j.opts.FS.Remove(full)
			return nil, nil, fmt.Errorf("journal: write the header of segment %s: %w", full, err)
		}
		return f, nil, nil
	}
	f, err := j.preallocate(full)
	return f, nil, err
}

// closeSpare releases a spare segment that will not be used; its file is
// the caller's to remove.
func closeSpare(res spareResult) {
	if res.mapped != nil {
		res.file.(vfs.Mapper).Unmap(res.mapped)
	}
	res.file.Close()
}

// preallocate creates name: the segment header, then zeros up to
// SegmentBytes, synced.
//
// In an unsynced journal (write and none modes), on a file system that
// allocates without writing (vfs.Allocator: fallocate), the blocks are
// allocated instead of written, and the one sync makes the header, the
// size and the allocation durable: a frame there is acknowledged before
// it is synced anyway, and a block never written reads as zeros after a
// power cut, as a synced zero would. The header must be durable before any
// frame is acknowledged (a power cut that kept frame pages and lost page 0
// would leave a segment recovery refuses: BrokenSpareNotSynced), and so
// must the size (a segment that came back shorter than it was made reads,
// to a recovery with smaller segments, as one that lost more than its
// tail). Allocated blocks are reserved, so a full disk fails here, not in
// the writer's copy into a mapping (SIGBUS). Writing the zeros and not
// syncing them is not as safe: a file system that allocates a block when
// it writes it back (ext4's delayed allocation with data=writeback) may
// make the allocation durable before the zeros, and a power cut then shows
// the block's old bytes inside the segment, where recovery expects zeros
// or frames.
func (j *Journal) preallocate(name string) (vfs.File, error) {
	f, err := j.opts.FS.Create(name)
	if err != nil {
		return nil, fmt.Errorf("journal: create segment %s: %w", name, err)
	}
	_, err = f.WriteAt(segmentHeader(j.mode), 0)
	allocated := false
	if a, ok := f.(vfs.Allocator); ok && err == nil && j.mode == modeUnsynced {
		err = a.Allocate(j.opts.SegmentBytes)
		allocated = err == nil
		if errors.Is(err, errors.ErrUnsupported) {
			err = nil // zeros, then
		}
	}
	if !allocated {
		zeros := make([]byte, min(1<<20, j.opts.SegmentBytes))
		for off := int64(segmentHeaderSize); off < j.opts.SegmentBytes && err == nil; off += int64(len(zeros)) {
			_, err = f.WriteAt(zeros[:min(int64(len(zeros)), j.opts.SegmentBytes-off)], off)
		}
	}
	if err == nil && !(allocated && j.opts.Broken == BrokenSpareNotSynced) {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		j.opts.FS.Remove(name)
		return nil, fmt.Errorf("journal: preallocate segment %s: %w", name, err)
	}
	return f, nil
}

// unmap drops the current segment's mapping, if any.
func (j *Journal) unmap() error {
	if j.mapped == nil {
		return nil
	}
	err := j.file.(vfs.Mapper).Unmap(j.mapped)
	j.mapped = nil
	return err
}

// holdsFrame reports whether b holds a valid frame anywhere.
func holdsFrame(b []byte) bool {
	if _, _, bad, unknown := parseFrame(b); bad == "" || unknown {
		return true
	}
	return findValidFrame(b) >= 0
}

func lastNonZero(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// NextLSN returns the LSN the next added op will get.
func (j *Journal) NextLSN() uint64 { return j.nextLSN }

// SetStamp sets the time stamp of the pending frame: the time, in
// milliseconds of the engine's clock, its ops were applied at. The engine
// sets it before it adds the frame's first op.
func (j *Journal) SetStamp(ms int64) { j.pendingStamp = ms }

// Stamp returns the pending frame's time stamp.
func (j *Journal) Stamp() int64 { return j.pendingStamp }

// Add appends op to the pending frame. Only ops that changed state belong
// in the journal.
func (j *Journal) Add(op *inventory.Op) {
	j.pending = inventory.AppendOp(j.pending, op)
	j.pendingCount++
	j.nextLSN++
}

// Pending returns the number of ops added since the last Write.
func (j *Journal) Pending() int { return int(j.pendingCount) }

// PendingBytes returns the size of the pending frame's payload.
func (j *Journal) PendingBytes() int { return len(j.pending) - frameHeaderSize }

// SealAside closes the pending frame into a buffer of its own, which the
// caller keeps (Seal reuses its two): for a frame closed while the one
// Seal returned last is still being written. nil when no op was added.
func (j *Journal) SealAside() []byte {
	if j.pendingCount == 0 {
		return nil
	}
	putFrameHeader(j.pending, j.nextLSN-uint64(j.pendingCount), j.pendingCount, j.pendingStamp)
	frame := j.pending
	j.pending = make([]byte, frameHeaderSize, cap(frame))
	j.pendingCount = 0
	return frame
}

// Seal closes the pending frame and returns it, ready for WriteFrame; nil
// when no op was added since the last Seal. The returned bytes stay valid
// until the next Seal: the journal keeps two buffers and swaps them.
func (j *Journal) Seal() []byte {
	if j.pendingCount == 0 {
		return nil
	}
	putFrameHeader(j.pending, j.nextLSN-uint64(j.pendingCount), j.pendingCount, j.pendingStamp)
	frame := j.pending
	next := j.sealed
	if cap(next) < frameHeaderSize {
		next = make([]byte, frameHeaderSize, cap(frame))
	}
	// The header's bytes are left as they are: Seal writes every one.
	j.pending, j.sealed = next[:frameHeaderSize], frame
	j.pendingCount = 0
	return frame
}

// WriteFrame writes a sealed frame to the current segment with one write
// call, starting a new segment first when the current one is full. After
// an error the journal is unusable: the caller must stop, since what is on
// disk no longer matches what it applied.
func (j *Journal) WriteFrame(frame []byte) error {
	if len(frame) == 0 {
		return nil
	}
	if j.opts.Broken == BrokenLateAppend {
		frame, j.late = j.late, append(j.late[:0:0], frame...)
		if len(frame) == 0 {
			return nil
		}
	}
	if j.written > segmentHeaderSize && j.written+int64(len(frame)) > j.opts.SegmentBytes {
		// The new segment is named by the frame's first op.
		if err := j.startSegment(binary.LittleEndian.Uint64(frame[20:])); err != nil {
			return err
		}
	}
	if j.file == nil {
		// A rotation failed after closing the full segment.
		return errors.New("journal: write after a failed segment rotation: no segment is open")
	}
	if j.retiring != nil {
		select {
		case <-j.retiring.done:
			j.noteRetired()
		default:
		}
	}
	if j.retireErr != nil {
		return j.retireErr
	}
	if j.mapped != nil && j.written+int64(len(frame)) <= int64(len(j.mapped)) {
		vfs.CopyMapped(j.file, j.mapped, j.written, frame)
		j.written += int64(len(frame))
		j.bytes.Add(int64(len(frame)))
		j.prepareSpare()
		return nil
	}
	n, err := j.file.WriteAt(frame, j.written)
	j.written += int64(n)
	j.bytes.Add(int64(n))
	if err != nil {
		return fmt.Errorf("journal: write %s: %w", j.segments[len(j.segments)-1].name, err)
	}
	j.prepareSpare()
	return nil
}

// Write seals the pending frame and writes it.
func (j *Journal) Write() error { return j.WriteFrame(j.Seal()) }

// Sync makes every written frame durable (fdatasync). It may run while the
// writer goroutine calls Write.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return errors.New("journal: sync after close")
	}
	// In an unsynced journal the full segment before this one is synced
	// in the background (rotateUnsynced): its frames, and the name of the
	// one after it (its directory sync), are durable only once that ends.
	if rt := j.lastRetirement; rt != nil {
		<-rt.done
		if rt.err != nil {
			return rt.err
		}
	}
	if j.file == nil {
		return errors.New("journal: sync after a failed segment rotation: no segment is open")
	}
	if err := j.file.Sync(); err != nil {
		return fmt.Errorf("journal: fdatasync %s: %w", j.segments[len(j.segments)-1].name, err)
	}
	// One fstat per fdatasync (which costs a thousand times more): a data
	// directory removed under us must stop acknowledgements at once.
	if uc, ok := j.file.(vfs.UnlinkChecker); ok {
		gone, err := uc.Unlinked()
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		if gone {
			return fmt.Errorf("journal: segment %s was deleted while in use (was data directory %s removed?): nothing written to it would survive a restart", j.segments[len(j.segments)-1].name, j.opts.Dir)
		}
	}
	return nil
}

// Bytes returns the number of journal bytes written since Open.
func (j *Journal) Bytes() int64 { return j.bytes.Load() }

// SnapshotLSN returns the LSN a snapshot taken now would end at: the last
// op added. The caller must have written the pending frame, so that the
// snapshot lands on a frame boundary.
func (j *Journal) SnapshotLSN() uint64 { return j.nextLSN - 1 }

// WriteSnapshot durably writes snap as the state after op snap.LSN, then
// removes the snapshots older than the Options.KeepSnapshots newest and
// every segment whose ops all lie at or before the oldest kept one. It may
// run on its own goroutine while the writer goes on; it must not run twice
// at once.
func (j *Journal) WriteSnapshot(snap *Snapshot) error {
	lsn := snap.LSN
	if j.opts.Broken == BrokenSnapshotWithoutCatalog {
		kept := *snap
		kept.Sections = nil
		for _, sec := range snap.Sections {
			if sec.Tag != inventory.SectionCatalog {
				kept.Sections = append(kept.Sections, sec)
			}
		}
		snap = &kept
	}
	write := writeSnapshot
	if j.opts.Broken == BrokenSnapshotInPlace {
		write = writeSnapshotInPlace
	}
	if err := write(dirSyncFS{j.opts.FS, j}, j.opts.Dir, snap); err != nil {
		return err
	}
	names, err := j.opts.FS.List(j.opts.Dir)
	if err != nil {
		return fmt.Errorf("journal: list %s: %w", j.opts.Dir, err)
	}
	// The newest KeepSnapshots snapshots stay, with the segments after
	// the oldest of them (Options.KeepSnapshots).
	var snaps []uint64
	for _, name := range names {
		if old, ok := parseName(name, "snapshot-", ".snap"); ok && old <= lsn {
			snaps = append(snaps, old)
		}
	}
	slices.Sort(snaps)
	from := keptFrom(snaps, j.opts.KeepSnapshots)
	for _, old := range snaps {
		if old < from {
			if err := j.opts.FS.Remove(path.Join(j.opts.Dir, snapshotName(old))); err != nil {
				return fmt.Errorf("journal: remove old snapshot: %w", err)
			}
		}
	}
	j.mu.Lock()
	var drop []segment
	for len(j.segments) > 1 && j.segments[1].firstLSN <= from+1 {
		drop = append(drop, j.segments[0])
		j.segments = j.segments[1:]
	}
	j.mu.Unlock()
	for _, s := range drop {
		if err := j.opts.FS.Remove(path.Join(j.opts.Dir, s.name)); err != nil {
			return fmt.Errorf("journal: remove segment %s: %w", s.name, err)
		}
	}
	return j.syncDir()
}

// removeCovered removes the segments segs and the snapshots snaps, which
// the newest snapshot covers, then syncs the directory.
func removeCovered(fs vfs.FS, dir string, segs []segment, snaps []uint64) error {
	var names []string
	for _, s := range segs {
		names = append(names, s.name)
	}
	for _, lsn := range snaps {
		names = append(names, snapshotName(lsn))
	}
	if len(names) == 0 {
		return nil
	}
	for _, n := range names {
		if err := fs.Remove(path.Join(dir, n)); err != nil {
			return fmt.Errorf("journal: remove %s, which the snapshot covers: %w", n, err)
		}
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("journal: sync directory %s: %w", dir, err)
	}
	return nil
}

// Close writes nothing: the caller writes and syncs first. It syncs the
// current segment once more and closes it.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	retireErr := j.waitRetired()
	if j.spare != nil {
		if res := <-j.spare; res.err == nil {
			closeSpare(res)
			j.opts.FS.Remove(path.Join(j.opts.Dir, spareName))
		}
		j.spare = nil
	}
	if j.file == nil {
		// A rotation that failed after closing the full segment left none
		// open; the engine stopped at that failure.
		return retireErr
	}
	err := j.file.Sync()
	if uerr := j.unmap(); err == nil {
		err = uerr
	}
	if cerr := j.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal: close: %w", err)
	}
	return retireErr
}
