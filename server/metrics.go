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
	for pr := range protocolCount {
		for k := 1; k < kindCount; k++ {
			h := &m.latency[pr][k]
			labels := fmt.Sprintf(`protocol=%q,op=%q`, protocolNames[pr], inventory.Kind(k).String())
			var cum uint64
			for i := range h.buckets {
				cum += h.buckets[i].Load()
				le := "+Inf"
				if i < len(latencyBounds) {
					le = strconv.FormatFloat(latencyBounds[i].Seconds(), 'g', -1, 64)
				}
				p.sample("allot_op_duration_seconds_bucket", "{"+labels+`,le="`+le+`"}`, float64(cum))
			}
			p.sample("allot_op_duration_seconds_sum", "{"+labels+"}", float64(h.nanos.Load())/1e9)
			p.sample("allot_op_duration_seconds_count", "{"+labels+"}", float64(h.count.Load()))
		}
	}
	p.help("allot_resp_connections", "gauge", "Open RESP connections.")
	p.sample("allot_resp_connections", "", float64(m.connections.Load()))
	p.help("allot_resp_connections_accepted_total", "counter", "RESP connections accepted.")
	p.sample("allot_resp_connections_accepted_total", "", float64(m.connectionsAccepted.Load()))
	p.help("allot_resp_connections_rejected_total", "counter", "RESP connections refused because the connections max was reached.")
	p.sample("allot_resp_connections_rejected_total", "", float64(m.connectionsRejected.Load()))
	p.help("allot_resp_commands_other_total", "counter", "RESP commands that are not ops (PING, HELLO, AUTH, CLIENT, COMMAND, QUIT).")
	p.sample("allot_resp_commands_other_total", "", float64(m.commandsOther.Load()))
	p.help("allot_resp_command_errors_total", "counter", "RESP commands refused with -ERR before reaching the engine (unknown, wrong arity, bad argument, over a limit).")
	p.sample("allot_resp_command_errors_total", "", float64(m.commandErrors.Load()))
	p.help("allot_resp_protocol_errors_total", "counter", "RESP connections closed for a framing error.")
	p.sample("allot_resp_protocol_errors_total", "", float64(m.protocolErrors.Load()))
	p.help("allot_resp_pipeline_commands", "histogram", "Commands served per round on one connection (the pipeline depth seen by the server).")
	var cum uint64
	for i := range m.pipeline {
		cum += m.pipeline[i].Load()
		le := "+Inf"
		if i < len(pipelineBounds) {
			le = strconv.FormatInt(pipelineBounds[i], 10)
		}
		p.sample("allot_resp_pipeline_commands_bucket", `{le="`+le+`"}`, float64(cum))
	}
	p.sample("allot_resp_pipeline_commands_sum", "", float64(m.pipelineSum.Load()))
	p.sample("allot_resp_pipeline_commands_count", "", float64(m.pipelineCount.Load()))
	p.help("allot_http_requests_total", "counter", "HTTP requests served.")
	p.sample("allot_http_requests_total", "", float64(m.httpRequests.Load()))
	p.help("allot_http_bad_requests_total", "counter", "HTTP requests answered 400.")
	p.sample("allot_http_bad_requests_total", "", float64(m.httpBadRequests.Load()))

	p.help("allot_engine_requests_total", "counter", "Requests applied by the engine (ops and reads).")
	p.sample("allot_engine_requests_total", "", float64(es.Requests))
	p.help("allot_engine_journaled_ops_total", "counter", "Ops written to the journal.")
	p.sample("allot_engine_journaled_ops_total", "", float64(es.Journaled))
	p.help("allot_engine_batches_total", "counter", "Batches applied by the engine's writer.")
	p.sample("allot_engine_batches_total", "", float64(es.Batches))
	p.help("allot_engine_journal_bytes", "gauge", "Bytes in the journal.")
	p.sample("allot_engine_journal_bytes", "", float64(es.JournalBytes))
	p.help("allot_engine_snapshots_total", "counter", "Snapshots written.")
	p.sample("allot_engine_snapshots_total", "", float64(es.Snapshots))
	p.help("allot_engine_failed", "gauge", "1 when a journal write or sync failed and the engine refuses requests.")
	failed := 0.0
	if es.Failed {
		failed = 1
	}
	p.sample("allot_engine_failed", "", failed)
	p.help("allot_engine_batch_size", "histogram", "Requests per engine batch (one journal write).")
	var cumB int64
	for i, c := range es.BatchSize {
		cumB += c
		le := "+Inf"
		if i < len(engine.BatchSizeBounds) {
			le = strconv.FormatInt(engine.BatchSizeBounds[i], 10)
		}
		p.sample("allot_engine_batch_size_bucket", `{le="`+le+`"}`, float64(cumB))
	}
	// Every request is in exactly one batch: their count is the sum.
	p.sample("allot_engine_batch_size_sum", "", float64(es.Requests))
	p.sample("allot_engine_batch_size_count", "", float64(es.Batches))
	p.help("allot_engine_fsync_duration_seconds", "histogram", "fdatasync latency of the journal.")
	var cumS int64
	for i, c := range es.SyncLatency {
		cumS += c
		le := "+Inf"
		if i < len(engine.SyncLatencyBounds) {
			le = strconv.FormatFloat(engine.SyncLatencyBounds[i].Seconds(), 'g', -1, 64)
		}
		p.sample("allot_engine_fsync_duration_seconds_bucket", `{le="`+le+`"}`, float64(cumS))
	}
	p.sample("allot_engine_fsync_duration_seconds_sum", "", es.SyncSeconds)
	p.sample("allot_engine_fsync_duration_seconds_count", "", float64(es.Syncs))
	return p.err
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

func (p *promWriter) sample(name, labels string, v float64) {
	if p.err != nil {
		return
	}
	p.buf = append(p.buf[:0], name...)
	p.buf = append(p.buf, labels...)
	p.buf = append(p.buf, ' ')
	p.buf = strconv.AppendFloat(p.buf, v, 'g', -1, 64)
	p.buf = append(p.buf, '\n')
	_, p.err = p.w.Write(p.buf)
}
