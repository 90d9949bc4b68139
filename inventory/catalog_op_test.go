package inventory

import (
	"reflect"
	"testing"

	"allot/catalog"
)

func TestCatalogOps(t *testing.T) {
	s := NewState()
	s.Apply(ptr(Stock(RowKey{"s1", "w1", "new", "own"}, 5, 100)), nil)
	s.Apply(ptr(Stock(RowKey{"s1", "w2", "used", "own"}, 2, 100)), nil)
	set := CatalogSet(catalog.Record{SKU: "s1", Title: "Größe Jacke", Brand: "Acme",
		Attributes: []catalog.Attribute{{Name: "size", Value: "L"}, {Name: "colour", Value: "red"}}})
	if res := s.Apply(&set, nil); res.Code != CodeOK || !res.Changed {
		t.Fatalf("set: %+v", res)
	}
	if res := s.Apply(ptr(CatalogSet(catalog.Record{SKU: "s2", Title: "x", Brand: "\x01"})), nil); res.Code != CodeInvalid || res.Detail != "brand contains a control character" {
		t.Fatalf("bad set: %+v", res)
	}
	res := s.Apply(ptr(CatalogGet("s1")), nil)
	if res.Code != CodeOK || res.Record.Title != "Größe Jacke" || res.Record.Attributes[0].Name != "colour" {
		t.Fatalf("get: %+v", res)
	}
	res = s.Apply(ptr(Search(catalog.Query{Prefix: "GRÖ"})), nil)
	if res.Code != CodeOK || len(res.Hits) != 1 || res.Hits[0] != (catalog.Result{SKU: "s1", Title: "Größe Jacke", Brand: "Acme", Available: 7}) {
		t.Fatalf("search: %+v", res)
	}
	if res := s.Apply(ptr(Search(catalog.Query{Prefix: "g", Limit: 1001})), nil); res.Code != CodeInvalid {
		t.Fatalf("bad search: %+v", res)
	}
	// The snapshot section and Clone carry the catalog.
	c := s.Clone()
	if !reflect.DeepEqual(c.CatalogRecords(), s.CatalogRecords()) || c.CatalogLen() != 1 {
		t.Fatal("Clone lost the catalog")
	}
	fresh := NewState()
	for _, sec := range s.Sections() {
		if err := fresh.LoadSection(sec); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(fresh.CatalogRecords(), s.CatalogRecords()) {
		t.Fatal("the catalog section does not round-trip")
	}
	// Delete: 1, then 0 with nothing changed.
	if res := s.Apply(ptr(CatalogDel("s1")), nil); res.Count != 1 || !res.Changed {
		t.Fatalf("del: %+v", res)
	}
	if res := s.Apply(ptr(CatalogDel("s1")), nil); res.Count != 0 || res.Changed {
		t.Fatalf("del again: %+v", res)
	}
	if res := s.Apply(ptr(CatalogGet("s1")), nil); res.Code != CodeNotFound {
		t.Fatalf("get after del: %+v", res)
	}
}

func TestCatalogOpsJournalAndKeys(t *testing.T) {
	s := NewState()
	set := CatalogSet(catalog.Record{SKU: "s1", Title: "Title", Brand: "B", Attributes: []catalog.Attribute{{Name: "b", Value: "2"}, {Name: "a", Value: "1"}}})
	set.IdempotencyKey = "k1"
	if res := s.Apply(&set, nil); res.Code != CodeOK {
		t.Fatal(res)
	}
	for _, op := range []Op{set, func() Op { o := CatalogDel("s1"); o.IdempotencyKey = "k2"; return o }()} {
		buf := AppendOp(nil, &op)
		d := NewDecoder()
		d.Reset(buf)
		var got Op
		if err := d.Op(&got); err != nil || !d.Done() {
			t.Fatalf("%s: decode: %v", op.Kind, err)
		}
		if !reflect.DeepEqual(got, op) {
			t.Fatalf("%s: decoded %+v, want %+v", op.Kind, got, op)
		}
	}
	// A repeat with the same key and record is the first reply; another
	// record under the same key is a mismatch.
	again := CatalogSet(catalog.Record{SKU: "s1", Title: "Title", Brand: "B", Attributes: []catalog.Attribute{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}})
	again.IdempotencyKey = "k1"
	if res := s.Apply(&again, nil); res.Code != CodeOK || !res.Repeat {
		t.Fatalf("repeat: %+v", res)
	}
	other := CatalogSet(catalog.Record{SKU: "s1", Title: "Other", Brand: "B"})
	other.IdempotencyKey = "k1"
	if res := s.Apply(&other, nil); res.Code != CodeMismatch {
		t.Fatalf("mismatch: %+v", res)
	}
	if r, _ := s.Apply(ptr(CatalogGet("s1")), nil), 0; r.Record.Title != "Title" {
		t.Fatalf("a mismatch changed the record: %+v", r.Record)
	}
}

func ptr(op Op) *Op { return &op }
