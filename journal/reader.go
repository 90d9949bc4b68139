package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"

	"allot/inventory"
	"allot/vfs"
)

// Reading the journal while it is written: the change stream and, later, a
// replica follow it with a Reader, which returns frames in LSN order from
// the segments on disk and tails the current one.
//
// A Reader never writes, never takes the directory's lock and never decides
// what is durable: the caller passes the LSN up to which frames are known to
// be written (the engine publishes it after each write, or each fdatasync
// in fsync mode), and the Reader returns no frame past it. So a frame that
// is being copied into a mapped segment, or that is written but not yet
// synced, is never seen half done or before it is durable.
//
// Segments deleted by snapshot trimming while a Reader has one open stay
// readable through the open file (POSIX unlink semantics); a Reader that
// must open a segment that is gone reports a *TrimmedError. So does one
// that meets ops a power cut took from a segment before the newest
// snapshot, which recovery does not replay (lostOps): they are gone as if
// trimmed, and its caller resumes after a snapshot that follows them. A
// frame missing from a synced segment followed by another is damage: a
// *CorruptionError.

// TrimmedError is returned when the ops a reader asks for are no longer in
// the journal: snapshot trimming removed the segments that held them, or a
// power cut took them from an unsynced segment kept as history (lostOps).
// Oldest is the first LSN that can still be read with the state before it:
// the LSN of a kept snapshot + 1 (the oldest one kept, or the first past
// the lost ops), or 1 when the journal is whole.
type TrimmedError struct {
	Want   uint64
	Oldest uint64
}

func (e *TrimmedError) Error() string {
	return fmt.Sprintf("journal: op %d is trimmed; the oldest op still readable is %d", e.Want, e.Oldest)
}

// ErrTrimmed is matched (errors.Is) by every *TrimmedError.
var ErrTrimmed = errors.New("journal: trimmed")

func (e *TrimmedError) Is(target error) bool { return target == ErrTrimmed }

// FrameInfo is one frame as a Reader returns it.
type FrameInfo struct {
	FirstLSN uint64
	Count    int
	// Stamp is the batch's time in milliseconds of the engine's clock (0
	// for version 1 frames, which carried none).
	Stamp int64
	// Version is the frame format version: tell the op decoder
	// (inventory.Decoder.Version).
	Version int
	// Payload is the frame's ops, valid until the next call to Next.
	Payload []byte
}

// LastLSN is the LSN of the frame's last op.
func (f *FrameInfo) LastLSN() uint64 { return f.FirstLSN + uint64(f.Count) - 1 }

// FrameLastLSN returns the LSN of the last op of a sealed frame (what
// Journal.Seal returned): the engine publishes it once the frame is as
// durable as its mode promises.
func FrameLastLSN(frame []byte) uint64 {
	return binary.LittleEndian.Uint64(frame[20:]) + uint64(binary.LittleEndian.Uint32(frame[16:])) - 1
}

// Reader reads frames from a journal directory in LSN order. It is used by
// one goroutine at a time.
type Reader struct {
	fs  vfs.FS
	dir string

	file     vfs.File
	fileName string
	mode     segmentMode // the open segment's (its header's): synced or not
	off      int64
	next     uint64 // the first LSN of the next frame to return
	buf      []byte
}

// NewReader returns a reader whose first frame is the one that holds op
// from (from >= 1): that frame may begin before from, and the caller skips
// the ops it does not want. It fails with a *TrimmedError when op from is
// no longer in the journal.
func NewReader(fs vfs.FS, dir string, from uint64) (*Reader, error) {
	if fs == nil {
		fs = vfs.OS{}
	}
	if from == 0 {
		from = 1
	}
	r := &Reader{fs: fs, dir: dir, next: from}
	segs, snaps, err := listDir(fs, dir)
	if err != nil {
		return nil, err
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].firstLSN > from }) - 1
	if i < 0 {
		if len(segs) == 0 && len(snaps) == 0 && from == 1 {
			// A fresh directory: nothing is written yet.
			return r, nil
		}
		return nil, &TrimmedError{Want: from, Oldest: oldest(segs, snaps)}
	}
	if err := r.open(segs[i].name); err != nil {
		return nil, err
	}
	// Skip to the frame that holds from.
	for {
		h, size, ok, err := r.peek()
		if err != nil {
			return nil, err
		}
		if !ok || h.firstLSN+uint64(h.count) > from {
			break
		}
		r.off += int64(size)
	}
	return r, nil
}

// Oldest returns the first LSN whose state a reader can rebuild from the
// journal in dir: the oldest snapshot's LSN + 1 that the segments still
// reach back to (Options.KeepSnapshots says how many stay), or the first
// segment's first op when no snapshot was ever written.
func Oldest(fs vfs.FS, dir string) (uint64, error) {
	if fs == nil {
		fs = vfs.OS{}
	}
	segs, snaps, err := listDir(fs, dir)
	if err != nil {
		return 0, err
	}
	return oldest(segs, snaps), nil
}

