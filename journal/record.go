package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"allot/inventory"
)

const (
	frameMagic      = 0x7a6c6c61 // "allz" little-endian; any fixed value that is unlikely in payload
	frameHeaderSize = 24
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

// appendOp encodes op at the end of dst. Only mutating ops are journaled.
func appendOp(dst []byte, op *inventory.Op) []byte {
	dst = append(dst, byte(op.Kind))
	dst = appendString(dst, op.Key.SKU)
	if op.Kind != inventory.KindCapture {
		dst = appendString(dst, op.Key.Warehouse)
	}
	dst = appendString(dst, op.Key.Condition)
	dst = appendString(dst, op.Key.Source)
	dst = binary.AppendUvarint(dst, uint64(op.N))
	if op.Kind == inventory.KindStock {
		dst = binary.AppendUvarint(dst, uint64(op.Price))
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads ops and rows from a payload. It interns strings so that a
// replay of millions of ops over a few thousand rows allocates a few
// thousand strings, not millions, and the recovered state shares them.
type decoder struct {
	buf    []byte
	pos    int
	intern map[string]string
}

func newDecoder() *decoder { return &decoder{intern: make(map[string]string)} }

func (d *decoder) reset(buf []byte) { d.buf, d.pos = buf, 0 }

var errShort = errors.New("payload ends inside a record")

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		if n == 0 {
			return 0, errShort
		}
		return 0, errors.New("varint overflows 64 bits")
	}
	d.pos += n
	return v, nil
}

func (d *decoder) string() (string, error) {
	n, err := d.uvarint()
	if err != nil {
		return "", err
	}
	if n > inventory.IDBytesMax {
		return "", fmt.Errorf("identifier of %d bytes", n)
	}
	if uint64(len(d.buf)-d.pos) < n {
		return "", errShort
	}
	b := d.buf[d.pos : d.pos+int(n)]
	d.pos += int(n)
	if s, ok := d.intern[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	d.intern[s] = s
	return s, nil
}

func (d *decoder) int62() (int64, error) {
	v, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if v > inventory.CountMax {
		return 0, fmt.Errorf("number %d out of range", v)
	}
	return int64(v), nil
}

// op decodes one op. The op's fields are checked for form (op.Check) by the
// state machine when it is applied, not here.
func (d *decoder) op(op *inventory.Op) (err error) {
	if d.pos >= len(d.buf) {
		return errShort
	}
	*op = inventory.Op{Kind: inventory.Kind(d.buf[d.pos])}
	d.pos++
	if !op.Kind.Mutates() {
		return fmt.Errorf("op kind %d is not a journaled kind", op.Kind)
	}
	if op.Key.SKU, err = d.string(); err != nil {
		return err
	}
	if op.Kind != inventory.KindCapture {
		if op.Key.Warehouse, err = d.string(); err != nil {
			return err
		}
	}
	if op.Key.Condition, err = d.string(); err != nil {
		return err
	}
	if op.Key.Source, err = d.string(); err != nil {
		return err
	}
	if op.N, err = d.int62(); err != nil {
		return err
	}
	if op.Kind == inventory.KindStock {
		if op.Price, err = d.int62(); err != nil {
			return err
		}
	}
	return nil
}

// frameHeader is a decoded frame header.
type frameHeader struct {
	payloadLen uint32
	crc        uint32
	firstLSN   uint64
	count      uint32
}

// putFrameHeader fills the header in front of payload (frame[:24]) and the
// CRC over frame[12:].
func putFrameHeader(frame []byte, firstLSN uint64, count uint32) {
	binary.LittleEndian.PutUint32(frame[0:], frameMagic)
	binary.LittleEndian.PutUint32(frame[4:], uint32(len(frame)-frameHeaderSize))
	binary.LittleEndian.PutUint64(frame[12:], firstLSN)
	binary.LittleEndian.PutUint32(frame[20:], count)
	binary.LittleEndian.PutUint32(frame[8:], crc32.Checksum(frame[12:], castagnoli))
}

// parseFrame checks the frame at the start of buf. It returns the header
// and the frame's total size, or a reason it is not a valid frame.
func parseFrame(buf []byte) (frameHeader, int, string) {
	if len(buf) < frameHeaderSize {
		return frameHeader{}, 0, "frame header cut short"
	}
	if binary.LittleEndian.Uint32(buf[0:]) != frameMagic {
		return frameHeader{}, 0, "no frame magic"
	}
	h := frameHeader{
		payloadLen: binary.LittleEndian.Uint32(buf[4:]),
		crc:        binary.LittleEndian.Uint32(buf[8:]),
		firstLSN:   binary.LittleEndian.Uint64(buf[12:]),
		count:      binary.LittleEndian.Uint32(buf[20:]),
	}
	if h.payloadLen > FramePayloadMax {
		return frameHeader{}, 0, fmt.Sprintf("frame length %d over the maximum", h.payloadLen)
	}
	size := frameHeaderSize + int(h.payloadLen)
	if len(buf) < size {
		return frameHeader{}, 0, "frame cut short"
	}
	if crc32.Checksum(buf[12:size], castagnoli) != h.crc {
		return frameHeader{}, 0, "frame checksum mismatch"
	}
	return h, size, ""
}

// findValidFrame reports the offset of the first valid frame in buf after
// position 0, or -1. Recovery uses it to tell a torn tail (nothing valid
// after the bad frame) from corruption in the middle of the log.
func findValidFrame(buf []byte) int {
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], frameMagic)
	for i := 1; i+frameHeaderSize <= len(buf); i++ {
		if buf[i] != magic[0] || buf[i+1] != magic[1] || buf[i+2] != magic[2] || buf[i+3] != magic[3] {
			continue
		}
		if _, _, bad := parseFrame(buf[i:]); bad == "" {
			return i
		}
	}
	return -1
}
