package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"allot/catalog"
	"allot/client"
	"allot/inventory"
	"allot/server/servertest"
)

// TestBatcherManyCallers: concurrent callers share one connection; every
// release is applied exactly once and answered with its own row's count.
func TestBatcherManyCallers(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{PoolSize: 1})
	ctx := context.Background()
	const callers, each = 32, 200
	for i := range callers {
		if _, err := c.Stock(ctx, group.Row(fmt.Sprint("w", i)), 0, 1); err != nil {
			t.Fatal(err)
		}
	}
	b := client.NewBatcher(c, 0)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for k := 1; k <= each; k++ {
				res, err := b.Do(ctx, inventory.Release(group.Row(fmt.Sprint("w", i)), 1), nil)
				if err != nil || res.Code != inventory.CodeOK || res.Count != int64(k) {
					t.Errorf("caller %d release %d: %+v %v", i, k, res, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.Close()
	if _, err := b.Do(ctx, inventory.Get(group.Row("w0")), nil); !errors.Is(err, client.ErrBatcherClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
	for i := range callers {
		res, err := c.Get(ctx, group.Row(fmt.Sprint("w", i)))
		if err != nil || res.Count != each {
			t.Fatalf("row %d: %+v %v", i, res, err)
		}
	}
}

// TestBatcherSearch: searches share the connection with other ops; an
// invalid query's -ERR comes back to its caller alone and the replies
// around it stay in step.
func TestBatcherSearch(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{PoolSize: 1})
	ctx := context.Background()
	for i, title := range []string{"Red shoe", "red hat", "Blue coat"} {
		if err := c.CatalogSet(ctx, catalog.Record{SKU: fmt.Sprint("s", i), Title: title, Brand: "X"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Stock(ctx, inventory.RowKey{SKU: "s1", Warehouse: "w", Condition: "new", Source: "o"}, 7, 1); err != nil {
		t.Fatal(err)
	}
	b := client.NewBatcher(c, 0)
	defer b.Close()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for range 50 {
				if i%4 == 3 {
					if _, err := b.Search(ctx, catalog.Query{Prefix: "x", Limit: 5000}, nil); err == nil {
						t.Error("a search with limit 5000 was accepted")
						return
					}
					continue
				}
				out, err := b.Search(ctx, catalog.Query{Prefix: "RED", Limit: 10}, nil)
				if err != nil || len(out) != 2 || out[0].SKU != "s1" || out[0].Available != 7 || out[1].SKU != "s0" {
					t.Errorf("search: %+v %v", out, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
