package server

import (
	"math/bits"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"allot/engine"
	"allot/inventory"
)

// The metrics are served by the Prometheus client library, with its Go
// runtime and process collectors. The server's own counters are not
// prometheus.Counter values, though: they are plain atomics that a
// connection adds a whole pipeline's counts to with one add per distinct
// (op, result), and a collector turns them into metrics when /metrics is
// read. Rejected: a CounterVec with labels, whose WithLabelValues hashes
// the labels and takes a read lock on every op.

type protocol uint8

const (
	protocolRESP protocol = iota
	protocolHTTP
	protocolCount
)

var protocolNames = [protocolCount]string{"resp", "http"}

// result is the result label of an op: an inventory.Code by its name, or
// resultError for an operational failure (the engine refused or failed).
// Every code has a label of its own: the checkout's outcomes (expired,
// cancelled, confirmed, mismatch) were once counted as errors.
type result uint8

const (
	resultError = result(inventory.CodeCount)
	resultCount = resultError + 1
)

func resultOf(code inventory.Code) result {
	if code >= inventory.CodeCount {
		return resultError
	}
	return result(code)
}

func (r result) String() string {
	if r == resultError {
		return "error"
	}
	return inventory.Code(r).String()
}

// kindSlots bounds the op kinds counted apart: inventory.Kind is a uint8
// with room for new kinds, and a kind at or past kindSlots is counted as
// kind 0 ("other") instead of indexing out of range.
const kindSlots = 32

func kindSlot(k inventory.Kind) int {
	if int(k) >= kindSlots {
		return 0
	}
	return int(k)
}

func kindLabel(k int) string {
	if k == 0 {
		return "other"
	}
	return inventory.Kind(k).String()
}

// latencyBounds are the upper bounds of the op latency histogram buckets:
// from the moment a RESP read or an HTTP request arrived to the moment its
// reply was written.
var latencyBounds = []time.Duration{
	10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond,
	250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
}

// pipelineBounds are the bucket bounds of the commands-per-read histogram.
var pipelineBounds = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// histogramBucketsMax bounds the buckets of a histogram (its bounds and
// one above them all).
const histogramBucketsMax = 48

// histogram is a lock-free fixed-bucket histogram over bounds given to
// each call: counts[i] counts the samples <= bounds[i] and above
// bounds[i-1]; counts[len(bounds)] those above every bound. Its zero value
// is ready, so the server's metrics need no constructor.
type histogram struct {
	counts [histogramBucketsMax]atomic.Uint64
	count  atomic.Uint64
	nanos  atomic.Uint64
}

func bucketOf(bounds []time.Duration, d time.Duration) int {
	lo, hi := 0, len(bounds)
	for lo < hi {
		mid := (lo + hi) / 2
		if d > bounds[mid] {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// observeN adds n samples of d.
func (h *histogram) observeN(bounds []time.Duration, d time.Duration, n uint64) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(bounds, d)].Add(n)
	h.count.Add(n)
	h.nanos.Add(n * uint64(d))
}

// metric returns h as a Prometheus histogram in seconds.
func (h *histogram) metric(bounds []time.Duration, desc *prometheus.Desc, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, b := range bounds {
		cum += h.counts[i].Load()
		buckets[b.Seconds()] = cum
	}
	return prometheus.MustNewConstHistogram(desc, h.count.Load(), float64(h.nanos.Load())/1e9, buckets, labels...)
}

// metrics are the server's counters. All fields are atomics: connections
// add to them concurrently.
type metrics struct {
	ops     [protocolCount][kindSlots][resultCount]atomic.Uint64
	latency [protocolCount][kindSlots]histogram
	stages  [stageCount]histogram

	connections         atomic.Int64 // open RESP connections
	connectionsAccepted atomic.Uint64
	connectionsRejected atomic.Uint64
	commandsOther       atomic.Uint64 // PING, HELLO, AUTH, ...
	commandErrors       atomic.Uint64 // -ERR for a malformed or unknown command
	protocolErrors      atomic.Uint64 // fatal framing errors (connection closed)
	pipeline            [12]atomic.Uint64
	pipelineCount       atomic.Uint64
	pipelineSum         atomic.Uint64
	handoffs            [resumeCount]atomic.Uint64 // rounds the event loop handed to a goroutine, by reason
	httpRequests        atomic.Uint64
	// httpConnectionsRejected counts connections the HTTP listener
	// refused at the connections max (limitListener).
	httpConnectionsRejected atomic.Uint64
	httpBadRequests         atomic.Uint64

	initOnce sync.Once
	handler  http.Handler
}

func (m *metrics) init(e *engine.Engine) {
	m.initOnce.Do(func() {
		reg := prometheus.NewRegistry()
		reg.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			&collector{m: m, engine: e},
		)
		m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	})
}

