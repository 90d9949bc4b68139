package inventory

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// keyTable remembers, for each idempotency key, a fingerprint of the request
// it came with and the first reply, for the retention window.
//
// Layout, chosen for memory: entries are appended to 1 MiB chunks in time
// order (stamps never decrease), and a map from the key's 64-bit hash to
// the entry's position finds them:
//
//	stamp i64 | fingerprint u64 | key length u8 | key | reply length uvarint | reply
//
// A Go map[string]struct{...} holding the reply as a Result costs several
// hundred bytes a key; this costs the map slot (~16 bytes, ~26 with the
// map's load factor), 18 bytes of header, and the key and reply bytes.
// Two live keys whose hashes collide are told apart by the key bytes in the
// entry; the second goes to a small overflow map keyed by the string.
// Dropping expired keys drops whole chunks, oldest first: the entries of a
// chunk are all older than its last one.
type keyTable struct {
	index    map[uint64]keyRef
	overflow map[string]keyRef
	chunks   []keyChunk
	firstSeq uint32 // sequence number of chunks[0]
}

// keyRef is a chunk sequence number (high 32 bits) and an offset.
type keyRef uint64

type keyChunk struct {
	buf  []byte
	last int64 // stamp of the last entry
}

const keyChunkBytes = 1 << 20

type keyEntry struct {
	stamp       int64
	fingerprint uint64
	key         []byte
	reply       []byte
	size        int
}

func newKeyTable() keyTable {
	return keyTable{index: make(map[uint64]keyRef), overflow: make(map[string]keyRef)}
}

func hashKey(key string) uint64 { return fnvString(fnvOffset, key) }

func (t *keyTable) entry(ref keyRef) keyEntry {
	c := &t.chunks[uint32(ref>>32)-t.firstSeq]
	return parseKeyEntry(c.buf[uint32(ref):])
}

func parseKeyEntry(b []byte) keyEntry {
	e := keyEntry{stamp: int64(binary.LittleEndian.Uint64(b)), fingerprint: binary.LittleEndian.Uint64(b[8:])}
	n := int(b[16])
	e.key = b[17 : 17+n]
	rl, w := binary.Uvarint(b[17+n:])
	start := 17 + n + w
	e.reply = b[start : start+int(rl)]
	e.size = start + int(rl)
	return e
}

// lookup returns the entry of key, if it is remembered.
func (t *keyTable) lookup(key string) (keyEntry, bool) {
	if ref, ok := t.index[hashKey(key)]; ok {
		if e := t.entry(ref); string(e.key) == key {
			return e, true
		}
	}
	if ref, ok := t.overflow[key]; ok {
		return t.entry(ref), true
	}
	return keyEntry{}, false
}

// insert remembers key. A key already present (past its window) is
// replaced.
func (t *keyTable) insert(key string, fingerprint uint64, reply []byte, stamp int64) {
	size := 17 + len(key) + binary.MaxVarintLen64 + len(reply)
	if len(t.chunks) == 0 || len(t.chunks[len(t.chunks)-1].buf)+size > cap(t.chunks[len(t.chunks)-1].buf) {
		t.chunks = append(t.chunks, keyChunk{buf: make([]byte, 0, max(keyChunkBytes, size))})
	}
	c := &t.chunks[len(t.chunks)-1]
	ref := keyRef(uint64(t.firstSeq+uint32(len(t.chunks)-1))<<32 | uint64(len(c.buf)))
	c.buf = binary.LittleEndian.AppendUint64(c.buf, uint64(stamp))
	c.buf = binary.LittleEndian.AppendUint64(c.buf, fingerprint)
	c.buf = append(c.buf, byte(len(key)))
	c.buf = append(c.buf, key...)
	c.buf = binary.AppendUvarint(c.buf, uint64(len(reply)))
	c.buf = append(c.buf, reply...)
	c.last = stamp
	h := hashKey(key)
	if old, ok := t.index[h]; ok && string(t.entry(old).key) != key {
		t.overflow[key] = ref
		return
	}
	t.index[h] = ref
	delete(t.overflow, key)
}

