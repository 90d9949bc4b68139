package server_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
	"allot/store"
)

// BenchmarkCheckoutPipelined: carts over RESP with pipelining against an
// allot serve child process, as a shop's checkout service would send them:
// 16 connections, each keeping a pipeline of 32 carts (64 commands) in
// flight, each cart a 3-line HOLD then its CONFIRM. It reports carts/s in
// fsync and write modes; every reply is checked.
//
//	go test ./server -run XXX -bench CheckoutPipelined -benchtime 400000x -count 3
func BenchmarkCheckoutPipelined(b *testing.B) {
	for _, d := range []store.Durability{store.DurabilityFsync, store.DurabilityWrite} {
		b.Run(string(d), func(b *testing.B) { benchCarts(b, d) })
	}
}

func benchCarts(b *testing.B, d store.Durability) {
	p := startServeB(b, d)
	benchCartsAt(b, p.Addr())
}

func benchCartsAt(b *testing.B, addr string) {
	ctx := context.Background()
	c, err := client.New(client.Config{Addr: addr, PoolSize: benchWorkers})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	groups := make([]inventory.GroupKey, 30)
	for i := range groups {
		groups[i] = inventory.GroupKey{SKU: fmt.Sprintf("sku-%d", i), Condition: "new", Source: "supplier"}
		for _, w := range []string{"w1", "w2", "w3"} {
			if res, err := c.Stock(ctx, groups[i].Row(w), inventory.CountMax/4, 100); err != nil || res.Code != inventory.CodeOK {
				b.Fatalf("stock: %+v %v", res, err)
			}
		}
	}
	const cartsPerRound = 32
	var next atomic.Int64
	var failures atomic.Int64
	run := func(worker int) {
		cn, err := c.Conn(ctx)
		if err != nil {
			b.Error(err)
			return
		}
		defer cn.Close()
		ops := make([]inventory.Op, 0, 2*cartsPerRound)
		results := make([]inventory.Result, 2*cartsPerRound)
		lines := make([][]inventory.Demand, cartsPerRound)
		for {
			from := next.Add(cartsPerRound) - cartsPerRound
			if from >= int64(b.N) {
				return
			}
			n := min(cartsPerRound, int64(b.N)-from)
			ops = ops[:0]
			for i := range n {
				cart := from + i
				ls := lines[i][:0]
				for j := range 3 {
					ls = append(ls, inventory.Demand{Group: groups[(cart*3+int64(j))%int64(len(groups))], N: 1 + (cart+int64(j))%3})
				}
				lines[i] = ls
				id := fmt.Sprintf("cart-%d", cart)
				ops = append(ops, inventory.Hold(id, 600_000, ls), inventory.Confirm(id))
			}
			if err := cn.Pipeline(ctx, ops, results); err != nil {
				b.Error(err)
				return
			}
			for i := range ops {
				if results[i].Code != inventory.CodeOK {
					failures.Add(1)
				}
			}
		}
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range benchWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); run(w) }()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failures.Load(); f > 0 {
		b.Fatalf("%d holds or confirms failed", f)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "carts/s")
}