// opTally accumulates one pipeline's op outcomes on a connection, so that
// the shared counters see one add per distinct (kind, result).
type opTally struct {
	counts [kindSlots][resultCount]uint32
	// kinds has bit k set when counts[k] holds a count: count looks at
	// those rows only. Scanning every row (192 counts, for the one kind a
	// pipeline of captures touches) made a round of 16 captures' tally
	// and flush 215 ns instead of 32.
	kinds uint32
	// counted[k] is how many ops of kind slot k count added to the
	// shared counters whose latency flush has not observed yet; timed has
	// bit k set when counted[k] is not 0.
	counted [kindSlots]uint32
	timed   uint32
}

// opTally.kinds has a bit per kind slot.
var _ [32 - kindSlots]struct{}

func (t *opTally) add(k inventory.Kind, r result) {
	s := kindSlot(k)
	t.counts[s][r]++
	t.kinds |= 1 << s
}

// count adds the tally's outcomes to m's op counters and keeps how many
// ops of each kind it added, for flush. A connection counts its ops
// before it writes their replies, so that a client that got a reply and
// then reads /metrics finds its op counted: adding them after the write,
// as flush alone did, left a window where it did not
// (TestAudit23OpCountedBeforeItsReply).
func (m *metrics) count(p protocol, t *opTally) {
	for t.kinds != 0 {
		k := bits.TrailingZeros32(t.kinds)
		t.kinds &^= 1 << k
		var n uint32
		for r, c := range t.counts[k] {
			if c != 0 {
				m.ops[p][k][r].Add(uint64(c))
				n += c
				t.counts[k][r] = 0
			}
		}
		t.counted[k] += n
		t.timed |= 1 << k
	}
}

// flush counts what count has not, observes latency d for every op
// counted since the last flush, and clears the tally.
func (m *metrics) flush(p protocol, t *opTally, d time.Duration) {
	m.count(p, t)
	for t.timed != 0 {
		k := bits.TrailingZeros32(t.timed)
		t.timed &^= 1 << k
		m.latency[p][k].observeN(latencyBounds, d, uint64(t.counted[k]))
		t.counted[k] = 0
	}
}

func (m *metrics) observePipeline(n int) {
	i := 0
	for i < len(pipelineBounds) && float64(n) > pipelineBounds[i] {
		i++
	}
	m.pipeline[i].Add(1)
	m.pipelineCount.Add(1)
	m.pipelineSum.Add(uint64(n))
}

// collector turns the server's atomics and the engine's Stats into
// metrics when /metrics is read.
type collector struct {
	m      *metrics
	engine *engine.Engine
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descOps       = desc("allot_ops_total", "Ops answered, by protocol, op and result: the outcome's code (ok, insufficient, not_found, invalid, overflow, mismatch, expired, cancelled, confirmed), or error when the engine failed or refused.", "protocol", "op", "result")
	descLatency   = desc("allot_op_duration_seconds", "Op latency inside the server, from the read of the request to the write of its reply.", "protocol", "op")
	descStage     = desc("allot_stage_duration_seconds", "Time an op spends in each stage inside the server (see server/stage.go): the connection's stages once per round (a read and its replies), the engine's once per op.", "stage")
	descPipeline  = desc("allot_resp_pipeline_commands", "Commands served per round on one connection (the pipeline depth seen by the server).")
	descBatchSize = desc("allot_engine_batch_size", "Replies released per journal flush.")
	descSync      = desc("allot_engine_fsync_duration_seconds", "fdatasync latency of the journal.")
	descHandoffs  = desc("allot_resp_loop_handoffs_total", "Rounds the RESP event loop handed to a goroutine because they had to wait, by reason: direct_reply (the connection's previous reply was still on its way), replies (they wait for the disk: fsync mode, more than one op), write (the socket did not take them all), changes (a CHANGES command, which may block).", "reason")
	descExpiryLag = desc("allot_hold_expiry_lag_seconds", "How long after its deadline (by the engine's clock) each expired hold's units came back.")
)