// collect drops the oldest chunk if every entry in it is older than the
// window; it returns whether it dropped one. Answers never depend on it.
// The chunk being appended to stays unless all is set (see CollectKeys).
func (t *keyTable) collect(now, retention int64, all bool) bool {
	if len(t.chunks) == 0 || (len(t.chunks) < 2 && !all) || t.chunks[0].last+retention > now {
		return false
	}
	c := t.chunks[0]
	for off := 0; off < len(c.buf); {
		e := parseKeyEntry(c.buf[off:])
		ref := keyRef(uint64(t.firstSeq)<<32 | uint64(off))
		if t.index[hashKey(string(e.key))] == ref {
			delete(t.index, hashKey(string(e.key)))
		} else if t.overflow[string(e.key)] == ref {
			delete(t.overflow, string(e.key))
		}
		off += e.size
	}
	t.chunks[0] = keyChunk{}
	t.chunks = t.chunks[1:]
	t.firstSeq++
	return true
}

// len returns the number of keys remembered (some may be past the window).
func (t *keyTable) len() int { return len(t.index) + len(t.overflow) }

// KeysKept returns the idempotency keys the state holds in memory: those
// within the retention window and those past it that Collect has not
// dropped yet (it drops whole chunks, oldest first). What the engine
// bounds (engine.Config.KeysMax): each costs memory until it is dropped.
func (s *State) KeysKept() int { return s.keys.len() }

// CollectKeys drops, oldest first, every chunk of idempotency keys whose
// keys are all past the retention window, the chunk still being appended
// to included, which Collect leaves. The engine calls it when the keys
// kept reach its limit (engine.Config.KeysMax) and a new key would be
// refused: a table whose keys all sit in one chunk (a limit smaller than
// a chunk holds, about 20,000 short keys) would otherwise never drain.
// Every chunk, not only the oldest: replay never collects, so a restarted
// engine holds every key its journal holds, many chunks past the window,
// and dropping one a call refused new keys when none kept was within it.
// Like Collect, no answer depends on it.
func (s *State) CollectKeys() {
	for s.keys.collect(s.now, s.retention, true) {
	}
}

// KeyKept reports whether a request with key would be answered from it (a
// repeat, or a mismatch) rather than bind it anew: the key is kept and
// within the retention window at the state's time.
func (s *State) KeyKept(key string) bool {
	e, ok := s.keys.lookup(key)
	return ok && e.stamp+s.retention > s.now
}

// bytes returns the bytes the chunks hold.
func (t *keyTable) bytes() int {
	n := 0
	for _, c := range t.chunks {
		n += cap(c.buf)
	}
	return n
}

// appendLive appends every entry that lookup would find, oldest first, in
// the entry layout: what a snapshot keeps.
func (t *keyTable) appendLive(dst []byte) []byte {
	for i, c := range t.chunks {
		for off := 0; off < len(c.buf); {
			e := parseKeyEntry(c.buf[off:])
			ref := keyRef(uint64(t.firstSeq+uint32(i))<<32 | uint64(off))
			if t.index[hashKey(string(e.key))] == ref || t.overflow[string(e.key)] == ref {
				dst = append(dst, c.buf[off:off+e.size]...)
			}
			off += e.size
		}
	}
	return dst
}

// frozenKeys is the key table's entries as they were at a cut: the chunk
// list copied (each chunk's bytes up to its length then). Entries are
// append-only and a chunk is dropped whole from the live list, never
// changed, so the copy stays valid while the writer goes on.
type frozenKeys struct {
	chunks []keyChunk
}

func (t *keyTable) freeze() frozenKeys { return frozenKeys{chunks: slices.Clone(t.chunks)} }

// appendAll appends every entry of the frozen chunks, oldest first. Unlike
// appendLive it cannot ask the index which entries are current, so an
// entry replaced by a later one for the same key (a key reused past its
// window, before its chunk was dropped) is written too: load inserts them
// in order, the later replaces the earlier, and the keys remembered are
// the same.
func (k frozenKeys) appendAll(dst []byte) []byte {
	for _, c := range k.chunks {
		dst = append(dst, c.buf...)
	}
	return dst
}

