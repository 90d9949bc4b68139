package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"allot/inventory"
)

// The op file is text, one record per line, fields separated by a tab (a
// control character, so never inside an identifier):
//
//	allot-ops	v1	name=seed	rows=1000	skus=1000	warehouses=3	conditions=3	sources=3	ops=1000000	seed=1
//	stock	<sku>	<warehouse>	<condition>	<source>	<count>	<price>     (rows= lines)
//	capture	<sku>	<condition>	<source>	<n>                             (ops= lines, mixed
//	release	<sku>	<warehouse>	<condition>	<source>	<n>             with releases)
//
// The header carries the params so that a replay is labelled like the run
// that generated it, and the counts so that a truncated file is an error
// rather than a shorter run. Text rather than binary: a file can be read,
// diffed and cut with standard tools, and reading a million ops still takes
// a fraction of a second.
const (
	fileMagic   = "allot-ops"
	fileVersion = "v1"
	// lineBytesMax bounds one line: 7 fields of at most 64 bytes plus
	// numbers; anything longer is not an op file.
	lineBytesMax = 1024
)

// ErrFormat is wrapped by every error Read returns for a malformed file.
var ErrFormat = errors.New("workload: malformed op file")

// Write writes w as an op file.
func (w *Workload) Write(out io.Writer) error {
	// The header states what the file holds; checking it here keeps Write
	// from producing a file Read would refuse.
	p := w.Params
	p.Rows, p.Ops = len(w.Initial), len(w.Ops)
	if err := p.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(out, 1<<16)
	fmt.Fprintf(bw, "%s\t%s\tname=%s\trows=%d\tskus=%d\twarehouses=%d\tconditions=%d\tsources=%d\tops=%d\tseed=%d\n",
		fileMagic, fileVersion, p.Name, p.Rows, p.SKUs, p.Warehouses, p.Conditions, p.Sources, p.Ops, p.Seed)
	line := make([]byte, 0, lineBytesMax)
	for i := range w.Initial {
		r := &w.Initial[i]
		if d := checkRow(r); d != "" {
			return fmt.Errorf("workload: row %d %v: %s", i+1, r.Key, d)
		}
		line = append(line[:0], "stock\t"...)
		line = appendRowKey(line, r.Key)
		line = append(line, '\t')
		line = strconv.AppendInt(line, r.Count, 10)
		line = append(line, '\t')
		line = strconv.AppendInt(line, r.Price, 10)
		line = append(line, '\n')
		bw.Write(line)
	}
	for i := range w.Ops {
		op := &w.Ops[i]
		if d := checkOp(op); d != "" {
			return fmt.Errorf("workload: op %d %v: %s", i+1, op.Key, d)
		}
		switch op.Kind {
		case inventory.KindCapture:
			line = append(line[:0], "capture\t"...)
			line = append(line, op.Key.SKU...)
			line = append(line, '\t')
			line = append(line, op.Key.Condition...)
			line = append(line, '\t')
			line = append(line, op.Key.Source...)
		case inventory.KindRelease:
			line = append(line[:0], "release\t"...)
			line = appendRowKey(line, op.Key)
		default:
			return fmt.Errorf("workload: op %d has kind %v, neither capture nor release", i+1, op.Kind)
		}
		line = append(line, '\t')
		line = strconv.AppendInt(line, op.N, 10)
		line = append(line, '\n')
		bw.Write(line)
	}
	return bw.Flush()
}

// checkRow and checkOp refuse, in Write, what Read would refuse or read
// back otherwise (duplicate rows aside: Read, NewModel and bench.NewPlan
// catch those); "" when the row or op is fine.
func checkRow(r *inventory.Row) string {
	if d := inventory.CheckRowKey(r.Key); d != "" {
		return d
	}
	if d := inventory.CheckCount(r.Count); d != "" {
		return d
	}
	return inventory.CheckPrice(r.Price)
}

func checkOp(op *Op) string {
	if d := inventory.CheckQuantity(op.N); d != "" {
		return d
	}
	switch op.Kind {
	case inventory.KindCapture:
		if op.Key.Warehouse != "" {
			return "a capture names a group, not a warehouse"
		}
		return inventory.CheckGroupKey(op.Group())
	case inventory.KindRelease:
		return inventory.CheckRowKey(op.Key)
	}
	return "" // the kind is refused below, by name
}

func appendRowKey(b []byte, k inventory.RowKey) []byte {
	b = append(b, k.SKU...)
	b = append(b, '\t')
	b = append(b, k.Warehouse...)
	b = append(b, '\t')
	b = append(b, k.Condition...)
	b = append(b, '\t')
	return append(b, k.Source...)
}

// WriteFile writes w to path, replacing it.
func WriteFile(path string, w *Workload) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	if err := w.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("workload: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("workload: writing %s: %w", path, err)
	}
	return nil
}

