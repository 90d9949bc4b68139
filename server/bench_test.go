package server_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/bench"
	"allot/client"
	"allot/inventory"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
	"allot/workload"
)

// The benchmarks of issue 3 run allot serve as a child process, as the
// bench does, with client and server sharing this machine's cores. Run them
// with -count and compare medians, for example:
//
//	go test ./server -run XXX -bench . -benchtime 1x -count 5 | tee bench.txt
//
// Each reports ops/s (or requests/s) as a metric; ns/op is not meaningful
// for the child-process ones.

const benchWorkers = 16

// startServeB starts a child allot serve for a benchmark.
func startServeB(b *testing.B, d store.Durability) *remote.Process {
	b.Helper()
	p, err := remote.StartProcess(context.Background(), servertest.BuildAllot(b), store.Config{Durability: d})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Stop(time.Minute) })
	return p
}

// seedOps is the seed preset's workload with n ops: its rows and its ops
// as inventory ops.
func seedOps(b *testing.B, n int) ([]inventory.Row, []inventory.Op) {
	b.Helper()
	params, err := workload.Preset("seed")
	if err != nil {
		b.Fatal(err)
	}
	params.Ops = n
	w, err := workload.Generate(params)
	if err != nil {
		b.Fatal(err)
	}
	ops := make([]inventory.Op, len(w.Ops))
	for i := range w.Ops {
		ops[i] = inventory.Op{Kind: w.Ops[i].Kind, Key: w.Ops[i].Key, N: w.Ops[i].N}
	}
	return w.Initial, ops
}

