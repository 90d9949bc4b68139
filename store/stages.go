package store

import "context"

// StageReporter is an optional Store capability: a server that times the
// stages an op goes through inside it (allot serve: socket read, parse,
// queue wait, batch wait, journal write, fdatasync, wake, reply written)
// reports those times, cumulative since it started. The bench reads them
// before and after a run and prints the difference (allot bench
// --breakdown).
type StageReporter interface {
	// Stages returns one histogram per stage, in the server's stage order.
	Stages(ctx context.Context) ([]StageHistogram, error)
}

// StageHistogram is the cumulative histogram of one stage's durations.
type StageHistogram struct {
	Stage string
	// Bounds are the buckets' upper bounds in seconds, ascending; Counts[i]
	// counts the samples <= Bounds[i] (cumulative, as Prometheus does), and
	// Count all of them.
	Bounds []float64
	Counts []uint64
	Count  uint64
	// Sum is the total of the samples, in seconds.
	Sum float64
}