// gauge and counter are one-sample metrics without labels.
type simple struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(*metrics) float64
}

var simples = []simple{
	{desc("allot_resp_connections", "Open RESP connections."), prometheus.GaugeValue, func(m *metrics) float64 { return float64(m.connections.Load()) }},
	{desc("allot_resp_connections_accepted_total", "RESP connections accepted."), prometheus.CounterValue, func(m *metrics) float64 { return float64(m.connectionsAccepted.Load()) }},
	{desc("allot_resp_connections_rejected_total", "RESP connections refused because the connections max was reached."), prometheus.CounterValue, func(m *metrics) float64 { return float64(m.connectionsRejected.Load()) }},
	{desc("allot_resp_commands_other_total", "RESP commands that are not ops (PING, ECHO, HELLO, AUTH, CLIENT, COMMAND, QUIT)."), prometheus.CounterValue, func(m *metrics) float64 { return float64(m.commandsOther.Load()) }},
	{desc("allot_resp_command_errors_total", "RESP commands refused with -ERR before reaching the engine (unknown, wrong arity, bad argument, over a limit)."), prometheus.CounterValue, func(m *metrics) float64 { return float64(m.commandErrors.Load()) }},
	{desc("allot_resp_protocol_errors_total", "RESP connections closed for a framing error."), prometheus.CounterValue, func(m *metrics) float64 { return float64(m.protocolErrors.Load()) }},
	{desc("allot_http_connections_rejected_total", "HTTP connections answered 503 (or closed, past the refusals in flight) because the connections max was reached."), prometheus.CounterValue, func(m *metrics) float64 { return float64(m.httpConnectionsRejected.Load()) }},
	{desc("allot_http_requests_total", "HTTP requests served."), prometheus.CounterValue, func(m *metrics) float64 { return float64(m.httpRequests.Load()) }},
	{desc("allot_http_bad_requests_total", "HTTP requests answered 400."), prometheus.CounterValue, func(m *metrics) float64 { return float64(m.httpBadRequests.Load()) }},
}

// engineMetric is one metric read from engine.Stats. A new engine figure
// (holds active, expiries, idempotent repeats, ...) is one line in
// engineMetrics.
type engineMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(*engine.Stats) float64
}

