package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/google/btree"
)

// ErrCorrupt is wrapped by every decoding error: the bytes are not what
// AppendRecord or AppendSnapshot wrote.
var ErrCorrupt = errors.New("catalog: corrupt record encoding")

// AppendRecord appends r's encoding to buf: the SKU, title and brand as
// uvarint-length-prefixed bytes, then the number of attributes (uvarint)
// and each name and value, prefixed the same way. The encoding holds no
// version: the journal frame or snapshot that carries it does.
func AppendRecord(buf []byte, r *Record) []byte {
	buf = appendString(buf, r.SKU)
	buf = appendString(buf, r.Title)
	buf = appendString(buf, r.Brand)
	buf = binary.AppendUvarint(buf, uint64(len(r.Attributes)))
	for _, a := range r.Attributes {
		buf = appendString(buf, a.Name)
		buf = appendString(buf, a.Value)
	}
	return buf
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// DecodeRecord decodes one record from the front of b and returns it with
// the bytes after it. The record is checked (Record.Check): a record that
// Set would refuse is corruption here.
func DecodeRecord(b []byte) (Record, []byte, error) {
	var r Record
	var err error
	if r.SKU, b, err = decodeString(b, SKUBytesMax); err != nil {
		return Record{}, nil, fmt.Errorf("%w: sku: %v", ErrCorrupt, err)
	}
	if r.Title, b, err = decodeString(b, TextBytesMax); err != nil {
		return Record{}, nil, fmt.Errorf("%w: title: %v", ErrCorrupt, err)
	}
	if r.Brand, b, err = decodeString(b, TextBytesMax); err != nil {
		return Record{}, nil, fmt.Errorf("%w: brand: %v", ErrCorrupt, err)
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > AttributesMax {
		return Record{}, nil, fmt.Errorf("%w: attribute count", ErrCorrupt)
	}
	b = b[k:]
	if n > 0 {
		r.Attributes = make([]Attribute, n)
	}
	for i := range r.Attributes {
		if r.Attributes[i].Name, b, err = decodeString(b, AttributeNameBytesMax); err != nil {
			return Record{}, nil, fmt.Errorf("%w: attribute name: %v", ErrCorrupt, err)
		}
		if r.Attributes[i].Value, b, err = decodeString(b, AttributeValueBytesMax); err != nil {
			return Record{}, nil, fmt.Errorf("%w: attribute value: %v", ErrCorrupt, err)
		}
	}
	if d := r.Check(); d != "" {
		return Record{}, nil, fmt.Errorf("%w: record %s", ErrCorrupt, d)
	}
	return r, b, nil
}

func decodeString(b []byte, max int) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return "", nil, errors.New("bad length")
	}
	if n > uint64(max) || n > uint64(len(b)-k) {
		return "", nil, fmt.Errorf("length %d out of range", n)
	}
	return string(b[k : k+int(n)]), b[k+int(n):], nil
}

// AppendSnapshot appends every record to buf, in index order, preceded by
// their number (uvarint).
func (c *Catalog) AppendSnapshot(buf []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(c.Len()))
	c.Each(func(r *Record) bool {
		buf = AppendRecord(buf, r)
		return true
	})
	return buf
}

// DecodeSnapshot decodes what AppendSnapshot wrote from the front of b into
// a new catalog and returns the bytes after it. A repeated SKU is
// corruption.
func DecodeSnapshot(b []byte) (*Catalog, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, nil, fmt.Errorf("%w: record count", ErrCorrupt)
	}
	b = b[k:]
	// Every record takes at least 4 bytes: a bound on n before any
	// allocation sized by it.
	if n > uint64(len(b))/4 {
		return nil, nil, fmt.Errorf("%w: record count %d larger than the data", ErrCorrupt, n)
	}
	c := New()
	for i := uint64(0); i < n; i++ {
		r, rest, err := DecodeRecord(b)
		if err != nil {
			return nil, nil, fmt.Errorf("record %d: %w", i, err)
		}
		if _, dup := c.lookup(r.SKU); dup {
			return nil, nil, fmt.Errorf("%w: sku %q appears twice", ErrCorrupt, r.SKU)
		}
		c.set(r)
		b = rest
	}
	return c, b, nil
}

// Frozen is a catalog's records as they were when Freeze was called. It
// may be read on another goroutine while the catalog changes: it holds a
// clone of the title index, which the B-tree shares copy on write (the
// catalog copies a node before its first change to it), and entries never
// change once indexed.
type Frozen struct {
	index *btree.BTreeG[indexKey]
}

// Freeze returns the records as they are now, in O(1).
func (c *Catalog) Freeze() *Frozen { return &Frozen{index: c.index.Clone()} }

// AppendSnapshot appends what Catalog.AppendSnapshot appended at the
// freeze.
func (f *Frozen) AppendSnapshot(buf []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(f.index.Len()))
	f.index.Ascend(func(k indexKey) bool {
		r := k.e.record()
		buf = AppendRecord(buf, &r)
		return true
	})
	return buf
}
