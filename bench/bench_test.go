package bench

import (
	"context"
	"testing"

	"allot/store/memory"
)

// BenchmarkRunMemory measures the runner on the memory store, seed preset,
// 16 workers: the harness's own ceiling, which every store's ops/s is read
// against. ops/s is the runner's figure (timed ops only, loading and
// checking excluded), averaged over the iterations.
func BenchmarkRunMemory(b *testing.B) {
	for _, workers := range []int{1, 16} {
		b.Run(map[int]string{1: "workers=1", 16: "workers=16"}[workers], func(b *testing.B) {
			w := genWorkload(b, "seed", 200_000)
			p, err := NewPlan(w)
			if err != nil {
				b.Fatal(err)
			}
			var opsPerSec float64
			for b.Loop() {
				res, err := p.Run(context.Background(), RunConfig{Workers: workers}, memory.New())
				if err != nil || !res.Check.OK {
					b.Fatalf("%v %+v", err, res.Check)
				}
				opsPerSec += res.OpsPerSec
			}
			b.ReportMetric(opsPerSec/float64(b.N), "ops/s")
		})
	}
}

// BenchmarkExec is the per-op cost of one worker on the memory store: take
// an op, call the store, time it, record the outcome. One b.N is one op.
func BenchmarkExec(b *testing.B) {
	w := genWorkload(b, "seed", 1_000_000)
	r, wk, st := oneWorker(b, w)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		i := r.take()
		if i < 0 {
			b.StopTimer()
			if err := st.Load(ctx, w.Initial); err != nil {
				b.Fatal(err)
			}
			r.next.Store(0)
			b.StartTimer()
			i = r.take()
		}
		wk.exec(ctx, i, true)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