// ReadFile reads an op file.
func ReadFile(path string) (*Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	size := int64(0)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	w, err := read(f, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// reader holds the state of one Read.
type reader struct {
	in     *bufio.Reader
	lineNo int
	fields [8][]byte
	// intern shares one string per distinct identifier: a million ops name
	// a few thousand ids, and the map lookup with a []byte key does not
	// allocate.
	intern map[string]string
}

// Read parses an op file. It accepts exactly what Write produces, so
// anything it accepts writes back byte for byte. It checks the syntax,
// identifiers and number ranges, the counts announced in the header and
// that no row is stocked twice; it does not check that the ops succeed (see
// Verify).
func Read(in io.Reader) (*Workload, error) {
	size := int64(0)
	if l, ok := in.(interface{ Len() int }); ok {
		size = int64(l.Len())
	}
	return read(in, size)
}

// read parses an op file of about size bytes (0 if unknown). The size only
// bounds how much is allocated up front: a header cannot make a short file
// allocate for a hundred million ops.
func read(in io.Reader, size int64) (*Workload, error) {
	// The shortest line is about 20 bytes.
	capMax := int(max(size/20, 4096))
	r := &reader{in: bufio.NewReaderSize(in, 1<<16), intern: make(map[string]string)}
	line, err := r.line()
	if err != nil {
		return nil, err
	}
	p, err := r.header(line)
	if err != nil {
		return nil, err
	}
	w := &Workload{Params: p, Initial: make([]inventory.Row, 0, min(p.Rows, capMax)), Ops: make([]Op, 0, min(p.Ops, capMax))}
	seen := make(map[inventory.RowKey]struct{}, min(p.Rows, capMax))
	for len(w.Initial) < p.Rows {
		line, err := r.line()
		if err != nil {
			return nil, err
		}
		if !bytes.HasPrefix(line, []byte("stock\t")) {
			return nil, r.errorf("want a stock line (%d of %d rows read), got %.40q", len(w.Initial), p.Rows, line)
		}
		f, err := r.split(line, 7, "stock")
		if err != nil {
			return nil, err
		}
		k, err := r.rowKey(f[1:5])
		if err != nil {
			return nil, err
		}
		if _, dup := seen[k]; dup {
			return nil, r.errorf("row %v is stocked twice", k)
		}
		seen[k] = struct{}{}
		count, err := r.number(f[5], 0, inventory.CountMax, "count")
		if err != nil {
			return nil, err
		}
		price, err := r.number(f[6], 0, inventory.CountMax, "price")
		if err != nil {
			return nil, err
		}
		w.Initial = append(w.Initial, inventory.Row{Key: k, Count: count, Price: price})
	}
	for len(w.Ops) < p.Ops {
		line, err := r.line()
		if err != nil {
			return nil, err
		}
		var op Op
		switch {
		case bytes.HasPrefix(line, []byte("capture\t")):
			f, err := r.split(line, 5, "capture")
			if err != nil {
				return nil, err
			}
			if op.Key, err = r.groupKey(f[1:4]); err != nil {
				return nil, err
			}
			op.Kind = inventory.KindCapture
			if op.N, err = r.number(f[4], 1, inventory.QuantityMax, "quantity"); err != nil {
				return nil, err
			}
		case bytes.HasPrefix(line, []byte("release\t")):
			f, err := r.split(line, 6, "release")
			if err != nil {
				return nil, err
			}
			if op.Key, err = r.rowKey(f[1:5]); err != nil {
				return nil, err
			}
			op.Kind = inventory.KindRelease
			if op.N, err = r.number(f[5], 1, inventory.QuantityMax, "quantity"); err != nil {
				return nil, err
			}
		default:
			return nil, r.errorf("want a capture or release line (%d of %d ops read), got %.40q", len(w.Ops), p.Ops, line)
		}
		w.Ops = append(w.Ops, op)
	}
	if _, err := r.in.ReadByte(); err != io.EOF {
		if err != nil {
			return nil, fmt.Errorf("workload: reading op file: %w", err)
		}
		return nil, fmt.Errorf("%w: line %d: data after the %d ops the header announced", ErrFormat, r.lineNo+1, p.Ops)
	}
	return w, nil
}

func (r *reader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrFormat, r.lineNo, fmt.Sprintf(format, args...))
}

// line returns the next line without its newline. The slice is valid until
// the next call.
func (r *reader) line() ([]byte, error) {
	r.lineNo++
	line, err := r.in.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull || (err == nil && len(line) > lineBytesMax):
		return nil, r.errorf("line longer than %d bytes", lineBytesMax)
	case err == io.EOF && len(line) == 0:
		return nil, r.errorf("unexpected end of file (truncated?)")
	case err == io.EOF:
		return nil, r.errorf("last line has no newline (truncated?)")
	case err != nil:
		return nil, fmt.Errorf("workload: reading op file: %w", err)
	}
	return line[:len(line)-1], nil
}