// load inserts the entries appendLive wrote.
func (t *keyTable) load(b []byte) error {
	for off := 0; off < len(b); {
		if len(b)-off < 18 || len(b)-off < 17+int(b[off+16])+1 {
			return fmt.Errorf("key entry at %d cut short", off)
		}
		n := int(b[off+16])
		rl, w := binary.Uvarint(b[off+17+n:])
		if w <= 0 || uint64(len(b)-off-17-n-w) < rl {
			return fmt.Errorf("key entry at %d cut short", off)
		}
		e := parseKeyEntry(b[off:])
		if d := CheckID(string(e.key)); d != "" {
			return fmt.Errorf("key entry at %d: key %s", off, d)
		}
		t.insert(string(e.key), e.fingerprint, e.reply, e.stamp)
		off += e.size
	}
	return nil
}

// Reply encoding: the outcome a key remembers.
//
//	code u8 | flags u8 | [count] [price] [available] [short line] [expires-at]
//	| [lines: n, (warehouse, count)...] | [allocations: n, (row key, count)...]
const (
	replyCount = 1 << iota
	replyPrice
	replyAvailable
	replyShortLine
	replyExpiresAt
	replyLines
	replyAllocations
)

func appendReply(dst []byte, res *Result) []byte {
	var flags byte
	set := func(cond bool, f byte) {
		if cond {
			flags |= f
		}
	}
	set(res.Count != 0, replyCount)
	set(res.Price != 0, replyPrice)
	set(res.Available != 0, replyAvailable)
	set(res.ShortLine != 0, replyShortLine)
	set(res.ExpiresAt != 0, replyExpiresAt)
	set(res.Code == CodeOK && len(res.Lines) > 0, replyLines)
	set(len(res.Allocations) > 0, replyAllocations)
	dst = append(dst, byte(res.Code), flags)
	for _, f := range []struct {
		flag byte
		v    int64
	}{{replyCount, res.Count}, {replyPrice, res.Price}, {replyAvailable, res.Available}, {replyShortLine, int64(res.ShortLine)}, {replyExpiresAt, res.ExpiresAt}} {
		if flags&f.flag != 0 {
			dst = binary.AppendUvarint(dst, uint64(f.v))
		}
	}
	if flags&replyLines != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(res.Lines)))
		for _, l := range res.Lines {
			dst = AppendString(dst, l.Warehouse)
			dst = binary.AppendUvarint(dst, uint64(l.Count))
		}
	}
	if flags&replyAllocations != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(res.Allocations)))
		for _, a := range res.Allocations {
			dst = appendRowKey(dst, a.Row)
			dst = binary.AppendUvarint(dst, uint64(a.Count))
		}
	}
	return dst
}

// decodeReply rebuilds a remembered reply; lines is the buffer for a
// capture's lines.
func decodeReply(b []byte, lines []Line) (Result, error) {
	var res Result
	d := Decoder{buf: b, intern: nil}
	code, err := d.Byte()
	if err != nil {
		return res, err
	}
	flags, err := d.Byte()
	if err != nil {
		return res, err
	}
	res.Code = Code(code)
	read := func(flag byte) (int64, error) {
		if flags&flag == 0 {
			return 0, nil
		}
		v, err := d.Uvarint()
		return int64(v), err
	}
	var short int64
	for _, p := range []struct {
		flag byte
		v    *int64
	}{{replyCount, &res.Count}, {replyPrice, &res.Price}, {replyAvailable, &res.Available}, {replyShortLine, &short}, {replyExpiresAt, &res.ExpiresAt}} {
		if *p.v, err = read(p.flag); err != nil {
			return res, err
		}
	}
	res.ShortLine = int(short)
	if flags&replyLines != 0 {
		n, err := d.Uvarint()
		if err != nil {
			return res, err
		}
		lines = lines[:0]
		for i := uint64(0); i < n; i++ {
			var l Line
			if l.Warehouse, err = d.StringMax(IDBytesMax); err != nil {
				return res, err
			}
			if l.Count, err = d.Int62(); err != nil {
				return res, err
			}
			lines = append(lines, l)
		}
		res.Lines = lines
	}
	if flags&replyAllocations != 0 {
		n, err := d.Uvarint()
		if err != nil {
			return res, err
		}
		for i := uint64(0); i < n; i++ {
			var a Allocation
			if err := d.strings(&a.Row.SKU, &a.Row.Warehouse, &a.Row.Condition, &a.Row.Source); err != nil {
				return res, err
			}
			if a.Count, err = d.Int62(); err != nil {
				return res, err
			}
			res.Allocations = append(res.Allocations, a)
		}
	}
	return res, nil
}