// oldest is Oldest of a directory's segments and snapshots (both oldest
// first).
func oldest(segs []segment, snaps []uint64) uint64 {
	if len(segs) == 0 {
		if len(snaps) > 0 {
			return snaps[len(snaps)-1] + 1
		}
		return 1
	}
	for _, lsn := range snaps {
		if lsn+1 >= segs[0].firstLSN {
			return lsn + 1
		}
	}
	// No snapshot the segments follow (a directory trimmed by hand).
	if len(snaps) > 0 {
		return max(snaps[len(snaps)-1]+1, segs[0].firstLSN)
	}
	return segs[0].firstLSN
}

// listDir returns the segments and the snapshots' LSNs, both oldest
// first.
func listDir(fs vfs.FS, dir string) ([]segment, []uint64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	var segs []segment
	var snaps []uint64
	for _, name := range names {
		if lsn, ok := parseName(name, "snapshot-", ".snap"); ok {
			snaps = append(snaps, lsn)
		} else if lsn, ok := parseName(name, "journal-", ".log"); ok {
			segs = append(segs, segment{name: name, firstLSN: lsn})
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].firstLSN < segs[j].firstLSN })
	slices.Sort(snaps)
	return segs, snaps, nil
}

// LoadSnapshot returns the state of the newest snapshot in dir whose LSN is
// at most atMost, and its LSN; a fresh state and 0 when there is none.
func LoadSnapshot(fs vfs.FS, dir string, atMost uint64) (uint64, *inventory.State, error) {
	return LoadSnapshotSections(fs, dir, atMost, nil)
}

