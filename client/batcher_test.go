package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

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
