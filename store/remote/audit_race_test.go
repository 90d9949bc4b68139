//go:build race

package remote_test

import (
	"context"
	"sync"
	"testing"

	"allot/engine"
	"allot/inventory"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// TestSharedSessionsOpenedAtOnce: store.Store lets Session be called from
// many goroutines at once. The allot-mux store's sessions share one
// connection; opening them together must neither race on it (the race
// detector, which this file needs, says so) nor make two of them.
func TestSharedSessionsOpenedAtOnce(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	ctx := context.Background()
	st, err := remote.Open(ctx, store.Config{Addr: s.RESPAddr(), Durability: store.DurabilityWrite, Workers: 16}, remote.Options{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	if err := st.Load(ctx, []inventory.Row{{Key: g.Row("w"), Count: 100, Price: 1}}); err != nil {
		t.Fatal(err)
	}
	sessions := make([]store.Session, 16)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			<-start
			se, err := st.Session(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			sessions[i] = se
		})
	}
	close(start)
	wg.Wait()
	for _, se := range sessions {
		if se == nil {
			continue
		}
		if res, err := se.Capture(ctx, g, 1, nil); err != nil || res.Code != inventory.CodeOK {
			t.Errorf("capture: %v %v", res.Code, err)
		}
		se.Close()
	}
}