var engineMetrics = []engineMetric{
	{desc("allot_engine_requests_total", "Replies the engine released after their journal write (ops and reads)."), prometheus.CounterValue, func(s *engine.Stats) float64 { return float64(s.Requests) }},
	{desc("allot_engine_journaled_ops_total", "Ops written to the journal since the engine opened."), prometheus.CounterValue, func(s *engine.Stats) float64 { return float64(s.Journaled) }},
	{desc("allot_engine_batches_total", "Journal flushes: one write each, and one fdatasync in fsync mode."), prometheus.CounterValue, func(s *engine.Stats) float64 { return float64(s.Batches) }},
	{desc("allot_engine_journal_bytes", "Bytes in the journal."), prometheus.GaugeValue, func(s *engine.Stats) float64 { return float64(s.JournalBytes) }},
	{desc("allot_engine_snapshots_total", "Snapshots written."), prometheus.CounterValue, func(s *engine.Stats) float64 { return float64(s.Snapshots) }},
	{desc("allot_holds_active", "Holds held now (their units are out of the rows)."), prometheus.GaugeValue, func(s *engine.Stats) float64 { return float64(s.State.HoldsActive) }},
	{desc("allot_holds_expired_total", "Holds expired (units returned at their deadline) since the engine opened."), prometheus.CounterValue, func(s *engine.Stats) float64 { return float64(s.State.Expired) }},
	{desc("allot_idempotent_repeats_total", "Requests answered from an idempotency key or a hold id with the first reply, applying nothing."), prometheus.CounterValue, func(s *engine.Stats) float64 { return float64(s.State.Repeats) }},
	{desc("allot_idempotency_mismatches_total", "Requests refused because their key or hold id was first used with other arguments."), prometheus.CounterValue, func(s *engine.Stats) float64 { return float64(s.State.Mismatches) }},
	{desc("allot_returns_capped_total", "Row returns capped at 2^62-1: once per row that a cancel or an expiry would have carried past it (the units over it are dropped)."), prometheus.CounterValue, func(s *engine.Stats) float64 { return float64(s.State.Capped) }},
	{desc("allot_idempotency_keys", "Idempotency keys remembered."), prometheus.GaugeValue, func(s *engine.Stats) float64 { return float64(s.State.Keys) }},
	{desc("allot_idempotency_keys_max", "The idempotency keys the engine keeps at most (allot serve --keys-max): past it a request with a new key is refused UNAVAILABLE."), prometheus.GaugeValue, func(s *engine.Stats) float64 { return float64(s.KeysMax) }},
	{desc("allot_idempotency_keys_refused_total", "Requests refused UNAVAILABLE because they brought a new idempotency key at the keys max."), prometheus.CounterValue, func(s *engine.Stats) float64 { return float64(s.KeysRefused) }},
	{desc("allot_idempotency_key_bytes", "Bytes holding the remembered idempotency keys and their replies."), prometheus.GaugeValue, func(s *engine.Stats) float64 { return float64(s.State.KeyBytes) }},
	{desc("allot_engine_failed", "1 when a journal write or sync failed and the engine refuses requests."), prometheus.GaugeValue, func(s *engine.Stats) float64 {
		if s.Failed {
			return 1
		}
		return 0
	}},
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	for p := range protocolCount {
		for k := 1; k < kindSlots; k++ {
			h := &m.latency[p][k]
			var n uint64
			for r := range result(resultCount) {
				n += m.ops[p][k][r].Load()
			}
			// Every kind of the wire contract v1 always; others once seen.
			if n == 0 && k > int(inventory.KindAvailable) {
				continue
			}
			for r := range result(resultCount) {
				ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(m.ops[p][k][r].Load()), protocolNames[p], kindLabel(k), r.String())
			}
			ch <- h.metric(latencyBounds, descLatency, protocolNames[p], kindLabel(k))
		}
	}
	for i := range m.stages {
		ch <- m.stages[i].metric(stageBounds, descStage, stage(i).String())
	}
	for _, s := range simples {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.value(m))
	}
	for r := resumeFinish; r < resumeCount; r++ {
		ch <- prometheus.MustNewConstMetric(descHandoffs, prometheus.CounterValue, float64(m.handoffs[r].Load()), r.reason())
	}
	buckets := make(map[float64]uint64, len(pipelineBounds))
	var cum uint64
	for i, b := range pipelineBounds {
		cum += m.pipeline[i].Load()
		buckets[b] = cum
	}
	ch <- prometheus.MustNewConstHistogram(descPipeline, m.pipelineCount.Load(), float64(m.pipelineSum.Load()), buckets)

	es := c.engine.Stats()
	for _, em := range engineMetrics {
		ch <- prometheus.MustNewConstMetric(em.desc, em.typ, em.value(&es))
	}
	buckets = make(map[float64]uint64, len(engine.BatchSizeBounds))
	cum = 0
	for i, b := range engine.BatchSizeBounds {
		cum += uint64(es.BatchSize[i])
		buckets[float64(b)] = cum
	}
	// Every reply is in exactly one flush: their count is the sum.
	ch <- prometheus.MustNewConstHistogram(descBatchSize, uint64(es.Batches), float64(es.Requests), buckets)
	buckets = make(map[float64]uint64, len(engine.SyncLatencyBounds))
	cum = 0
	for i, b := range engine.SyncLatencyBounds {
		cum += uint64(es.SyncLatency[i])
		buckets[b.Seconds()] = cum
	}
	ch <- prometheus.MustNewConstHistogram(descSync, uint64(es.Syncs), es.SyncSeconds, buckets)
	buckets = make(map[float64]uint64, len(engine.ExpiryLagBounds))
	cum = 0
	var lagCount uint64
	for i := range es.ExpiryLag {
		lagCount += uint64(es.ExpiryLag[i])
	}
	for i, b := range engine.ExpiryLagBounds {
		cum += uint64(es.ExpiryLag[i])
		buckets[b.Seconds()] = cum
	}
	ch <- prometheus.MustNewConstHistogram(descExpiryLag, lagCount, es.ExpiryLagSeconds, buckets)
	ch <- prometheus.MustNewConstMetric(descExpiryLagMax, prometheus.GaugeValue, es.ExpiryLagMax.Seconds())
}

var descExpiryLagMax = desc("allot_hold_expiry_lag_max_seconds", "The longest expiry lag seen since the engine opened.")
