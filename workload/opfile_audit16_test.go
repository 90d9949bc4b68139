package workload

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Read's errors name what was wrong: a header count past its bound names
// the bound Validate applies (not the parser's internal 2^40), and a number
// of twenty digits is out of range, not "not a decimal number".
func TestAudit16ReadNamesTheRealRange(t *testing.T) {
	for _, tc := range []struct{ name, old, new, want, notWant string }{
		{"rows far past RowsMax", "rows=2", "rows=2000000000000", "16777216", "1099511627776"},
		{"ops far past OpsMax", "ops=2", "ops=2000000000000", "268435456", "1099511627776"},
		{"warehouses far past the max", "warehouses=2", "warehouses=99999999999999", "99", "1099511627776"},
		{"twenty-digit quantity", "supplier\t2\n", "supplier\t99999999999999999999\n", "out of range", "without sign"},
		{"twenty-digit count", "\t3\t400", "\t99999999999999999999\t400", "out of range", "without sign"},
		{"seed past 2^64", "seed=7", "seed=99999999999999999999", "out of range", "without sign"},
	} {
		in := strings.Replace(smallFile, tc.old, tc.new, 1)
		if in == smallFile {
			t.Fatalf("%s: the replacement changed nothing", tc.name)
		}
		_, err := Read(strings.NewReader(in))
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.notWant) {
			t.Errorf("%s: got %v, want an ErrFormat saying %q and not %q", tc.name, err, tc.want, tc.notWant)
		}
	}
}

// The header's name labels the run in the results JSON and the report.
// checkName refused ASCII controls but let through bytes that are not
// UTF-8 (which encoding/json silently turns into U+FFFD, so the results
// name a workload no op file has) and the C1 controls (U+0085 is a line
// break to many readers).
func TestAudit16NameIsPrintableUTF8(t *testing.T) {
	for _, name := range []string{"a\xffb", "a\u0085b", "\xc3"} {
		p, err := Preset("hot")
		if err != nil {
			t.Fatal(err)
		}
		p.Name = name
		if err := p.Validate(); err == nil {
			t.Errorf("Validate accepted the name %q", name)
		}
		in := strings.Replace(smallFile, "name=t", "name="+name, 1)
		if _, err := Read(strings.NewReader(in)); err == nil || !errors.Is(err, ErrFormat) {
			t.Errorf("Read of a header named %q: %v, want an ErrFormat", name, err)
		}
	}
	// What a name may hold: any printable UTF-8 without spaces or '='.
	p, _ := Preset("hot")
	p.Name = "réassort-été"
	if err := p.Validate(); err != nil {
		t.Errorf("Validate refused a printable UTF-8 name: %v", err)
	}
}

// Write checked only the header, so a workload built in code (not by
// Generate or Read) could be written to a file Read refuses, or that reads
// back as other ops: the canonical-file promise is that whatever Write
// writes reads back equal. Now Write refuses such a workload, naming the
// row or op.
func TestAudit16WriteWritesOnlyWhatReadsBack(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		change     func(w *Workload)
	}{
		{"zero quantity", "op 1", func(w *Workload) { w.Ops[0].N = 0 }},
		{"quantity past the max", "op 2", func(w *Workload) { w.Ops[1].N = 1 << 31 }},
		{"capture naming a warehouse", "op 1", func(w *Workload) { w.Ops[0].Key.Warehouse = "w1" }},
		{"tab in a sku", "op 2", func(w *Workload) { w.Ops[1].Key.SKU = "a\tb" }},
		{"empty condition", "op 1", func(w *Workload) { w.Ops[0].Key.Condition = "" }},
		{"negative count", "row 1", func(w *Workload) { w.Initial[0].Count = -1 }},
		{"price past the max", "row 2", func(w *Workload) { w.Initial[1].Price = 1 << 62 }},
		{"newline in a warehouse", "row 2", func(w *Workload) { w.Initial[1].Key.Warehouse = "w\n2" }},
	} {
		w, err := Read(strings.NewReader(smallFile))
		if err != nil {
			t.Fatal(err)
		}
		tc.change(w)
		var b strings.Builder
		err = w.Write(&b)
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: Write: %v, want %s named", tc.name, err, tc.want)
			}
			continue
		}
		back, err := Read(strings.NewReader(b.String()))
		if err != nil {
			t.Errorf("%s: Write wrote a file Read refuses: %v", tc.name, err)
			continue
		}
		if !slices.Equal(back.Initial, w.Initial) || !slices.Equal(back.Ops, w.Ops) {
			t.Errorf("%s: Write wrote a file that reads back as another workload", tc.name)
		}
	}
}

// A file whose header announces more rows than it stocks reached its first
// op while reading rows, and Read said "stock line has 5 fields, want 7":
// the line is a capture, and what was wrong is the count of rows.
func TestAudit16ReadSaysAnOpCameWhereARowWasDue(t *testing.T) {
	for _, tc := range []struct{ name, old, new string }{
		{"capture", "rows=2", "rows=3"},
		{"release", "stock\tsku-000001\tw2\tnew\tsupplier\t0\t500\ncapture\tsku-000001\tnew\tsupplier\t2\n", "stock\tsku-000001\tw2\tnew\tsupplier\t0\t500\n"},
	} {
		in := strings.Replace(smallFile, tc.old, tc.new, 1)
		in = strings.Replace(in, "warehouses=2", "warehouses=3", 1) // room for 3 rows
		if tc.name == "release" {
			in = strings.Replace(in, "ops=2", "ops=1", 1)
			in = strings.Replace(in, "rows=2", "rows=3", 1)
		}
		_, err := Read(strings.NewReader(in))
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "2 of 3 rows") || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s where a row was due: got %v, want the %s line and the 2 of 3 rows read named", tc.name, err, tc.name)
		}
	}
}
