package catalog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestSnapshotRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cat := New()
	for i := range 500 {
		r := Record{SKU: fmt.Sprint("sku", i), Title: randomText(rng, 10), Brand: randomText(rng, 3)}
		for j := range rng.IntN(4) {
			r.Attributes = append(r.Attributes, Attribute{fmt.Sprint("a", j), randomText(rng, 3)})
		}
		if d := cat.Set(r); d != "" {
			t.Fatal(d)
		}
	}
	buf := cat.AppendSnapshot([]byte("head"))
	got, rest, err := DecodeSnapshot(append(buf[4:], "tail"...))
	if err != nil || string(rest) != "tail" {
		t.Fatalf("DecodeSnapshot: %v, rest %q", err, rest)
	}
	if got.Len() != cat.Len() {
		t.Fatalf("%d records, want %d", got.Len(), cat.Len())
	}
	cat.Each(func(r *Record) bool {
		g, ok := got.Get(r.SKU)
		if !ok || !g.Equal(r) {
			t.Fatalf("record %s: %+v, want %+v", r.SKU, g, *r)
		}
		return true
	})
	// Every truncation is corruption, never a panic or a short catalog.
	for n := 0; n < len(buf)-4; n += 1 + n/100 {
		if _, _, err := DecodeSnapshot(buf[4 : 4+n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d: %v", n, err)
		}
	}
}

func TestDecodeRecordRejects(t *testing.T) {
	dup := AppendRecord(nil, &Record{SKU: "s", Title: "t", Brand: "b"})
	twice := append([]byte{2}, append(dup, dup...)...)
	if _, _, err := DecodeSnapshot(twice); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a repeated sku: %v", err)
	}
	bad := AppendRecord(nil, &Record{SKU: "s", Title: "t\x00", Brand: "b"})
	if _, _, err := DecodeRecord(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a control character: %v", err)
	}
	unsorted := AppendRecord(nil, &Record{SKU: "s", Title: "t", Brand: "b", Attributes: []Attribute{{"b", ""}, {"a", ""}}})
	if _, _, err := DecodeRecord(unsorted); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unsorted attributes: %v", err)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	cat := New()
	cat.Set(Record{SKU: "s1", Title: "Straße", Brand: "ACME", Attributes: []Attribute{{"size", "M"}}})
	cat.Set(Record{SKU: "s2", Title: "σίσυφος", Brand: "b"})
	f.Add(cat.AppendSnapshot(nil))
	f.Add([]byte{0})
	f.Add([]byte{1, 1, 's', 1, 't', 1, 'b', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, rest, err := DecodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("an error that is not ErrCorrupt: %v", err)
			}
			return
		}
		// What decodes re-encodes to the same bytes (index order is the
		// canonical order) when the input was in that order.
		again := c.AppendSnapshot(nil)
		c2, _, err := DecodeSnapshot(again)
		if err != nil || c2.Len() != c.Len() {
			t.Fatalf("re-decoding: %v", err)
		}
		if string(c2.AppendSnapshot(nil)) != string(again) {
			t.Fatal("encoding is not stable")
		}
		_ = rest
	})
}
