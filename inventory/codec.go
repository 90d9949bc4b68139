package inventory

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The binary form of an op, as the journal stores it: the kind byte, the
// kind's fields (its descriptor's encode), then, for a keyed kind, the
// idempotency key. Strings are a uvarint length and the bytes; numbers are
// uvarints.
//
// Format versions: version 1 (the first release) had no keys, no holds and
// no orders; version 2 added them. A decoder is told the version of the
// frame it reads (Decoder.Version) and reads version 1 ops as they were
// written.
const (
	// OpFormatVersion is the version AppendOp writes.
	OpFormatVersion = 2
	// OpFormatVersionMin is the oldest version a Decoder reads.
	OpFormatVersionMin = 1
)

// AppendOp encodes op at the end of dst in the current format. op must be of
// a mutating kind and well formed (Check).
func AppendOp(dst []byte, op *Op) []byte {
	d := op.Kind.descriptor()
	dst = append(dst, byte(op.Kind))
	dst = d.encode(dst, op)
	if d.keyed {
		dst = AppendString(dst, op.IdempotencyKey)
	}
	return dst
}

// AppendString appends s as a uvarint length and its bytes.
func AppendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Decoder reads ops and values from a payload. It interns identifiers so
// that a replay of millions of ops over a few thousand rows allocates a few
// thousand strings, not millions, and the recovered state shares them.
type Decoder struct {
	buf       []byte
	pos       int
	intern    map[string]string
	internMax int // the intern table's bound (NewFollowDecoder); 0: none
	// Version is the format version of what is being read.
	Version int
}

// NewDecoder returns a decoder of the current format version.
func NewDecoder() *Decoder {
	return &Decoder{intern: make(map[string]string), Version: OpFormatVersion}
}

// NewFollowDecoder returns a decoder for a reader that follows a journal
// for as long as it runs (a change stream's subscriber, a standby): its
// intern table holds at most InternMax strings and starts again empty when
// full. Hold ids and idempotency keys are identifiers too, each new one
// read once, and such a decoder with an unbounded table kept every one it
// ever read. A replay that ends (recovery) keeps the unbounded table of
// NewDecoder, so that the recovered state shares every identifier.
func NewFollowDecoder() *Decoder {
	d := NewDecoder()
	d.internMax = InternMax
	return d
}

// Reset starts reading buf.
func (d *Decoder) Reset(buf []byte) { d.buf, d.pos = buf, 0 }

// Pos is the offset of the next byte to read.
func (d *Decoder) Pos() int { return d.pos }

// Done reports whether every byte was read.
func (d *Decoder) Done() bool { return d.pos == len(d.buf) }

// Rest returns the bytes not read yet, and consumes them.
func (d *Decoder) Rest() []byte {
	b := d.buf[d.pos:]
	d.pos = len(d.buf)
	return b
}

// ErrShort is returned when the payload ends inside a value.
var ErrShort = errors.New("payload ends inside a record")

// Uvarint reads a uvarint.
func (d *Decoder) Uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		if n == 0 {
			return 0, ErrShort
		}
		return 0, errors.New("varint overflows 64 bits")
	}
	d.pos += n
	return v, nil
}

// Byte reads one byte.
func (d *Decoder) Byte() (byte, error) {
	if d.pos >= len(d.buf) {
		return 0, ErrShort
	}
	b := d.buf[d.pos]
	d.pos++
	return b, nil
}

// String reads an identifier (at most IDBytesMax bytes), interned.
func (d *Decoder) String() (string, error) { return d.StringMax(IDBytesMax) }

// StringMax reads a string of at most max bytes; those of identifier size
// are interned.
func (d *Decoder) StringMax(max int) (string, error) {
	n, err := d.Uvarint()
	if err != nil {
		return "", err
	}
	if n > uint64(max) {
		return "", fmt.Errorf("string of %d bytes, over %d", n, max)
	}
	if uint64(len(d.buf)-d.pos) < n {
		return "", ErrShort
	}
	b := d.buf[d.pos : d.pos+int(n)]
	d.pos += int(n)
	if n > IDBytesMax || d.intern == nil {
		return string(b), nil
	}
	if s, ok := d.intern[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if d.internMax > 0 && len(d.intern) >= d.internMax {
		clear(d.intern)
	}
	d.intern[s] = s
	return s, nil
}

// InternMax is the most strings the intern table of a NewFollowDecoder
// holds.
const InternMax = 1 << 16

// Int62 reads a number from 0 to CountMax.
func (d *Decoder) Int62() (int64, error) {
	v, err := d.Uvarint()
	if err != nil {
		return 0, err
	}
	if v > CountMax {
		return 0, fmt.Errorf("number %d out of range", v)
	}
	return int64(v), nil
}

// Op decodes one op. The op's fields are checked for form (Op.Check) by the
// state machine when it is applied, not here. op.Lines is reused.
func (d *Decoder) Op(op *Op) error {
	if d.pos >= len(d.buf) {
		return ErrShort
	}
	kind := Kind(d.buf[d.pos])
	d.pos++
	desc := kind.descriptor()
	if desc == nil || !desc.mutates {
		return fmt.Errorf("op kind %d is not a journaled kind", kind)
	}
	if d.Version < desc.since {
		return fmt.Errorf("op kind %s in a version %d frame: it came in version %d", kind, d.Version, desc.since)
	}
	lines := op.Lines[:0]
	*op = Op{Kind: kind, Lines: lines}
	if err := desc.decode(d, op); err != nil {
		return err
	}
	if desc.keyed && d.Version >= 2 {
		var err error
		if op.IdempotencyKey, err = d.StringMax(IDBytesMax); err != nil {
			return err
		}
	}
	return nil
}

// strings reads n identifiers into the pointers given.
func (d *Decoder) strings(ps ...*string) error {
	for _, p := range ps {
		s, err := d.String()
		if err != nil {
			return err
		}
		*p = s
	}
	return nil
}

// appendDemand encodes hold and order lines.
func appendDemand(dst []byte, lines []Demand) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(lines)))
	for i := range lines {
		l := &lines[i]
		dst = AppendString(dst, l.Group.SKU)
		dst = AppendString(dst, l.Group.Condition)
		dst = AppendString(dst, l.Group.Source)
		dst = binary.AppendUvarint(dst, uint64(l.N))
	}
	return dst
}

func (d *Decoder) demand(op *Op) error {
	n, err := d.Uvarint()
	if err != nil {
		return err
	}
	if n > HoldLinesMax {
		return fmt.Errorf("%d lines, over %d", n, HoldLinesMax)
	}
	for i := uint64(0); i < n; i++ {
		var l Demand
		if err := d.strings(&l.Group.SKU, &l.Group.Condition, &l.Group.Source); err != nil {
			return err
		}
		if l.N, err = d.Int62(); err != nil {
			return err
		}
		op.Lines = append(op.Lines, l)
	}
	return nil
}