// LoadSnapshotSections is LoadSnapshot loading only the snapshot sections
// keep accepts (nil: every one), for a reader that needs part of the state
// (the change stream's follower leaves the catalog out).
func LoadSnapshotSections(fs vfs.FS, dir string, atMost uint64, keep func(tag byte) bool) (uint64, *inventory.State, error) {
	if fs == nil {
		fs = vfs.OS{}
	}
	names, err := fs.List(dir)
	if err != nil {
		return 0, nil, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	var best uint64
	for _, name := range names {
		if lsn, ok := parseName(name, "snapshot-", ".snap"); ok && lsn <= atMost && lsn > best {
			best = lsn
		}
	}
	if best == 0 {
		return 0, inventory.NewState(), nil
	}
	name := path.Join(dir, snapshotName(best))
	buf, err := vfs.ReadFile(fs, name)
	if err != nil {
		return 0, nil, fmt.Errorf("journal: read %s: %w", name, err)
	}
	lsn, st, err := decodeSnapshotSections(name, buf, inventory.NewDecoder(), keep)
	if err != nil {
		return 0, nil, err
	}
	return lsn, st, nil
}

func (r *Reader) open(name string) error {
	f, err := r.fs.Open(path.Join(r.dir, name))
	if err != nil {
		if errors.Is(err, vfs.ErrNotExist) {
			segs, snaps, lerr := listDir(r.fs, r.dir)
			if lerr != nil {
				return lerr
			}
			return &TrimmedError{Want: r.next, Oldest: oldest(segs, snaps)}
		}
		return fmt.Errorf("journal: open %s: %w", name, err)
	}
	// Frames start after the segment header (none in a segment of an
	// earlier release).
	hdr := make([]byte, segmentHeaderSize)
	n, err := f.ReadAt(hdr, 0)
	if err != nil && err != io.EOF {
		f.Close()
		return fmt.Errorf("journal: read %s: %w", name, err)
	}
	mode, start, bad, unknown := parseSegmentHeader(hdr[:n])
	if unknown {
		f.Close()
		return fmt.Errorf("%w: %s: %s", ErrUnknownVersion, name, bad)
	}
	if bad != "" {
		// Not yet complete: recovery finished every header of a segment
		// that holds frames, so this is one being created.
		start = segmentHeaderSize
	}
	if r.file != nil {
		r.file.Close()
	}
	r.file, r.fileName, r.mode, r.off = f, name, mode, int64(start)
	return nil
}

// peek reads the frame at the reader's offset without consuming it. ok is
// false when there is no complete frame there (the end of what is written
// so far, the zeros of a preallocated segment, or a frame being written).
func (r *Reader) peek() (h frameHeader, size int, ok bool, err error) {
	if r.file == nil {
		return h, 0, false, nil
	}
	if cap(r.buf) < frameHeaderSize {
		r.buf = make([]byte, 64<<10)
	}
	hdr := r.buf[:frameHeaderSize]
	n, err := r.file.ReadAt(hdr, r.off)
	if err != nil && err != io.EOF {
		return h, 0, false, fmt.Errorf("journal: read %s: %w", r.fileName, err)
	}
	if n < frameHeaderSizeV1 {
		return h, 0, false, nil
	}
	hdr = hdr[:n]
	var need int
	switch binary.LittleEndian.Uint32(hdr) {
	case frameMagic:
		need = frameHeaderSizeV1
	case frameMagicV2:
		need = frameHeaderSize
	default:
		return h, 0, false, nil
	}
	if n < need {
		return h, 0, false, nil
	}
	plen := binary.LittleEndian.Uint32(hdr[4:])
	if plen > FramePayloadMax {
		return h, 0, false, nil
	}
	total := need + int(plen)
	if cap(r.buf) < total {
		r.buf = make([]byte, total)
	}
	frame := r.buf[:total]
	n, err = r.file.ReadAt(frame, r.off)
	if err != nil && err != io.EOF {
		return h, 0, false, fmt.Errorf("journal: read %s: %w", r.fileName, err)
	}
	if n < total {
		return h, 0, false, nil
	}
	h, size, bad, unknown := parseFrame(frame)
	if unknown {
		return h, 0, false, fmt.Errorf("%w: %s at offset %d: %s", ErrUnknownVersion, r.fileName, r.off, bad)
	}
	if bad != "" {
		return h, 0, false, nil
	}
	return h, size, true, nil
}

// Next returns the next frame if its last op is at most limit (the LSN the
// caller knows to be durable), or ok false when there is none yet. Frames
// up to limit must be on disk: a frame that should be there and is not is
// an error (or a *TrimmedError when its segment was removed, or when a
// later segment shows that a power cut took it: see lostOps).
func (r *Reader) Next(limit uint64) (f FrameInfo, ok bool, err error) {
	if r.next > limit {
		return f, false, nil
	}
	for attempt := 0; ; attempt++ {
		h, size, found, err := r.peek()
		if err != nil {
			return f, false, err
		}
		if found {
			if h.firstLSN+uint64(h.count) <= r.next {
				// A frame wholly before the position (a reader placed
				// in the middle of a frame has consumed it).
				r.off += int64(size)
				continue
			}
			if h.firstLSN > r.next {
				return f, false, &CorruptionError{File: r.fileName, Offset: r.off, Reason: fmt.Sprintf("frame starts at op %d, the reader expected %d", h.firstLSN, r.next)}
			}
			last := h.firstLSN + uint64(h.count) - 1
			if last > limit {
				return f, false, nil
			}
			f = FrameInfo{FirstLSN: h.firstLSN, Count: int(h.count), Stamp: h.stamp, Version: h.version,
				Payload: r.buf[h.headerSize:size]}
			r.off += int64(size)
			r.next = last + 1
			return f, true, nil
		}
		// Nothing at the offset: the frame, durable by the caller's word,
		// is in the next segment.
		if attempt > 1 {
			return f, false, fmt.Errorf("journal: op %d should be durable but no segment holds it (after %s offset %d)", r.next, r.fileName, r.off)
		}
		segs, snaps, err := listDir(r.fs, r.dir)
		if err != nil {
			return f, false, err
		}
		i := sort.Search(len(segs), func(i int) bool { return segs[i].firstLSN > r.next }) - 1
		if i < 0 {
			return f, false, &TrimmedError{Want: r.next, Oldest: oldest(segs, snaps)}
		}
		if segs[i].name == r.fileName {
			if attempt > 0 && i+1 < len(segs) {
				// A later segment exists, so every op before its first
				// was written to this one, and op r.next is not here.
				if r.mode == modeUnsynced {
					// Lost with this segment's unsynced pages (a power
					// cut in write or none mode) in history that
					// recovery does not replay.
					return f, false, lostOps(r, segs[i+1].firstLSN, snaps)
				}
				// A synced segment was synced before the next one took
				// a frame: what is missing here was damaged on disk.
				return f, false, &CorruptionError{File: r.fileName, Offset: r.off,
					Reason: fmt.Sprintf("op %d is missing (no valid frame here) in a synced segment followed by another", r.next)}
			}
			continue // read the current one again
		}
		if err := r.open(segs[i].name); err != nil {
			return f, false, err
		}
	}
}

// lostOps is Next's error for ops r.next..end-1, which the segment the
// reader is in lost, when the next segment starts at end. A power cut in
// write or none mode leaves such a hole only before the newest snapshot
// (recovery cuts one after it, and drops what follows): the ops are then
// trimmed, readable on from the oldest snapshot the later segments reach
// back to, as they would be had a snapshot removed this segment. Without
// such a snapshot nothing can be read past the hole: corruption.
func lostOps(r *Reader, end uint64, snaps []uint64) error {
	for _, lsn := range snaps {
		if lsn+1 >= end {
			return &TrimmedError{Want: r.next, Oldest: lsn + 1}
		}
	}
	return &CorruptionError{File: r.fileName, Offset: r.off,
		Reason: fmt.Sprintf("ops %d..%d are missing before the next segment, and no snapshot follows them", r.next, end-1)}
}

// Close releases the open segment.
func (r *Reader) Close() error {
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}
