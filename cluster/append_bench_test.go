package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"allot/internal/procfs"
	"allot/services"
)

// BenchmarkLogAppend measures what bounds a replicated shard before any of
// allot's own work: one primary's appends to the shard's R3 stream on the
// private 3-node NATS cluster (sync_always), one at a time with the
// expected-last-sequence check, as the flusher makes them. Frames of 512
// bytes are what 16 clients at pipeline 1 put in one frame (about 31 bytes
// an op); 20 KB what they put in one at pipeline 64.
//
// bound16/s is 16 / the append's median: the most ops/s 16 clients with one
// request in flight each can get through a log whose every append takes
// that long, whatever the server does around it. nats-cpu-ms/append is
// the CPU the three NATS servers spent per append (user + system, from
// /proc): what a frame costs the machine besides allot, mostly per message
// (raft, three fdatasyncs, the hand-offs), little per byte; 128 KB shows
// the slope.
//
//	go test ./cluster -run '^$' -bench LogAppend -benchtime 2000x
func BenchmarkLogAppend(b *testing.B) {
	ncfg, urls := privateNATS(b)
	st, err := services.Status(context.Background(), ncfg, services.NATS)
	if err != nil {
		b.Fatal(err)
	}
	var natsPIDs []int
	for _, s := range st {
		if s.PID > 0 {
			natsPIDs = append(natsPIDs, s.PID)
		}
	}
	proc := procfs.FS("/proc")
	for _, size := range []int{512, 20 << 10, 128 << 10} {
		b.Run(fmt.Sprintf("frame=%d", size), func(b *testing.B) {
			n, err := namesOf(fmt.Sprintf("bench-append-%d-%d", size, time.Now().UnixNano()%1e6))
			if err != nil {
				b.Fatal(err)
			}
			nc, js, err := connect(urls, "allot append bench")
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			l := &shardLog{names: n, nc: nc, js: js}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for {
				if err = l.create(ctx, 3*time.Second); err == nil {
					break
				}
				if ctx.Err() != nil {
					b.Fatal(err)
				}
				time.Sleep(250 * time.Millisecond)
			}
			defer js.DeleteStream(context.Background(), n.stream)
			defer js.DeleteKeyValue(context.Background(), n.lease)
			defer js.DeleteObjectStore(context.Background(), n.snaps)
			w := newLogWriter(ctx, l, "bench", 0, "")
			frame := make([]byte, size)
			binary.LittleEndian.PutUint32(frame[16:], 16) // 16 ops a frame
			lat := make([]time.Duration, 0, b.N)
			cpu0 := proc.TreeCPUTicks(natsPIDs)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				binary.LittleEndian.PutUint64(frame[20:], uint64(i)*16+1)
				start := time.Now()
				if err := w.Replicate(frame); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			cpu := proc.TreeCPUTicks(natsPIDs) - cpu0
			slices.Sort(lat)
			p50 := lat[len(lat)/2]
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			b.ReportMetric(16/p50.Seconds(), "bound16/s")
			if len(natsPIDs) == len(services.NATSNodes) {
				b.ReportMetric(float64(cpu)/procfs.ClockTicks*1000/float64(b.N), "nats-cpu-ms/append")
			}
		})
	}
}
