package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Frame formats.
//
// Version 1 (the first release), 24 bytes of header:
//
//	magic "allz" u32 | payload length u32 | crc32c u32 of [12:end] |
//	first LSN u64 | op count u32 | payload
//
// Version 2, 36 bytes: a magic of its own and the format version inside the
// checksummed part, and the batch's time stamp (milliseconds of the
// engine's clock, the time every op of the frame was applied at):
//
//	magic "allv" u32 | payload length u32 | crc32c u32 of [12:end] |
//	version u16 | flags u16 | op count u32 | first LSN u64 | stamp i64 |
//	payload
//
// A frame with a valid checksum and a version this release does not know
// is refused with ErrUnknownVersion: it was written by a newer release, and
// cutting it as a torn tail would lose acknowledged ops.
const (
	frameMagic        = 0x7a6c6c61 // "allz": version 1
	frameMagicV2      = 0x766c6c61 // "allv": version 2 and later
	frameHeaderSizeV1 = 24
	frameHeaderSize   = 36
	// FrameVersion is the version this release writes.
	FrameVersion = 2
	// FramePayloadMax bounds one frame's payload: a length field above it is
	// corruption, not a reason to allocate.
	FramePayloadMax = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is matched (errors.Is) by every corruption error.
var ErrCorrupt = errors.New("journal: corrupt")

// CorruptionError says where acknowledged data is damaged.
type CorruptionError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("journal: corrupt %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

// ErrUnknownVersion is matched (errors.Is) by the error for a frame or a
// snapshot in a format version this release does not read.
var ErrUnknownVersion = errors.New("journal: unknown format version")

// frameHeader is a decoded frame header.
type frameHeader struct {
	version    int
	headerSize int
	payloadLen uint32
	crc        uint32
	firstLSN   uint64
	count      uint32
	stamp      int64
}

// putFrameHeader fills the version 2 header in front of payload
// (frame[:36]) and the CRC over frame[12:].
func putFrameHeader(frame []byte, firstLSN uint64, count uint32, stamp int64) {
	_ = frame[frameHeaderSize-1] // one bounds check for every write below
	binary.LittleEndian.PutUint32(frame[0:], frameMagicV2)
	binary.LittleEndian.PutUint32(frame[4:], uint32(len(frame)-frameHeaderSize))
	binary.LittleEndian.PutUint16(frame[12:], FrameVersion)
	binary.LittleEndian.PutUint16(frame[14:], 0)
	binary.LittleEndian.PutUint32(frame[16:], count)
	binary.LittleEndian.PutUint64(frame[20:], firstLSN)
	binary.LittleEndian.PutUint64(frame[28:], uint64(stamp))
	binary.LittleEndian.PutUint32(frame[8:], crc32.Checksum(frame[12:], castagnoli))
}

// parseFrame checks the frame at the start of buf. It returns the header
// and the frame's total size, or a reason it is not a valid frame. A
// checksummed frame of an unknown version gives unknown = true.
func parseFrame(buf []byte) (h frameHeader, size int, bad string, unknown bool) {
	if len(buf) < frameHeaderSizeV1 {
		return h, 0, "frame header cut short", false
	}
	switch binary.LittleEndian.Uint32(buf[0:]) {
	case frameMagic:
		h.version, h.headerSize = 1, frameHeaderSizeV1
	case frameMagicV2:
		h.version, h.headerSize = 2, frameHeaderSize
		if len(buf) < frameHeaderSize {
			return h, 0, "frame header cut short", false
		}
	default:
		return h, 0, "no frame magic", false
	}
	h.payloadLen = binary.LittleEndian.Uint32(buf[4:])
	h.crc = binary.LittleEndian.Uint32(buf[8:])
	if h.payloadLen > FramePayloadMax {
		return h, 0, fmt.Sprintf("frame length %d over the maximum", h.payloadLen), false
	}
	size = h.headerSize + int(h.payloadLen)
	if len(buf) < size {
		return h, 0, "frame cut short", false
	}
	if crc32.Checksum(buf[12:size], castagnoli) != h.crc {
		return h, 0, "frame checksum mismatch", false
	}
	if h.version == 1 {
		h.firstLSN = binary.LittleEndian.Uint64(buf[12:])
		h.count = binary.LittleEndian.Uint32(buf[20:])
		return h, size, "", false
	}
	h.version = int(binary.LittleEndian.Uint16(buf[12:]))
	if h.version != FrameVersion {
		return h, size, fmt.Sprintf("frame format version %d; this release reads versions 1 to %d", h.version, FrameVersion), true
	}
	h.count = binary.LittleEndian.Uint32(buf[16:])
	h.firstLSN = binary.LittleEndian.Uint64(buf[20:])
	h.stamp = int64(binary.LittleEndian.Uint64(buf[28:]))
	return h, size, "", false
}

// findValidFrame reports the offset of the first valid frame in buf after
// position 0, or -1. Recovery uses it to tell a torn tail (nothing valid
// after the bad frame) from corruption in the middle of the log.
func findValidFrame(buf []byte) int {
	for i := 1; i+frameHeaderSizeV1 <= len(buf); i++ {
		if buf[i] != 'a' || buf[i+1] != 'l' || buf[i+2] != 'l' || (buf[i+3] != 'z' && buf[i+3] != 'v') {
			continue
		}
		if _, _, bad, unknown := parseFrame(buf[i:]); bad == "" || unknown {
			return i
		}
	}
	return -1
}
