package engine

import (
	"sync/atomic"
	"time"

	"allot/inventory"
)

// BatchSizeBounds are the upper bounds (inclusive) of the batch size
// histogram's buckets; a last bucket counts everything larger.
var BatchSizeBounds = [...]int64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192}

// SyncLatencyBounds are the upper bounds of the fdatasync latency
// histogram's buckets.
var SyncLatencyBounds = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second,
}

// Stats is a snapshot of the engine's counters, for metrics. Histogram
// bucket i counts values <= the i-th bound and above the previous one; the
// last bucket counts values above every bound.
type Stats struct {
	Requests     int64 // requests applied (ops and reads), as of the last flush
	Journaled    int64 // ops added to the journal since Open
	Batches      int64 // flushes that covered requests: each one write, and one fdatasync in fsync mode
	JournalBytes int64
	Syncs        int64
	SyncSeconds  float64 // total time in fdatasync
	Snapshots    int64
	BatchSize    [len(BatchSizeBounds) + 1]int64
	SyncLatency  [len(SyncLatencyBounds) + 1]int64
	Failed       bool // a journal write or sync failed; the engine refuses requests
	// KeysRefused counts requests refused because they brought a new
	// idempotency key at Config.KeysMax; KeysMax is that limit.
	KeysRefused int64
	KeysMax     int

	// The state machine's counters: holds held, expired, repeats answered
	// from a key, mismatches, capped returns, keys remembered.
	State inventory.Stats
	// ExpiryLag counts expiries by how long after its deadline (by the
	// engine's clock) each hold's units came back, with the bounds of
	// ExpiryLagBounds; ExpiryLagMax is the largest.
	ExpiryLag        [len(ExpiryLagBounds) + 1]int64
	ExpiryLagMax     time.Duration
	ExpiryLagSeconds float64 // the sum of every expiry's lag
}

// ExpiryLagBounds are the upper bounds of the expiry lag histogram's
// buckets.
var ExpiryLagBounds = [...]time.Duration{
	time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 5 * time.Second,
}

type stats struct {
	requests     atomic.Int64
	batches      atomic.Int64
	syncs        atomic.Int64
	syncNanos    atomic.Int64
	snapshots    atomic.Int64
	keysRefused  atomic.Int64
	batchSize    [len(BatchSizeBounds) + 1]atomic.Int64
	syncLatency  [len(SyncLatencyBounds) + 1]atomic.Int64
	expiryLag    [len(ExpiryLagBounds) + 1]atomic.Int64
	expiryLagMax atomic.Int64 // nanoseconds
	expiryLagSum atomic.Int64 // nanoseconds
}

// expiry records a hold expired lagMS milliseconds after its deadline.
func (s *stats) expiry(lagMS int64) {
	d := time.Duration(max(lagMS, 0)) * time.Millisecond
	i := 0
	for i < len(ExpiryLagBounds) && d > ExpiryLagBounds[i] {
		i++
	}
	s.expiryLag[i].Add(1)
	s.expiryLagSum.Add(int64(d))
	if int64(d) > s.expiryLagMax.Load() {
		s.expiryLagMax.Store(int64(d))
	}
}

func (s *stats) batch(size int) {
	if size == 0 {
		return
	}
	s.requests.Add(int64(size))
	s.batches.Add(1)
	i := 0
	for i < len(BatchSizeBounds) && int64(size) > BatchSizeBounds[i] {
		i++
	}
	s.batchSize[i].Add(1)
}

func (s *stats) sync(d time.Duration) {
	s.syncs.Add(1)
	s.syncNanos.Add(int64(d))
	i := 0
	for i < len(SyncLatencyBounds) && d > SyncLatencyBounds[i] {
		i++
	}
	s.syncLatency[i].Add(1)
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	s := &e.stats
	out := Stats{
		Requests: s.requests.Load(),
		Batches:  s.batches.Load(),
		// From the journal itself: in write and none modes frames are
		// written under mu, not by the flusher.
		JournalBytes: e.journal.Bytes(),
		Syncs:        s.syncs.Load(),
		SyncSeconds:  float64(s.syncNanos.Load()) / 1e9,
		Snapshots:    s.snapshots.Load(),
		KeysRefused:  s.keysRefused.Load(),
		KeysMax:      e.cfg.KeysMax,
	}
	e.mu.Lock()
	out.Failed = e.failure != nil
	out.Journaled = e.journaled
	out.State = e.state.Stats()
	e.mu.Unlock()
	for i := range s.expiryLag {
		out.ExpiryLag[i] = s.expiryLag[i].Load()
	}
	out.ExpiryLagMax = time.Duration(s.expiryLagMax.Load())
	out.ExpiryLagSeconds = float64(s.expiryLagSum.Load()) / 1e9
	for i := range s.batchSize {
		out.BatchSize[i] = s.batchSize[i].Load()
	}
	for i := range s.syncLatency {
		out.SyncLatency[i] = s.syncLatency[i].Load()
	}
	return out
}
