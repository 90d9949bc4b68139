package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path"

	"allot/inventory"
	"allot/vfs"
)

// A snapshot file:
//
//	"allotsn1" | LSN u64 | row count u64 | rows | crc32c u32 of all before it
//
// a row: sku, warehouse, condition, source (uvarint length + bytes each),
// count and price (uvarint).
const snapshotMagic = "allotsn1"

func snapshotName(lsn uint64) string { return fmt.Sprintf("snapshot-%020d.snap", lsn) }

func encodeSnapshot(lsn uint64, rows []inventory.Row) []byte {
	buf := make([]byte, 0, 24+len(rows)*40)
	buf = append(buf, snapshotMagic...)
	buf = binary.LittleEndian.AppendUint64(buf, lsn)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(rows)))
	for i := range rows {
		r := &rows[i]
		buf = appendString(buf, r.Key.SKU)
		buf = appendString(buf, r.Key.Warehouse)
		buf = appendString(buf, r.Key.Condition)
		buf = appendString(buf, r.Key.Source)
		buf = binary.AppendUvarint(buf, uint64(r.Count))
		buf = binary.AppendUvarint(buf, uint64(r.Price))
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// decodeSnapshot loads a snapshot into a fresh state.
func decodeSnapshot(name string, buf []byte, d *decoder) (uint64, *inventory.State, error) {
	corrupt := func(off int, reason string) error {
		return &CorruptionError{File: name, Offset: int64(off), Reason: reason}
	}
	if len(buf) < len(snapshotMagic)+20 || string(buf[:len(snapshotMagic)]) != snapshotMagic {
		return 0, nil, corrupt(0, "not a snapshot (bad magic or too short)")
	}
	body := buf[:len(buf)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(buf[len(buf)-4:]) {
		return 0, nil, corrupt(len(buf)-4, "snapshot checksum mismatch")
	}
	lsn := binary.LittleEndian.Uint64(body[8:])
	n := binary.LittleEndian.Uint64(body[16:])
	d.reset(body[24:])
	st := inventory.NewState()
	for i := uint64(0); i < n; i++ {
		var op inventory.Op
		op.Kind = inventory.KindStock
		var err error
		if op.Key.SKU, err = d.string(); err == nil {
			if op.Key.Warehouse, err = d.string(); err == nil {
				if op.Key.Condition, err = d.string(); err == nil {
					if op.Key.Source, err = d.string(); err == nil {
						if op.N, err = d.int62(); err == nil {
							op.Price, err = d.int62()
						}
					}
				}
			}
		}
		if err != nil {
			return 0, nil, corrupt(24+d.pos, fmt.Sprintf("row %d: %v", i, err))
		}
		if _, dup := st.Row(op.Key); dup {
			return 0, nil, corrupt(24+d.pos, fmt.Sprintf("row %v appears twice", op.Key))
		}
		if res := st.Apply(&op, nil); res.Code != inventory.CodeOK {
			return 0, nil, corrupt(24+d.pos, fmt.Sprintf("row %v does not load: %s %s", op.Key, res.Code, res.Detail))
		}
	}
	if d.pos != len(d.buf) {
		return 0, nil, corrupt(24+d.pos, "bytes after the last row")
	}
	return lsn, st, nil
}

// writeSnapshot writes a snapshot durably: a temporary file, synced, renamed
// into place, and the directory synced.
func writeSnapshot(fs vfs.FS, dir string, lsn uint64, rows []inventory.Row) error {
	final := path.Join(dir, snapshotName(lsn))
	tmp := final + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("journal: snapshot: %w", err)
	}
	_, err = f.Write(encodeSnapshot(lsn, rows))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, final)
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("journal: snapshot %s: %w", final, err)
	}
	return nil
}
