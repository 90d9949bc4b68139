package workload

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// FuzzReadOps: Read never panics, refuses only with an ErrFormat, and
// whatever it accepts Verify can decide and writes back byte for byte and
// reads back equal.
func FuzzReadOps(f *testing.F) {
	f.Add([]byte(smallFile))
	f.Add([]byte("allot-ops\tv1\n"))
	f.Add([]byte(""))
	for _, name := range PresetNames {
		p, _ := Preset(name)
		p.Ops = 20
		if p.Rows > 50 {
			p.Rows = 50
		}
		w, err := Generate(p)
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		if err := w.Write(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := Read(bytes.NewReader(data))
		if err != nil {
			// A bytes.Reader cannot fail: every error is the file's.
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("Read: %v, not an ErrFormat", err)
			}
			return
		}
		// Verify decides whatever Read accepts, without panicking.
		Verify(w)
		var out bytes.Buffer
		if err := w.Write(&out); err != nil {
			t.Fatalf("Write of what Read accepted: %v", err)
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("rewrite differs:\n in %q\nout %q", data, out.Bytes())
		}
		again, err := Read(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if again.Params != w.Params || !slices.Equal(again.Initial, w.Initial) || !slices.Equal(again.Ops, w.Ops) {
			t.Fatal("re-read differs")
		}
	})
}
