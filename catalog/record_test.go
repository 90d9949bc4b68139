package catalog

import (
	"strings"
	"testing"
)

func TestSetRejects(t *testing.T) {
	long := strings.Repeat("x", 257)
	for _, c := range []struct {
		r    Record
		want string
	}{
		{Record{SKU: "", Title: "t", Brand: "b"}, "sku is empty"},
		{Record{SKU: strings.Repeat("s", 65), Title: "t", Brand: "b"}, "sku is longer than 64 bytes"},
		{Record{SKU: "s", Title: "", Brand: "b"}, "title is empty"},
		{Record{SKU: "s", Title: long, Brand: "b"}, "title is longer than 256 bytes"},
		{Record{SKU: "s", Title: "a\nb", Brand: "b"}, "title contains a control character"},
		{Record{SKU: "s", Title: "a\u0085b", Brand: "b"}, "title contains a control character"},
		{Record{SKU: "s", Title: "a\xffb", Brand: "b"}, "title is not valid UTF-8"},
		{Record{SKU: "s", Title: "t", Brand: ""}, "brand is empty"},
		{Record{SKU: "s", Title: "t", Brand: long}, "brand is longer than 256 bytes"},
		{Record{SKU: "s", Title: "t", Brand: "b", Attributes: []Attribute{{"", "v"}}}, "attribute name is empty"},
		{Record{SKU: "s", Title: "t", Brand: "b", Attributes: []Attribute{{"c", long}}}, "attribute c value is longer than 256 bytes"},
		{Record{SKU: "s", Title: "t", Brand: "b", Attributes: []Attribute{{"c", "\x01"}}}, "attribute c value contains a control character"},
		{Record{SKU: "s", Title: "t", Brand: "b", Attributes: []Attribute{{"c", "1"}, {"a", "2"}, {"c", "3"}}}, "attribute c is given twice"},
		{Record{SKU: "s", Title: "t", Brand: "b", Attributes: make([]Attribute, 33)}, "has more than 32 attributes"},
	} {
		cat := New()
		cat.Set(Record{SKU: "s", Title: "kept", Brand: "kept"})
		if got := cat.Set(c.r); got != c.want {
			t.Errorf("Set(%+v) = %q, want %q", c.r, got, c.want)
		}
		if r, ok := cat.Get("s"); !ok || r.Title != "kept" || cat.Len() != 1 {
			t.Errorf("a rejected Set changed the catalog: %+v", r)
		}
	}
}

func TestSetGetDelete(t *testing.T) {
	cat := New()
	in := Record{SKU: "s1", Title: "Red Shoe", Brand: "Acme", Attributes: []Attribute{{"size", "42"}, {"colour", ""}}}
	if d := cat.Set(in); d != "" {
		t.Fatal(d)
	}
	in.Attributes[0].Value = "changed by the caller"
	got, ok := cat.Get("s1")
	want := Record{SKU: "s1", Title: "Red Shoe", Brand: "Acme", Attributes: []Attribute{{"colour", ""}, {"size", "42"}}}
	if !ok || !got.Equal(&want) {
		t.Fatalf("Get = %+v, %v; want %+v", got, ok, want)
	}
	if d := cat.Set(Record{SKU: "s1", Title: "Blue Shoe", Brand: "Acme"}); d != "" {
		t.Fatal(d)
	}
	res, _ := cat.Search(Query{Prefix: "red"}, nil, nil)
	if len(res) != 0 {
		t.Fatalf("the old title is still indexed: %+v", res)
	}
	res, _ = cat.Search(Query{Prefix: "BLUE"}, func(string) int64 { return 7 }, nil)
	if len(res) != 1 || res[0] != (Result{"s1", "Blue Shoe", "Acme", 7}) {
		t.Fatalf("Search = %+v", res)
	}
	if !cat.Delete("s1") || cat.Delete("s1") || cat.Len() != 0 || cat.index.Len() != 0 {
		t.Fatal("Delete")
	}
}

func TestQueryCheck(t *testing.T) {
	for _, c := range []struct {
		q    Query
		want string
	}{
		{Query{Prefix: ""}, "prefix is empty"},
		{Query{Prefix: "a", Offset: -1}, "offset must be from 0 to 100000"},
		{Query{Prefix: "a", Offset: 100001}, "offset must be from 0 to 100000"},
		{Query{Prefix: "a", Limit: 1001}, "limit must be from 1 to 1000"},
		{Query{Prefix: "a", Limit: -1}, "limit must be from 1 to 1000"},
		{Query{Prefix: "a", Brand: "\x00"}, "brand prefix contains a control character"},
		{Query{Prefix: "a", Offset: 100000, Limit: 1000}, ""},
	} {
		q := c.q
		if got := q.Check(); got != c.want {
			t.Errorf("Check(%+v) = %q, want %q", c.q, got, c.want)
		}
	}
	q := Query{Prefix: "a"}
	q.Check()
	if q.Limit != LimitDefault {
		t.Fatalf("default limit %d", q.Limit)
	}
}
