package bench

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Progress is a snapshot of a running store, for a live progress line.
type Progress struct {
	Store string
	// Done and Total count ops; Total is the workload's op count (a
	// --duration bound may end the run before Done reaches it).
	Done, Total int64
	Elapsed     time.Duration
	// OpsPerSec is the rate over the last interval.
	OpsPerSec float64
	// P99 is the 99th percentile latency so far, from a coarse histogram
	// (within 25%), good for a progress line, not for results.
	P99 time.Duration
	// ETA is the time left at the current rate, or until the duration
	// bound, whichever is sooner; 0 when unknown.
	ETA time.Duration
	// Errors counts ops that failed so far.
	Errors int64
	// Final is set on the last call.
	Final bool
}

// coarseHistogram is a lock-free log-linear histogram (4 sub-buckets per
// power of two) that a sampler can read while workers write it: what a
// progress line needs, at the cost of one uncontended atomic add per store
// call, paid only when progress is shown.
type coarseHistogram struct {
	counts [64 * 4]atomic.Int64
}

func coarseBucket(ns int64) int {
	if ns < 4 {
		return int(max(ns, 0))
	}
	l := bits.Len64(uint64(ns)) // >= 3
	sub := int(uint64(ns)>>(l-3)) & 3
	return (l-2)*4 + sub
}

// coarseValue returns the (exclusive) upper bound of bucket b.
func coarseValue(b int) int64 {
	if b < 4 {
		return int64(b) + 1
	}
	l := b/4 + 2
	sub := b % 4
	return int64(4+sub+1) << (l - 3)
}

func (c *coarseHistogram) record(ns int64) { c.counts[coarseBucket(ns)].Add(1) }

// quantile returns the q-quantile (0..1) of the sum of hs.
func coarseQuantile(hs []*coarseHistogram, q float64) time.Duration {
	var sums [len(coarseHistogram{}.counts)]int64
	var total int64
	for _, h := range hs {
		for i := range h.counts {
			n := h.counts[i].Load()
			sums[i] += n
			total += n
		}
	}
	if total == 0 {
		return 0
	}
	rank := int64(q * float64(total))
	var seen int64
	for i, n := range sums {
		seen += n
		if seen > rank {
			return time.Duration(coarseValue(i))
		}
	}
	return time.Duration(coarseValue(len(sums) - 1))
}
