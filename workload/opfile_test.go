package workload

import (
	"bytes"
	"errors"

	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t testing.TB, w *Workload) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := w.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestOpFileRoundTrip(t *testing.T) {
	for _, name := range PresetNames {
		w := generate(t, preset(t, name, 10_000))
		data := write(t, w)
		got, err := Read(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Params != w.Params || !slices.Equal(got.Initial, w.Initial) || !slices.Equal(got.Ops, w.Ops) {
			t.Fatalf("%s: read back a different workload", name)
		}
		if !bytes.Equal(write(t, got), data) {
			t.Fatalf("%s: rewrite differs", name)
		}
	}
}

func TestOpFileOnDisk(t *testing.T) {
	w := generate(t, preset(t, "hot", 1000))
	path := filepath.Join(t.TempDir(), "hot.ops")
	if err := WriteFile(path, w); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Ops, w.Ops) {
		t.Fatal("ops differ after a trip through a file")
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("reading a missing file gave no error")
	}
}

const smallFile = "allot-ops\tv1\tname=t\trows=2\tskus=1\twarehouses=2\tconditions=1\tsources=1\tops=2\tseed=7\n" +
	"stock\tsku-000001\tw1\tnew\tsupplier\t3\t400\n" +
	"stock\tsku-000001\tw2\tnew\tsupplier\t0\t500\n" +
	"capture\tsku-000001\tnew\tsupplier\t2\n" +
	"release\tsku-000001\tw2\tnew\tsupplier\t1\n"

func TestReadRejects(t *testing.T) {
	if _, err := Read(strings.NewReader(smallFile)); err != nil {
		t.Fatalf("the valid base file: %v", err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"not an op file", "allot-ops", "allot-opz", "not an allot op file"},
		{"other version", "\tv1\t", "\tv2\t", "version"},
		{"header field missing", "\tseed=7", "", "header has"},
		{"header field renamed", "skus=1", "sku=1", "want skus="},
		{"bad params", "conditions=1", "conditions=9", "conditions must be"},
		{"truncated", "release\tsku-000001\tw2\tnew\tsupplier\t1\n", "", "unexpected end of file"},
		{"no final newline", "supplier\t1\n", "supplier\t1", "no newline"},
		{"trailing data", "supplier\t1\n", "supplier\t1\nrelease\n", "data after"},
		{"leading zero", "\t3\t400", "\t03\t400", "leading zeros"},
		{"sign", "\t3\t400", "\t+3\t400", "leading zeros"},
		{"zero quantity", "supplier\t2\n", "supplier\t0\n", "out of range"},
		{"quantity too large", "supplier\t2\n", "supplier\t2147483648\n", "out of range"},
		{"control char in id", "sku-000001\tw2\tnew\tsupplier\t0", "sku-000001\tw\x012\tnew\tsupplier\t0", "control character"},
		{"empty id", "capture\tsku-000001", "capture\t", "is empty"},
		{"long id", "\tw1\t", "\t" + strings.Repeat("w", 65) + "\t", "longer than 64"},
		{"stocked twice", "\tw2\tnew\tsupplier\t0\t500", "\tw1\tnew\tsupplier\t0\t500", "stocked twice"},
		{"extra field", "supplier\t2\n", "supplier\t2\t9\n", "more than"},
		{"missing field", "\tsupplier\t3\t400\n", "\t3\t400\n", "fields, want"},
		{"unknown op", "capture\t", "reserve\t", "want a capture or release"},
		{"carriage return", "supplier\t1\n", "supplier\t1\r\n", "not a decimal"},
	} {
		in := strings.Replace(smallFile, tc.old, tc.new, 1)
		if in == smallFile {
			t.Fatalf("%s: the replacement changed nothing", tc.name)
		}
		_, err := Read(strings.NewReader(in))
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an ErrFormat saying %q", tc.name, err, tc.want)
		}
	}
}

func TestVerifyCatchesAnImpossibleOp(t *testing.T) {
	in := strings.Replace(smallFile, "capture\tsku-000001\tnew\tsupplier\t2", "capture\tsku-000001\tnew\tsupplier\t4", 1)
	w, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(w); err == nil || !strings.Contains(err.Error(), "op 1") {
		t.Fatalf("Verify: %v, want the first op named", err)
	}
}

// BenchmarkReadOps reads the full seed preset's op file (1,000,000 ops).
func BenchmarkReadOps(b *testing.B) {
	w := generate(b, preset(b, "seed", 0))
	data := write(b, w)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(w.Ops))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkGenerate generates the full seed preset.
func BenchmarkGenerate(b *testing.B) {
	p := preset(b, "seed", 0)
	for b.Loop() {
		if _, err := Generate(p); err != nil {
			b.Fatal(err)
		}
	}
}
