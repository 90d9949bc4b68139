package server

import (
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"allot/engine"
	"allot/inventory"
)

// The metrics are written by hand in the Prometheus text format (0.0.4):
// a few counters and fixed-bucket histograms do not justify a dependency,
// and hand-written counters let a connection add a whole pipeline's counts
// with one atomic add per distinct (op, result) instead of one per op.

type protocol uint8

const (
	protocolRESP protocol = iota
	protocolHTTP
	protocolCount
)

var protocolNames = [protocolCount]string{"resp", "http"}

// result is the result label of an op: an inventory.Code, or resultError
// for an operational failure (the engine refused or failed).
type result uint8

const (
	resultError result = 5
	resultCount        = 6
)

func resultOf(code inventory.Code) result {
	if code > inventory.CodeOverflow {
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

// kindCount covers inventory.Kind 0..5; 0 (unused) keeps indexing direct.
const kindCount = int(inventory.KindAvailable) + 1

// latencyBounds are the upper bounds of the op latency histogram buckets:
// from the moment a RESP read or an HTTP request arrived to the moment its
// reply was written.
var latencyBounds = [...]time.Duration{
	10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond,
	250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
}

// pipelineBounds are the bucket bounds of the commands-per-read histogram.
var pipelineBounds = [...]int64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

type latencyHistogram struct {
	buckets [len(latencyBounds) + 1]atomic.Uint64
	count   atomic.Uint64
	nanos   atomic.Uint64
}

func latencyBucket(d time.Duration) int {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	return i
}

// metrics are the server's counters. All fields are atomics: connections
// add to them concurrently.
type metrics struct {
	ops     [protocolCount][kindCount][resultCount]atomic.Uint64
	latency [protocolCount][kindCount]latencyHistogram

	connections         atomic.Int64 // open RESP connections
	connectionsAccepted atomic.Uint64
	connectionsRejected atomic.Uint64
	commandsOther       atomic.Uint64 // PING, HELLO, AUTH, ...
	commandErrors       atomic.Uint64 // -ERR for a malformed or unknown command
	protocolErrors      atomic.Uint64 // fatal framing errors (connection closed)
	pipeline            [len(pipelineBounds) + 1]atomic.Uint64
	pipelineCount       atomic.Uint64
	pipelineSum         atomic.Uint64
	httpRequests        atomic.Uint64
	httpBadRequests     atomic.Uint64
}

// opTally accumulates one pipeline's op outcomes on a connection, so that
// the shared counters see one add per distinct (kind, result).
type opTally struct {
	counts [kindCount][resultCount]uint32
	any    bool
}

func (t *opTally) add(k inventory.Kind, r result) {
	t.counts[k][r]++
	t.any = true
}

// flush adds the tally to m with latency d for every op in it, and clears it.
func (m *metrics) flush(p protocol, t *opTally, d time.Duration) {
	if !t.any {
		return
	}
	b := latencyBucket(d)
	for k := range t.counts {
		var n uint64
		for r, c := range t.counts[k] {
			if c != 0 {
				m.ops[p][k][r].Add(uint64(c))
				n += uint64(c)
				t.counts[k][r] = 0
			}
		}
		if n != 0 {
			h := &m.latency[p][k]
			h.buckets[b].Add(n)
			h.count.Add(n)
			h.nanos.Add(n * uint64(d))
		}
	}
	t.any = false
}

func (m *metrics) observePipeline(n int) {
	i := 0
	for i < len(pipelineBounds) && int64(n) > pipelineBounds[i] {
		i++
	}
	m.pipeline[i].Add(1)
	m.pipelineCount.Add(1)
	m.pipelineSum.Add(uint64(n))
}

// write writes every metric, the engine's included, in the Prometheus text
// format.
func (m *metrics) write(w io.Writer, es engine.Stats) error {
	p := &promWriter{w: w}
	p.help("allot_ops_total", "counter", "Ops answered, by protocol, op and result (ok, insufficient, not_found, invalid, overflow, error).")
	for pr := range protocolCount {
		for k := 1; k < kindCount; k++ {
			for r := range result(resultCount) {
				p.sample("allot_ops_total", fmt.Sprintf(`{protocol=%q,op=%q,result=%q}`, protocolNames[pr], inventory.Kind(k).String(), r.String()), float64(m.ops[pr][k][r].Load()))
			}
		}
	}
	p.help("allot_op_duration_seconds", "histogram", "Op latency inside the server, from the read of the request to the write of its reply.")
	latencyLE := durationBounds(latencyBounds[:])
	for pr := range protocolCount {
		for k := 1; k < kindCount; k++ {
			h := &m.latency[pr][k]
			counts := make([]uint64, len(h.buckets))
			for i := range h.buckets {
				counts[i] = h.buckets[i].Load()
			}
			labels := fmt.Sprintf(`protocol=%q,op=%q`, protocolNames[pr], inventory.Kind(k).String())
			p.histogram("allot_op_duration_seconds", labels, latencyLE, counts, float64(h.nanos.Load())/1e9, float64(h.count.Load()))
		}
	}
	p.single("allot_resp_connections", "gauge", "Open RESP connections.", float64(m.connections.Load()))
	p.single("allot_resp_connections_accepted_total", "counter", "RESP connections accepted.", float64(m.connectionsAccepted.Load()))
	p.single("allot_resp_connections_rejected_total", "counter", "RESP connections refused because the connections max was reached.", float64(m.connectionsRejected.Load()))
	p.single("allot_resp_commands_other_total", "counter", "RESP commands that are not ops (PING, ECHO, HELLO, AUTH, CLIENT, COMMAND, QUIT).", float64(m.commandsOther.Load()))
	p.single("allot_resp_command_errors_total", "counter", "RESP commands refused with -ERR before reaching the engine (unknown, wrong arity, bad argument, over a limit).", float64(m.commandErrors.Load()))
	p.single("allot_resp_protocol_errors_total", "counter", "RESP connections closed for a framing error.", float64(m.protocolErrors.Load()))
	p.help("allot_resp_pipeline_commands", "histogram", "Commands served per round on one connection (the pipeline depth seen by the server).")
	counts := make([]uint64, len(m.pipeline))
	for i := range m.pipeline {
		counts[i] = m.pipeline[i].Load()
	}
	p.histogram("allot_resp_pipeline_commands", "", intBounds(pipelineBounds[:]), counts, float64(m.pipelineSum.Load()), float64(m.pipelineCount.Load()))
	p.single("allot_http_requests_total", "counter", "HTTP requests served.", float64(m.httpRequests.Load()))
	p.single("allot_http_bad_requests_total", "counter", "HTTP requests answered 400.", float64(m.httpBadRequests.Load()))

	p.single("allot_engine_requests_total", "counter", "Replies the engine released after their journal write (ops and reads).", float64(es.Requests))
	p.single("allot_engine_journaled_ops_total", "counter", "Ops written to the journal since the engine opened.", float64(es.Journaled))
	p.single("allot_engine_batches_total", "counter", "Journal flushes: one write each, and one fdatasync in fsync mode.", float64(es.Batches))
	p.single("allot_engine_journal_bytes", "gauge", "Bytes in the journal.", float64(es.JournalBytes))
	p.single("allot_engine_snapshots_total", "counter", "Snapshots written.", float64(es.Snapshots))
	failed := 0.0
	if es.Failed {
		failed = 1
	}
	p.single("allot_engine_failed", "gauge", "1 when a journal write or sync failed and the engine refuses requests.", failed)
	p.help("allot_engine_batch_size", "histogram", "Replies released per journal flush.")
	// Every reply is in exactly one flush: their count is the sum.
	p.histogram("allot_engine_batch_size", "", intBounds(engine.BatchSizeBounds[:]), toUint64(es.BatchSize[:]), float64(es.Requests), float64(es.Batches))
	p.help("allot_engine_fsync_duration_seconds", "histogram", "fdatasync latency of the journal.")
	p.histogram("allot_engine_fsync_duration_seconds", "", durationBounds(engine.SyncLatencyBounds[:]), toUint64(es.SyncLatency[:]), es.SyncSeconds, float64(es.Syncs))
	return p.err
}

// durationBounds and intBounds format histogram bounds as "le" labels.
func durationBounds(b []time.Duration) []string {
	out := make([]string, len(b))
	for i, d := range b {
		out[i] = strconv.FormatFloat(d.Seconds(), 'g', -1, 64)
	}
	return out
}

func intBounds(b []int64) []string {
	out := make([]string, len(b))
	for i, v := range b {
		out[i] = strconv.FormatInt(v, 10)
	}
	return out
}

func toUint64(a []int64) []uint64 {
	out := make([]uint64, len(a))
	for i, v := range a {
		out[i] = uint64(v)
	}
	return out
}

type promWriter struct {
	w   io.Writer
	err error
	buf []byte
}

func (p *promWriter) help(name, typ, help string) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// single writes a metric of one sample without labels.
func (p *promWriter) single(name, typ, help string, v float64) {
	p.help(name, typ, help)
	p.sample(name, "", v)
}

// histogram writes the samples of one histogram series: counts per bucket
// (the last one above every bound) become cumulative le buckets.
func (p *promWriter) histogram(name, labels string, le []string, counts []uint64, sum, count float64) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	var cum uint64
	for i, c := range counts {
		cum += c
		bound := "+Inf"
		if i < len(le) {
			bound = le[i]
		}
		p.sample(name+"_bucket", "{"+labels+sep+`le="`+bound+`"}`, float64(cum))
	}
	braced := ""
	if labels != "" {
		braced = "{" + labels + "}"
	}
	p.sample(name+"_sum", braced, sum)
	p.sample(name+"_count", braced, count)
}

func (p *promWriter) sample(name, labels string, v float64) {
	if p.err != nil {
		return
	}
	p.buf = append(p.buf[:0], name...)
	p.buf = append(p.buf, labels...)
	p.buf = append(p.buf, ' ')
	p.buf = strconv.AppendFloat(p.buf, v, 'f', -1, 64) // counts print as integers, not 1e+06
	p.buf = append(p.buf, '\n')
	_, p.err = p.w.Write(p.buf)
}
