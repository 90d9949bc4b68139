package bench

import (
	"fmt"
	"time"

	"allot/store"
)

// Defaults and bounds of RunConfig.
const (
	// WorkersDefault is the published runs' 16 client threads.
	WorkersDefault = 16
	// WorkersMax bounds the number of workers (each holds a session and a
	// latency histogram of about 340 KB).
	WorkersMax = 1 << 14
	// RetryDelayDefault is the original test's 5 ms sleep before retrying a
	// capture that found too little stock.
	RetryDelayDefault = 5 * time.Millisecond
	// RetryMaxDefault bounds the stock retries of one capture (5 s of
	// sleeping at the default delay); past it the capture counts as an
	// error. The original retried forever, which turns a store that lost
	// stock into a hung bench.
	RetryMaxDefault = 1000
	// LateThresholdDefault: in open loop, an op sent more than this after
	// its intended start counts as late. Sleeping to a deadline on a
	// timerfd (internal/hrsleep) overshoots by tens of microseconds on a
	// busy machine (p50 74 µs, p99 0.5 ms on a 2-vCPU VM at load 8); a
	// millisecond is above that noise and below any stall worth reporting.
	LateThresholdDefault = time.Millisecond
)

// Arrival processes of the open loop.
const (
	// ArrivalConstant spaces ops exactly 1/rate apart.
	ArrivalConstant = "constant"
	// ArrivalPoisson draws exponential gaps of mean 1/rate (a seeded,
	// replayable stream).
	ArrivalPoisson = "poisson"
)

// RunConfig says how to drive a store. The labels (Store, Durability,
// Pipeline, Sweep) are copied into the Result and change nothing else.
type RunConfig struct {
	// Workers is the number of sessions issuing ops at once (default 16).
	// In open loop it bounds the ops in flight: when all are busy, the next
	// op starts late, and its response time shows it.
	Workers int
	// RetryDelay is the sleep before retrying a capture that found too
	// little stock (default 5 ms); RetryMax bounds those retries per
	// capture (default 1000). A negative RetryMax means no retries.
	RetryDelay time.Duration
	RetryMax   int
	// Duration, when positive, stops issuing ops after that long even if
	// the workload has more.
	Duration time.Duration
	// Rate, when positive, selects the open loop: ops are issued at Rate
	// per second following Arrival ("constant", the default, or
	// "poisson"), and latency counts from each op's intended start.
	Rate    float64
	Arrival string
	// ArrivalSeed seeds the Poisson gaps.
	ArrivalSeed uint64
	// LateThreshold: an open-loop op sent later than this after its
	// intended start is counted late (default 1 ms).
	LateThreshold time.Duration
	// Progress, when set, is called about four times a second from a
	// separate goroutine while ops run, and once at the end.
	Progress func(Progress)
	// Timed, when set, is called just before the timed part starts (begin
	// true) and just after its last op ended (false), on the run's own
	// goroutine: what a probe of the server reads there describes the
	// timed ops alone, not the load before them nor the check's
	// read-back after. Its time is in no figure of the run.
	Timed func(begin bool)

	// Labels for the Result.
	Store      string
	Durability store.Durability
	Pipeline   int
	Sweep      *SweepPoint
	// WorkloadFile names the op file the workload came from, if any.
	WorkloadFile string
}

// Validate fills defaults and checks the fields.
func (c *RunConfig) Validate() error {
	if c.Workers == 0 {
		c.Workers = WorkersDefault
	}
	if c.Workers < 1 || c.Workers > WorkersMax {
		return fmt.Errorf("bench: workers must be from 1 to %d, got %d", WorkersMax, c.Workers)
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = RetryDelayDefault
	}
	if c.RetryDelay < 0 || c.RetryDelay > time.Minute {
		return fmt.Errorf("bench: retry delay must be from 0 to 1m, got %v", c.RetryDelay)
	}
	if c.RetryMax == 0 {
		c.RetryMax = RetryMaxDefault
	}
	if c.RetryMax < 0 {
		c.RetryMax = 0
	}
	if c.Duration < 0 {
		return fmt.Errorf("bench: duration must not be negative, got %v", c.Duration)
	}
	if c.Rate < 0 || c.Rate > 1e9 {
		return fmt.Errorf("bench: rate must be from 0 (closed loop) to 1e9 ops/s, got %g", c.Rate)
	}
	if c.Arrival == "" {
		c.Arrival = ArrivalConstant
	}
	if c.Arrival != ArrivalConstant && c.Arrival != ArrivalPoisson {
		return fmt.Errorf("bench: arrival must be %q or %q, got %q", ArrivalConstant, ArrivalPoisson, c.Arrival)
	}
	if c.LateThreshold == 0 {
		c.LateThreshold = LateThresholdDefault
	}
	if c.LateThreshold < 0 {
		return fmt.Errorf("bench: late threshold must be positive, got %v", c.LateThreshold)
	}
	if c.Durability == "" {
		c.Durability = store.DurabilityFsync
	}
	if c.Pipeline == 0 {
		c.Pipeline = 1
	}
	return nil
}

// OpenLoop reports whether the config selects the open loop.
func (c *RunConfig) OpenLoop() bool { return c.Rate > 0 }
