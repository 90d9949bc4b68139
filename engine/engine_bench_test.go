package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"allot/inventory"
)

// BenchmarkPipeline measures the engine with many concurrent callers on a
// seed-like mix of captures and releases (1000 rows, 50/50), by durability
// mode and caller count. Compare modes with benchstat; the fsync figures
// depend on the disk's fdatasync latency.
func BenchmarkPipeline(b *testing.B) {
	for _, mode := range []Durability{DurabilityNone, DurabilityWrite, DurabilityFsync} {
		for _, workers := range []int{16, 1024} {
			b.Run(fmt.Sprintf("mode=%s/workers=%d", mode, workers), func(b *testing.B) {
				benchPipeline(b, mode, workers)
			})
		}
	}
}

func benchPipeline(b *testing.B, mode Durability, workers int) {
	e, err := Open(Config{Dir: b.TempDir(), Durability: mode})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var keys []inventory.RowKey
	for sku := 0; sku < 112; sku++ {
		for _, w := range []string{"w1", "w2", "w3"} {
			for _, c := range []string{"c1", "c2", "c3"} {
				k := inventory.RowKey{SKU: fmt.Sprintf("sku-%04d", sku), Warehouse: w, Condition: c, Source: "s1"}
				keys = append(keys, k)
				must(e.Stock(k, 1<<40, 500))
			}
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewRequest()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				k := keys[(i*7919)%int64(len(keys))]
				if i%2 == 0 {
					r.Op = inventory.Capture(k.Group(), 1+i%3)
				} else {
					r.Op = inventory.Release(k, 1+i%3)
				}
				if err := e.Submit(r); err != nil {
					b.Error(err)
					return
				}
				if err := r.Wait(); err != nil || r.Result.Code != inventory.CodeOK {
					b.Errorf("%+v %v", r.Result, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	st := e.Stats()
	b.ReportMetric(float64(st.Requests)/float64(max(st.Batches, 1)), "ops/batch")
}