// split cuts line at tabs into exactly n fields, the first being kind.
func (r *reader) split(line []byte, n int, kind string) ([][]byte, error) {
	f := r.fields[:0]
	for len(f) < n-1 {
		i := bytes.IndexByte(line, '\t')
		if i < 0 {
			return nil, r.errorf("%s line has %d fields, want %d", kind, len(f)+1, n)
		}
		f = append(f, line[:i])
		line = line[i+1:]
	}
	if bytes.IndexByte(line, '\t') >= 0 {
		return nil, r.errorf("%s line has more than %d fields", kind, n)
	}
	f = append(f, line)
	if string(f[0]) != kind {
		return nil, r.errorf("want a %s line, got %.40q", kind, f[0])
	}
	return f, nil
}

func (r *reader) id(b []byte, what string) (string, error) {
	if s, ok := r.intern[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if d := inventory.CheckID(s); d != "" {
		return "", r.errorf("%s %q %s", what, b, d)
	}
	r.intern[s] = s
	return s, nil
}

func (r *reader) rowKey(f [][]byte) (k inventory.RowKey, err error) {
	if k.SKU, err = r.id(f[0], "sku"); err != nil {
		return k, err
	}
	if k.Warehouse, err = r.id(f[1], "warehouse"); err != nil {
		return k, err
	}
	if k.Condition, err = r.id(f[2], "condition"); err != nil {
		return k, err
	}
	k.Source, err = r.id(f[3], "source")
	return k, err
}

func (r *reader) groupKey(f [][]byte) (k inventory.RowKey, err error) {
	if k.SKU, err = r.id(f[0], "sku"); err != nil {
		return k, err
	}
	if k.Condition, err = r.id(f[1], "condition"); err != nil {
		return k, err
	}
	k.Source, err = r.id(f[2], "source")
	return k, err
}

// number parses a canonical decimal (no sign, no leading zero) in
// [lo, hi].
func (r *reader) number(b []byte, lo, hi int64, what string) (int64, error) {
	if !canonicalDecimal(b) {
		return 0, r.errorf("%s %.40q is not a decimal number without sign or leading zeros", what, b)
	}
	if len(b) > 19 {
		// A canonical number of 20 digits or more is past any int64.
		return 0, r.errorf("%s %.40s is out of range %d..%d", what, b, lo, hi)
	}
	var n uint64
	for _, c := range b {
		n = n*10 + uint64(c-'0')
	}
	if n < uint64(lo) || n > uint64(hi) {
		return 0, r.errorf("%s %d is out of range %d..%d", what, n, lo, hi)
	}
	return int64(n), nil
}

// canonicalDecimal reports whether b is digits without a sign or a leading
// zero, whatever its size.
func canonicalDecimal(b []byte) bool {
	if len(b) == 0 || (len(b) > 1 && b[0] == '0') {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// headerMax bounds the header's counts as Validate does; a count past its
// bound is refused with the bound named before it is made an int.
var headerMax = map[string]int64{
	"rows": RowsMax, "skus": SKUsMax, "warehouses": WarehousesMax,
	"conditions": int64(len(conditionNames)), "sources": int64(len(sourceNames)), "ops": OpsMax,
}

// header parses the first line into params.
func (r *reader) header(line []byte) (Params, error) {
	f := bytes.Split(line, []byte{'\t'})
	if len(f) < 2 || string(f[0]) != fileMagic {
		return Params{}, r.errorf("not an allot op file (want a first line starting %q)", fileMagic+"\t"+fileVersion)
	}
	if string(f[1]) != fileVersion {
		return Params{}, r.errorf("op file version %.20q, this allot reads %s", f[1], fileVersion)
	}
	keys := []string{"name", "rows", "skus", "warehouses", "conditions", "sources", "ops", "seed"}
	if len(f) != 2+len(keys) {
		return Params{}, r.errorf("header has %d fields, want %d", len(f), 2+len(keys))
	}
	var p Params
	ints := []*int{&p.Rows, &p.SKUs, &p.Warehouses, &p.Conditions, &p.Sources, &p.Ops}
	for i, key := range keys {
		kv := f[2+i]
		value, ok := bytes.CutPrefix(kv, []byte(key+"="))
		if !ok {
			return Params{}, r.errorf("header field %d is %.40q, want %s=...", 3+i, kv, key)
		}
		switch key {
		case "name":
			p.Name = string(value)
			if d := checkName(p.Name); d != "" {
				return Params{}, r.errorf("name %.40q %s", value, d)
			}
		case "seed":
			if !canonicalDecimal(value) {
				return Params{}, r.errorf("seed %.40q is not a decimal number without sign or leading zeros", value)
			}
			s, err := strconv.ParseUint(string(value), 10, 64)
			if err != nil {
				return Params{}, r.errorf("seed %.40s is out of range 0..%d", value, uint64(math.MaxUint64))
			}
			p.Seed = s
		default:
			n, err := r.number(value, 0, math.MaxInt64, key)
			if err != nil {
				return Params{}, err
			}
			if n > headerMax[key] {
				// Validate's words, which it cannot say of a count
				// past an int.
				return Params{}, r.errorf("%s must be from 1 to %d, got %d", key, headerMax[key], n)
			}
			*ints[i-1] = int(n)
		}
	}
	if err := p.Validate(); err != nil {
		return Params{}, r.errorf("%v", err)
	}
	return p, nil
}
