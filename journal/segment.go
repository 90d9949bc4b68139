package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Segment header.
//
// A segment written by this release starts with a 16-byte header that
// records how its frames were acknowledged, because that decides what a
// damaged tail means at recovery:
//
//	magic "alls" u32 | crc32c u32 of [8:16] | header version u16 |
//	mode u16 | reserved u32 (zero)
//
// Frames follow at offset segmentHeaderSize. A segment with no header (the
// first 4 bytes are a frame's magic, or zeros) was written by an earlier
// release, which acknowledged in every mode as it does now but recorded
// nothing: it is read as synced, the strict reading.
//
// The header is written and synced when the file is preallocated (or
// created, with NoPreallocate in an unsynced mode), before the segment
// takes its first frame, so a torn header is never the only copy of an
// acknowledged frame's context.
//
// Rejected: recording the mode in the segment's file name. Renaming a
// segment when the engine reopens it in another mode would be a second
// write that must itself be crash-safe, and an old release would not list
// the renamed files at all.
const (
	segmentMagic         = 0x736c6c61 // "alls"
	segmentHeaderSize    = 16
	segmentHeaderVersion = 1
)

// segmentMode says how a segment's frames were acknowledged.
type segmentMode uint16

const (
	// modeSynced: every acknowledged frame was fdatasynced first (the
	// engine's fsync mode). Any damage before the tail is corruption of
	// acknowledged data.
	modeSynced segmentMode = 1
	// modeUnsynced: frames were acknowledged once written (the engine's
	// write and none modes, which promise survival of a process crash at
	// most). After a power cut the kernel may have written back any subset
	// of the pages, in any order: a hole followed by frames that were
	// never synced is what such a cut leaves, and recovery cuts the
	// segment at the hole instead of refusing.
	modeUnsynced segmentMode = 2
)

func (m segmentMode) String() string {
	switch m {
	case modeSynced:
		return "synced"
	case modeUnsynced:
		return "unsynced"
	}
	return fmt.Sprintf("mode(%d)", uint16(m))
}

// segmentHeader returns the header for mode.
func segmentHeader(mode segmentMode) []byte {
	h := make([]byte, segmentHeaderSize)
	binary.LittleEndian.PutUint32(h[0:], segmentMagic)
	binary.LittleEndian.PutUint16(h[8:], segmentHeaderVersion)
	binary.LittleEndian.PutUint16(h[10:], uint16(mode))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(h[8:], castagnoli))
	return h
}

// parseSegmentHeader reads the header at the start of a segment's bytes.
// It returns the segment's mode and the offset of its first frame; for a
// segment of an earlier release (no header) modeSynced and 0. bad is set
// for a header that is damaged; unknown for a valid header of a version
// this release does not read.
func parseSegmentHeader(buf []byte) (mode segmentMode, start int, bad string, unknown bool) {
	if len(buf) < 4 || binary.LittleEndian.Uint32(buf) != segmentMagic {
		return modeSynced, 0, "", false
	}
	if len(buf) < segmentHeaderSize {
		return 0, 0, "segment header cut short", false
	}
	if crc32.Checksum(buf[8:segmentHeaderSize], castagnoli) != binary.LittleEndian.Uint32(buf[4:]) {
		return 0, 0, "segment header checksum mismatch", false
	}
	if v := binary.LittleEndian.Uint16(buf[8:]); v != segmentHeaderVersion {
		return 0, 0, fmt.Sprintf("segment header version %d; this release reads version %d", v, segmentHeaderVersion), true
	}
	switch mode = segmentMode(binary.LittleEndian.Uint16(buf[10:])); mode {
	case modeSynced, modeUnsynced:
		return mode, segmentHeaderSize, "", false
	}
	return 0, 0, fmt.Sprintf("segment header names an unknown mode %d", uint16(mode)), false
}
