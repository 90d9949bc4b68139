package inventory

import (
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkIdempotencyMemory retains 10,000,000 idempotency keys (each a
// keyed capture of one unit, the reply one line) and reports the heap they
// take per key: the target is at most 100 bytes a key, key and reply
// included.
//
//	go test ./inventory -run XXX -bench IdempotencyMemory -benchtime 1x
func BenchmarkIdempotencyMemory(b *testing.B) {
	keys := 10_000_000
	if testing.Short() {
		keys = 1_000_000
	}
	for range b.N {
		s := NewState()
		s.SetTime(1_700_000_000_000)
		g := GroupKey{SKU: "sku-1", Condition: "new", Source: "supplier"}
		st := Stock(g.Row("w1"), CountMax, 100)
		s.Apply(&st, nil)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		op := Capture(g, 1)
		var lines []Line
		buf := make([]byte, 0, 32)
		for i := 0; i < keys; i++ {
			buf = strconv.AppendInt(append(buf[:0], "order-"...), int64(i), 10)
			op.IdempotencyKey = string(buf)
			res := s.Apply(&op, lines)
			lines = res.Lines
			if res.Code != CodeOK {
				b.Fatalf("capture %d: %+v", i, res)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if got := s.Stats().Keys; got != keys {
			b.Fatalf("%d keys remembered, want %d", got, keys)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(keys), "bytes/key")
		runtime.KeepAlive(s)
	}
}