// closedLoop runs total ops over workers connections, each sending depth
// ops per round trip, and returns ops per second. do runs one round trip
// of ops [from, to).
func closedLoop(b *testing.B, addr string, total, depth int, do func(cn *client.Conn, from, to int, results []inventory.Result) error) float64 {
	b.Helper()
	conns := make([]*client.Conn, benchWorkers)
	c, err := client.New(client.Config{Addr: addr, PoolSize: benchWorkers})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for i := range conns {
		if conns[i], err = c.Conn(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, cn := range conns {
		wg.Go(func() {
			results := make([]inventory.Result, depth)
			for {
				from := int(next.Add(int64(depth))) - depth
				if from >= total {
					return
				}
				if err := do(cn, from, min(from+depth, total), results); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for _, cn := range conns {
		cn.Close()
	}
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return float64(total) / elapsed.Seconds()
}

// BenchmarkRESPClient compares capture/release of the seed workload with a
// PING loop (run before and after it, averaged), through the same Go client
// and the same server, 16 connections, at pipeline depths 1 and 64 and in
// each durability mode.
// Target (issue 3): ops at depth 1 in write mode >= 80% of PING at depth
// 1; ops at depth 64 in fsync mode >= 500K/s.
func BenchmarkRESPClient(b *testing.B) {
	const opsMin = 200_000
	for _, d := range []store.Durability{store.DurabilityWrite, store.DurabilityFsync} {
		for _, depth := range []int{1, 64} {
			b.Run(fmt.Sprintf("durability=%s/depth=%d", d, depth), func(b *testing.B) {
				p := startServeB(b, d)
				total := max(b.N, opsMin)
				rows, ops := seedOps(b, total)
				st, err := remote.Open(context.Background(), store.Config{Addr: p.Addr(), Durability: d}, remote.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				if err := st.Load(context.Background(), rows); err != nil {
					b.Fatal(err)
				}
				pingLoop := func() float64 {
					return closedLoop(b, p.Addr(), total, depth, func(cn *client.Conn, from, to int, _ []inventory.Result) error {
						if depth == 1 {
							return cn.Ping(context.Background())
						}
						return cn.PingPipeline(context.Background(), to-from)
					})
				}
				before := pingLoop()
				opsRate := closedLoop(b, p.Addr(), total, depth, func(cn *client.Conn, from, to int, results []inventory.Result) error {
					if depth == 1 {
						_, err := cn.Do(context.Background(), ops[from], results[0].Lines)
						return err
					}
					return cn.Pipeline(context.Background(), ops[from:to], results)
				})
				ping := (before + pingLoop()) / 2
				b.ReportMetric(ping, "ping/s")
				b.ReportMetric(opsRate, "ops/s")
				b.ReportMetric(100*opsRate/ping, "%ping")
			})
		}
	}
}

// BenchmarkBench runs the bench itself (bench.Run, the code behind allot
// bench --store allot) on the seed preset with 16 workers, pipeline 1,
// write durability, against a server it started, alternating with PING
// loops of the same Go client on the same server. The machine is shared
// and its load swings within seconds, so the run is cut into segments
// (each a bench.Run of the seed preset's rows with its own ops, then a PING
// loop) and the rates are totals over all segments. It reports the bench's
// ops/s, the PING rate and the ratio. Ops per segment: max(b.N, 100,000);
// segments: 6.
func BenchmarkBench(b *testing.B) {
	const segments = 6
	p := startServeB(b, store.DurabilityWrite)
	params, err := workload.Preset("seed")
	if err != nil {
		b.Fatal(err)
	}
	params.Ops = max(b.N, 100_000)
	w, err := workload.Generate(params)
	if err != nil {
		b.Fatal(err)
	}
	st, err := remote.Open(context.Background(), store.Config{Addr: p.Addr(), Durability: store.DurabilityWrite, Workers: benchWorkers}, remote.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var opsSeconds, pingSeconds float64
	b.ResetTimer()
	for range segments {
		res, err := bench.Run(context.Background(), bench.RunConfig{Workers: benchWorkers, Store: "allot", Durability: store.DurabilityWrite}, st, w)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Check.OK {
			b.Fatalf("check failed: %v", res.Check.Violations)
		}
		opsSeconds += res.Seconds
		rate := closedLoop(b, p.Addr(), params.Ops, 1, func(cn *client.Conn, _, _ int, _ []inventory.Result) error {
			return cn.Ping(context.Background())
		})
		pingSeconds += float64(params.Ops) / rate
	}
	b.StopTimer()
	ops := float64(segments*params.Ops) / opsSeconds
	ping := float64(segments*params.Ops) / pingSeconds
	b.ReportMetric(ops, "ops/s")
	b.ReportMetric(ping, "ping/s")
	b.ReportMetric(100*ops/ping, "%ping")
}

// BenchmarkRedisBenchmark runs redis-benchmark (an independent client)
// against allot serve: 16 clients, pipelines of 1, 16 and 64, CAPTURE of a
// group with ample stock against -t ping on the same server. Target
// (issue 3): CAPTURE at -P 16 >= 70% of PING at -P 16.
func BenchmarkRedisBenchmark(b *testing.B) {
	tool := servertest.RequireTool(b, "redis-benchmark")
	for _, d := range []store.Durability{store.DurabilityWrite, store.DurabilityFsync} {
		for _, pipeline := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("durability=%s/P=%d", d, pipeline), func(b *testing.B) {
				p := startServeB(b, d)
				c, err := client.New(client.Config{Addr: p.Addr()})
				if err != nil {
					b.Fatal(err)
				}
				g := inventory.GroupKey{SKU: "ample", Condition: "new", Source: "retail"}
				if _, err := c.Stock(context.Background(), g.Row("w1"), inventory.CountMax, 1); err != nil {
					b.Fatal(err)
				}
				c.Close()
				n := max(b.N, map[int]int{1: 100_000, 16: 1_000_000, 64: 2_000_000}[pipeline])
				before := redisBenchmark(b, tool, p.Addr(), pipeline, n, "-t", "ping")
				capture := redisBenchmark(b, tool, p.Addr(), pipeline, n, "CAPTURE", g.SKU, g.Condition, g.Source, "1")
				ping := (before + redisBenchmark(b, tool, p.Addr(), pipeline, n, "-t", "ping")) / 2
				b.ReportMetric(ping, "ping/s")
				b.ReportMetric(capture, "capture/s")
				b.ReportMetric(100*capture/ping, "%ping")
			})
		}
	}
}

// redisBenchmark runs redis-benchmark and returns the requests per second
// of its last test (PING_MBULK for -t ping: the form clients send).
func redisBenchmark(b *testing.B, tool, addr string, pipeline, n int, args ...string) float64 {
	b.Helper()
	host, port, _ := strings.Cut(addr, ":")
	argv := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(benchWorkers), "-P", strconv.Itoa(pipeline), "-n", strconv.Itoa(n), "--csv"}, args...)
	out, err := exec.Command(tool, argv...).CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark %v: %v\n%s", argv, err, out)
	}
	var rps float64
	found := false
	for _, line := range bytes.Split(out, []byte("\n")) {
		fields := strings.Split(string(line), ",")
		if len(fields) < 2 || fields[0] == `"test"` {
			continue
		}
		v, err := strconv.ParseFloat(strings.Trim(fields[1], `"`), 64)
		if err == nil {
			rps, found = v, true
		}
	}
	if !found {
		b.Fatalf("no rate in redis-benchmark's output:\n%s", out)
	}
	return rps
}
