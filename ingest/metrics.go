package ingest

import (
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics counts what the ingester did. Its methods are safe for
// concurrent use; WriteText writes the Prometheus text format.
type Metrics struct {
	Sets       atomic.Int64 // CATALOG.SET acknowledged (snapshot and stream)
	Dels       atomic.Int64 // CATALOG.DEL acknowledged
	Rejected   atomic.Int64 // rows allot refused as invalid (-ERR), skipped
	Retries    atomic.Int64 // sends repeated after an error
	Snapshot   atomic.Int64 // rows read by the snapshot
	Checkpoint atomic.Int64 // checkpoints written
	// Reconnects counts binlog streams started again after the
	// connection to the source was lost; ReconnectFailures the attempts
	// that failed. Connected is whether the binlog stream is up.
	Reconnects        atomic.Int64
	ReconnectFailures atomic.Int64
	Connected         atomic.Bool

	mu       sync.Mutex
	file     string
	pos      uint32
	lagLast  float64
	lagMax   float64
	lagSum   float64
	lagCount int64
	eventTS  int64
}

func (m *Metrics) position(file string, pos uint32) {
	m.mu.Lock()
	m.file, m.pos = file, pos
	m.mu.Unlock()
}

// lag records one acknowledged row of an event committed at ts (seconds).
func (m *Metrics) lag(ts uint32, now time.Time) {
	l := math.Max(0, float64(now.UnixMilli())/1e3-float64(ts))
	m.mu.Lock()
	m.lagLast = l
	m.lagMax = math.Max(m.lagMax, l)
	m.lagSum += l
	m.lagCount++
	m.eventTS = int64(ts)
	m.mu.Unlock()
}

// Lag returns the lag of the last acknowledged row and the largest, in
// seconds.
func (m *Metrics) Lag() (last, largest float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lagLast, m.lagMax
}

// WriteText writes the metrics in the Prometheus text format.
func (m *Metrics) WriteText(w io.Writer) {
	m.mu.Lock()
	file, pos, last, largest, sum, count, ts := m.file, m.pos, m.lagLast, m.lagMax, m.lagSum, m.lagCount, m.eventTS
	m.mu.Unlock()
	fmt.Fprintf(w, "# HELP allot_ingest_ops_total Catalog ops allot acknowledged, by command.\n# TYPE allot_ingest_ops_total counter\n")
	fmt.Fprintf(w, "allot_ingest_ops_total{op=\"catalog.set\"} %d\nallot_ingest_ops_total{op=\"catalog.del\"} %d\n", m.Sets.Load(), m.Dels.Load())
	fmt.Fprintf(w, "# HELP allot_ingest_rejected_total Source rows allot refused as invalid (skipped).\n# TYPE allot_ingest_rejected_total counter\nallot_ingest_rejected_total %d\n", m.Rejected.Load())
	fmt.Fprintf(w, "# HELP allot_ingest_retries_total Sends repeated after an error.\n# TYPE allot_ingest_retries_total counter\nallot_ingest_retries_total %d\n", m.Retries.Load())
	fmt.Fprintf(w, "# HELP allot_ingest_snapshot_rows_total Rows read by the initial snapshot.\n# TYPE allot_ingest_snapshot_rows_total counter\nallot_ingest_snapshot_rows_total %d\n", m.Snapshot.Load())
	fmt.Fprintf(w, "# HELP allot_ingest_checkpoints_total Checkpoints written.\n# TYPE allot_ingest_checkpoints_total counter\nallot_ingest_checkpoints_total %d\n", m.Checkpoint.Load())
	connected := 0
	if m.Connected.Load() {
		connected = 1
	}
	fmt.Fprintf(w, "# HELP allot_ingest_source_connected 1 while the binlog stream from the source is up, 0 while the ingester reconnects.\n# TYPE allot_ingest_source_connected gauge\nallot_ingest_source_connected %d\n", connected)
	fmt.Fprintf(w, "# HELP allot_ingest_reconnects_total Binlog streams started again after the connection to the source was lost.\n# TYPE allot_ingest_reconnects_total counter\nallot_ingest_reconnects_total %d\n", m.Reconnects.Load())
	fmt.Fprintf(w, "# HELP allot_ingest_reconnect_failures_total Attempts to reconnect to the source that failed (each is logged).\n# TYPE allot_ingest_reconnect_failures_total counter\nallot_ingest_reconnect_failures_total %d\n", m.ReconnectFailures.Load())
	fmt.Fprintf(w, "# HELP allot_ingest_lag_seconds Source commit to acknowledged in allot (searchable), last row; the source stamps events in whole seconds.\n# TYPE allot_ingest_lag_seconds gauge\nallot_ingest_lag_seconds %g\n", last)
	fmt.Fprintf(w, "# HELP allot_ingest_lag_seconds_max Largest lag so far.\n# TYPE allot_ingest_lag_seconds_max gauge\nallot_ingest_lag_seconds_max %g\n", largest)
	fmt.Fprintf(w, "# HELP allot_ingest_lag_seconds_sum Sum and count of lags, for a mean.\n# TYPE allot_ingest_lag_seconds_sum counter\nallot_ingest_lag_seconds_sum %g\nallot_ingest_lag_seconds_count %d\n", sum, count)
	fmt.Fprintf(w, "# HELP allot_ingest_source_timestamp_seconds Commit time of the last applied event.\n# TYPE allot_ingest_source_timestamp_seconds gauge\nallot_ingest_source_timestamp_seconds %d\n", ts)
	fmt.Fprintf(w, "# HELP allot_ingest_binlog_position Binlog position of the last applied event.\n# TYPE allot_ingest_binlog_position gauge\nallot_ingest_binlog_position{file=%q} %d\n", file, pos)
}
