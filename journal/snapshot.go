package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path"

	"allot/inventory"
	"allot/vfs"
)

// Snapshot files.
//
// Version 1 (the first release):
//
//	"allotsn1" | LSN u64 | row count u64 | rows | crc32c u32 of all before it
//
// Version 2: the rows, then the state machine's other sections (holds,
// idempotency keys, time, ...), each a tag, a uvarint length and its bytes:
//
//	"allotsn2" | LSN u64 | row count u64 | rows | section count uvarint |
//	sections | crc32c u32 of all before it
//
// a row: sku, warehouse, condition, source (uvarint length + bytes each),
// count and price (uvarint). A snapshot whose magic names another version
// is refused with ErrUnknownVersion.
const (
	snapshotMagicV1 = "allotsn1"
	snapshotMagic   = "allotsn2"
	snapshotPrefix  = "allotsn"
)

// Snapshot is the state after op LSN, as the engine copies it: rows in any
// order (sorted when written) and the state machine's other sections.
type Snapshot struct {
	LSN      uint64
	Rows     []inventory.Row
	Sections []inventory.Section
}

func snapshotName(lsn uint64) string { return fmt.Sprintf("snapshot-%020d.snap", lsn) }

func encodeSnapshot(snap *Snapshot) []byte {
	size := 40 + len(snap.Rows)*40
	for _, s := range snap.Sections {
		size += len(s.Bytes) + 12
	}
	buf := make([]byte, 0, size)
	buf = append(buf, snapshotMagic...)
	buf = binary.LittleEndian.AppendUint64(buf, snap.LSN)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(snap.Rows)))
	for i := range snap.Rows {
		r := &snap.Rows[i]
		buf = inventory.AppendString(buf, r.Key.SKU)
		buf = inventory.AppendString(buf, r.Key.Warehouse)
		buf = inventory.AppendString(buf, r.Key.Condition)
		buf = inventory.AppendString(buf, r.Key.Source)
		buf = binary.AppendUvarint(buf, uint64(r.Count))
		buf = binary.AppendUvarint(buf, uint64(r.Price))
	}
	buf = binary.AppendUvarint(buf, uint64(len(snap.Sections)))
	for _, s := range snap.Sections {
		buf = append(buf, s.Tag)
		buf = binary.AppendUvarint(buf, uint64(len(s.Bytes)))
		buf = append(buf, s.Bytes...)
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// SnapshotLSN checks a snapshot's bytes (its magic, checksum and format)
// and returns the LSN it holds the state at, which its file must be named
// by. name is only for errors.
func SnapshotLSN(name string, buf []byte) (uint64, error) {
	body, _, err := checkSnapshot(name, buf)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(body[8:]), nil
}

// checkSnapshot checks a snapshot's magic, checksum and format, and
// returns its body (without the checksum) and format version.
func checkSnapshot(name string, buf []byte) ([]byte, int, error) {
	if len(buf) < len(snapshotMagic)+20 || string(buf[:len(snapshotPrefix)]) != snapshotPrefix {
		return nil, 0, &CorruptionError{File: name, Reason: "not a snapshot (bad magic or too short)"}
	}
	version := 0
	switch string(buf[:len(snapshotMagic)]) {
	case snapshotMagicV1:
		version = 1
	case snapshotMagic:
		version = 2
	}
	body := buf[:len(buf)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(buf[len(buf)-4:]) {
		return nil, 0, &CorruptionError{File: name, Offset: int64(len(buf) - 4), Reason: "snapshot checksum mismatch"}
	}
	if version == 0 {
		return nil, 0, fmt.Errorf("%w: snapshot %s is format %q; this release reads %s and %s", ErrUnknownVersion, name, buf[:len(snapshotMagic)], snapshotMagicV1, snapshotMagic)
	}
	return body, version, nil
}

// decodeSnapshot loads a snapshot into a fresh state.
func decodeSnapshot(name string, buf []byte, d *inventory.Decoder) (uint64, *inventory.State, error) {
	return decodeSnapshotSections(name, buf, d, nil)
}

// decodeSnapshotSections is decodeSnapshot loading only the sections keep
// accepts (nil: every one); the others are checked for framing only.
func decodeSnapshotSections(name string, buf []byte, d *inventory.Decoder, keep func(tag byte) bool) (uint64, *inventory.State, error) {
	corrupt := func(off int, reason string) error {
		return &CorruptionError{File: name, Offset: int64(off), Reason: reason}
	}
	body, version, err := checkSnapshot(name, buf)
	if err != nil {
		return 0, nil, err
	}
	lsn := binary.LittleEndian.Uint64(body[8:])
	n := binary.LittleEndian.Uint64(body[16:])
	d.Reset(body[24:])
	st := inventory.NewState()
	for i := uint64(0); i < n; i++ {
		var op inventory.Op
		op.Kind = inventory.KindStock
		var err error
		if op.Key.SKU, err = d.String(); err == nil {
			if op.Key.Warehouse, err = d.String(); err == nil {
				if op.Key.Condition, err = d.String(); err == nil {
					if op.Key.Source, err = d.String(); err == nil {
						if op.N, err = d.Int62(); err == nil {
							op.Price, err = d.Int62()
						}
					}
				}
			}
		}
		if err != nil {
			return 0, nil, corrupt(24+d.Pos(), fmt.Sprintf("row %d: %v", i, err))
		}
		if _, dup := st.Row(op.Key); dup {
			return 0, nil, corrupt(24+d.Pos(), fmt.Sprintf("row %v appears twice", op.Key))
		}
		if res := st.Apply(&op, nil); res.Code != inventory.CodeOK {
			return 0, nil, corrupt(24+d.Pos(), fmt.Sprintf("row %v does not load: %s %s", op.Key, res.Code, res.Detail))
		}
	}
	if version >= 2 {
		count, err := d.Uvarint()
		if err != nil {
			return 0, nil, corrupt(24+d.Pos(), fmt.Sprintf("section count: %v", err))
		}
		// Sections are read by offset into body: each is handed to the
		// state machine whole.
		off := 24 + d.Pos()
		for i := uint64(0); i < count; i++ {
			if off >= len(body) {
				return 0, nil, corrupt(off, fmt.Sprintf("section %d cut short", i))
			}
			tag := body[off]
			size, w := binary.Uvarint(body[off+1:])
			if w <= 0 || size > uint64(len(body)-off-1-w) {
				return 0, nil, corrupt(off, fmt.Sprintf("section %d (tag %d): bad length", i, tag))
			}
			start := off + 1 + w
			if keep != nil && !keep(tag) {
				off = start + int(size)
				continue
			}
			if err := st.LoadSection(inventory.Section{Tag: tag, Bytes: body[start : start+int(size)]}); err != nil {
				return 0, nil, corrupt(off, fmt.Sprintf("section %d: %v", tag, err))
			}
			off = start + int(size)
		}
		if off != len(body) {
			return 0, nil, corrupt(off, "bytes after the last section")
		}
		return lsn, st, nil
	}
	if !d.Done() {
		return 0, nil, corrupt(24+d.Pos(), "bytes after the last row")
	}
	return lsn, st, nil
}

// writeSnapshot writes a snapshot durably: a temporary file, synced, renamed
// into place, and the directory synced.
func writeSnapshot(fs vfs.FS, dir string, snap *Snapshot) error {
	final := path.Join(dir, snapshotName(snap.LSN))
	if err := vfs.WriteFileAtomic(fs, final, encodeSnapshot(snap)); err != nil {
		return fmt.Errorf("journal: snapshot %s: %w", final, err)
	}
	return nil
}

// writeSnapshotInPlace is writeSnapshot broken (BrokenSnapshotInPlace): the
// file is created under its final name and written there.
func writeSnapshotInPlace(fs vfs.FS, dir string, snap *Snapshot) error {
	final := path.Join(dir, snapshotName(snap.LSN))
	f, err := fs.Create(final)
	if err != nil {
		return fmt.Errorf("journal: snapshot %s: %w", final, err)
	}
	_, err = f.Write(encodeSnapshot(snap))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("journal: snapshot %s: %w", final, err)
	}
	return nil
}
