package client_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"allot/catalog"
	"allot/client"
	"allot/inventory"
	"allot/server/servertest"
)

// The catalog commands end to end: client, RESP, engine, and back.
func TestCatalogCommands(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{})
	ctx := context.Background()
	if _, err := c.Stock(ctx, inventory.RowKey{SKU: "s1", Warehouse: "w1", Condition: "new", Source: "own"}, 5, 100); err != nil {
		t.Fatal(err)
	}
	rec := catalog.Record{SKU: "s1", Title: "Größe Jacke", Brand: "ACME", Attributes: []catalog.Attribute{{Name: "size", Value: "L"}, {Name: "colour", Value: ""}}}
	if err := c.CatalogSet(ctx, rec, "k1"); err != nil {
		t.Fatal(err)
	}
	if err := c.CatalogSet(ctx, catalog.Record{SKU: "s2", Title: "größer", Brand: "Other"}, ""); err != nil {
		t.Fatal(err)
	}
	got, found, err := c.CatalogGet(ctx, "s1")
	want := catalog.Record{SKU: "s1", Title: "Größe Jacke", Brand: "ACME", Attributes: []catalog.Attribute{{Name: "colour", Value: ""}, {Name: "size", Value: "L"}}}
	if err != nil || !found || !got.Equal(&want) {
		t.Fatalf("CATALOG.GET = %+v %v %v", got, found, err)
	}
	if _, found, err := c.CatalogGet(ctx, "nope"); err != nil || found {
		t.Fatalf("CATALOG.GET of an unknown sku: %v %v", found, err)
	}
	hits, err := c.Search(ctx, catalog.Query{Prefix: "GRÖ"}, nil)
	wantHits := []catalog.Result{{SKU: "s1", Title: "Größe Jacke", Brand: "ACME", Available: 5}, {SKU: "s2", Title: "größer", Brand: "Other", Available: 0}}
	if err != nil || !slices.Equal(hits, wantHits) {
		t.Fatalf("SEARCH = %+v %v", hits, err)
	}
	hits, err = c.Search(ctx, catalog.Query{Prefix: "grö", Brand: "oth", Offset: 0, Limit: 5}, nil)
	if err != nil || len(hits) != 1 || hits[0].SKU != "s2" {
		t.Fatalf("SEARCH BRAND = %+v %v", hits, err)
	}
	// Results are appended to out, and earlier answers stay intact when
	// the connection's buffers are reused by a later search.
	first := hits
	hits, err = c.Search(ctx, catalog.Query{Prefix: "GR", Offset: 1, Limit: 1}, hits)
	if err != nil || len(hits) != 2 || hits[0].SKU != "s2" || hits[1] != wantHits[1] {
		t.Fatalf("SEARCH OFFSET 1 LIMIT 1 appended = %+v %v", hits, err)
	}
	if _, err := c.Search(ctx, catalog.Query{Prefix: "zz"}, nil); err != nil {
		t.Fatal(err)
	}
	if first[0].SKU != "s2" || first[0].Title != "größer" || first[0].Brand != "Other" {
		t.Fatalf("an earlier answer changed: %+v", first[0])
	}
	// A repeat with the key is answered; the same key with another record
	// is a MISMATCH; bad input is -ERR; the connection stays usable.
	if err := c.CatalogSet(ctx, rec, "k1"); err != nil {
		t.Fatalf("repeat: %v", err)
	}
	var se *client.ServerError
	if err := c.CatalogSet(ctx, catalog.Record{SKU: "s1", Title: "x", Brand: "y"}, "k1"); !errors.As(err, &se) || !strings.HasPrefix(se.Msg, "MISMATCH") {
		t.Fatalf("mismatch: %v", err)
	}
	if err := c.CatalogSet(ctx, catalog.Record{SKU: "s3", Title: "", Brand: "y"}, ""); !errors.As(err, &se) || se.Msg != "ERR title is empty" {
		t.Fatalf("empty title: %v", err)
	}
	if _, err := c.Search(ctx, catalog.Query{Prefix: "a", Limit: 1001}, nil); !errors.As(err, &se) || se.Msg != "ERR limit must be from 1 to 1000" {
		t.Fatalf("limit: %v", err)
	}
	if deleted, err := c.CatalogDel(ctx, "s2", "k2"); err != nil || !deleted {
		t.Fatalf("CATALOG.DEL = %v %v", deleted, err)
	}
	if deleted, err := c.CatalogDel(ctx, "s2", ""); err != nil || deleted {
		t.Fatalf("CATALOG.DEL again = %v %v", deleted, err)
	}
}
