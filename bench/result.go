package bench

import (
	"encoding/json"
	"time"
)

// ResultsVersion is the version of the ResultsFile layout. It changes when a
// field changes meaning or is removed; adding a field does not change it.
const ResultsVersion = 1

// ResultsFile is what `allot bench --out` writes and `allot report` reads:
// everything needed to redraw every table and chart without running again.
type ResultsFile struct {
	Version int       `json:"version"`
	Started time.Time `json:"started"`
	// Command is the command line the results came from.
	Command []string `json:"command,omitempty"`
	// Environment describes the machine (CPU model, cores, Go version, OS,
	// kernel, allot's commit). It is filled from internal/sysinfo and kept
	// raw here so that bench does not depend on that package's layout.
	Environment json.RawMessage `json:"environment,omitempty"`
	Runs        []Result        `json:"runs"`
}

// Run statuses. Anything but StatusOK makes `allot bench` exit non-zero.
const (
	// StatusOK: the run finished and its check passed.
	StatusOK = "ok"
	// StatusCheckFailed: the run finished and the checker found violations.
	StatusCheckFailed = "check_failed"
	// StatusServerDown: the store's server could not be reached.
	StatusServerDown = "server_down"
	// StatusFailed: the store could not be opened or loaded, or the run
	// stopped early; Result.Error says why.
	StatusFailed = "failed"
)

// Result is one store run (one point of a sweep, one durability mode). It is
// also the object `allot bench --json` prints, one per line. Its JSON has
// one field more than the struct, "failed" (MarshalJSON).
type Result struct {
	Store string `json:"store"`
	// Description is the store's own line about server, version and
	// settings (store.Describer), empty if it has none.
	Description string       `json:"description,omitempty"`
	Workload    WorkloadInfo `json:"workload"`
	Workers     int          `json:"workers"`
	Durability  string       `json:"durability"`
	Pipeline    int          `json:"pipeline"`
	// Mode is "closed" (workers issue the next op when the previous one
	// returns) or "open" (ops issued on a schedule; see OpenLoop).
	Mode    string    `json:"mode"`
	Started time.Time `json:"started"`
	// Status is one of the Status constants; Error says what went wrong
	// when it is not "ok" or "check_failed".
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`

	// Ops is the number of ops completed (successfully or not); it is less
	// than Workload.Ops only when a --duration bound stopped the run.
	Ops int64 `json:"ops"`
	// Seconds is the wall time from the first op issued to the last op
	// completed; loading and checking are not included.
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// LatencyMS: in closed loop, the time of each store call
	// (Session.Capture or Session.Release), from just before the call to
	// just after it returns; a capture retried for stock gives one sample
	// per call and the retry sleeps are in none. In open loop, the response
	// time of each op, from its intended start to the return of its last
	// call (see OpenLoop).
	LatencyMS Latency `json:"latency_ms"`
	// Retries counts captures re-issued because the group had too little
	// stock at the time (concurrency reordered them after a release).
	Retries int64 `json:"retries"`
	// ConflictRetries counts transactions the store retried because of
	// deadlocks or serialization failures (store.Retrier).
	ConflictRetries int64 `json:"conflict_retries"`
	// Errors counts ops that failed: a Session error, an unexpected result
	// code, or a capture still insufficient after RetryMax retries.
	Errors int64 `json:"errors"`
	// ErrorSamples holds the first few error messages.
	ErrorSamples []string    `json:"error_samples,omitempty"`
	Check        CheckResult `json:"check"`

	// Throughput is the number of ops completed in each whole second of the
	// run, in order (the last, partial second is included), for at most
	// ThroughputSecondsMax seconds: ops of later seconds count in the last
	// one, so the counts always sum to the run's ops.
	Throughput []int64 `json:"throughput"`
	// Histogram is the merged HDR latency histogram (the one LatencyMS comes
	// from), values in HistogramUnit, encoded with hdrhistogram-go's Encode
	// (V2 compressed, base64).
	Histogram     string `json:"histogram,omitempty"`
	HistogramUnit string `json:"histogram_unit,omitempty"`

	// OpenLoop is set for open-loop runs.
	OpenLoop *OpenLoop `json:"open_loop,omitempty"`
	// Sweep is set when the run is one point of a --sweep.
	Sweep *SweepPoint `json:"sweep,omitempty"`

	// DataDirs are the file systems the store's data lay on (its journal,
	// write-ahead log or append-only file), so that a durability figure is
	// never read without knowing whether fsync reached a disk; empty when
	// the bench could not learn where the store keeps its data.
	DataDirs []DataDir `json:"data_dirs,omitempty"`

	// Server is what the run cost the store's server process (CPU, peak
	// memory), for stores that are a process on this machine
	// (store.ServerProcess); nil otherwise.
	Server *ServerUsage `json:"server,omitempty"`

	// Extra holds a workload kind's own figures (Kind), by name, for
	// example "expiry_lag_p99_ms" or "duplicates"; nil for "ims".
	Extra map[string]any `json:"extra,omitempty"`

	// OneDurableCallPerOp is set by a run whose every op waited for one
	// durable call, never two in sequence, with at most --pipeline ops in
	// flight per worker (KindRegistration.OneDurableCallPerOp's rule),
	// where the kind's op mix decides it run by run (rw: durable WRITE
	// with one record a call, say, but not MIXED's reads or --batch 10):
	// WriteBounds then reads its ops/s as a share of Bound, as it does
	// for a kind that declares it for all its runs.
	OneDurableCallPerOp bool `json:"one_durable_call_per_op,omitempty"`

	// Bound is the closed-loop limit measured before a run of durable
	// writes on a store that keeps its data (BoundApplies); nil, and left
	// out of the JSON, for other runs: write and none modes, read-only
	// workloads, the memory store.
	Bound *Bound `json:"bound,omitempty"`
	// Breakdown is the server's time per stage of an op during the run
	// (allot bench --breakdown, allot stores); nil otherwise.
	Breakdown *Breakdown `json:"breakdown,omitempty"`
}

// resultFields is Result without its methods, for MarshalJSON to encode
// the fields without calling itself.
type resultFields Result

// MarshalJSON encodes r with "failed": r.Failed() beside its fields: the
// verdict the table prints and the exit code gives. A run whose check
// passed but some of whose ops failed keeps "status": "ok" and "check":
// {"ok": true} (the check did pass on the others), and a reader of the
// JSON must not take those for a pass. It is computed, not stored, so it
// cannot disagree with the table; reading it back ignores it.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		resultFields
		Failed bool `json:"failed"`
	}{resultFields(r), r.Failed()})
}

// WorkloadInfo names the workload a run replayed.
type WorkloadInfo struct {
	Name string `json:"name"`
	Rows int    `json:"rows"`
	Ops  int    `json:"ops"`
	Seed uint64 `json:"seed"`
	// SKUs is the number of SKUs rows were drawn from.
	SKUs int `json:"skus,omitempty"`
	// File is the op file replayed, if any.
	File string `json:"file,omitempty"`
}

// Latency is a set of percentiles, in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// CheckResult is the checker's verdict.
type CheckResult struct {
	OK bool `json:"ok"`
	// Violations lists what was wrong, capped at ViolationsListMax entries;
	// ViolationCount counts them all.
	Violations     []string `json:"violations"`
	ViolationCount int      `json:"violation_count"`
}

// OpenLoop holds what only an open-loop run measures.
type OpenLoop struct {
	// Rate is the target, in ops per second.
	Rate float64 `json:"rate"`
	// Arrival is "constant" or "poisson".
	Arrival string `json:"arrival"`
	// ResponseMS is latency from each op's intended start to its completion
	// (the same as Result.LatencyMS): what a client waiting in line sees.
	ResponseMS Latency `json:"response_ms"`
	// ServiceMS is latency from the moment the op was actually sent.
	ServiceMS Latency `json:"service_ms"`
	// ServiceHistogram is the service-time HDR histogram, encoded like
	// Result.Histogram.
	ServiceHistogram string `json:"service_histogram,omitempty"`
	// LateOps counts ops sent later than LateThresholdMS after their
	// intended start; LatenessMaxMS is the largest such delay.
	LateOps         int64   `json:"late_ops"`
	LateThresholdMS float64 `json:"late_threshold_ms"`
	LatenessMaxMS   float64 `json:"lateness_max_ms"`
}

// SweepPoint labels a run that is one point of a sweep.
type SweepPoint struct {
	// Param is "workers", "rows" or "rate".
	Param string `json:"param"`
	// Value is the parameter's value at this point.
	Value float64 `json:"value"`
	// Label is "param=value", as given on the command line.
	Label string `json:"label"`
}

// DataDir is the file system of one data directory of a store.
type DataDir struct {
	Path string `json:"path"`
	// FSType is the kernel's name of the file system ("ext4", "tmpfs").
	FSType string `json:"fs_type"`
	// MountPoint and MountOptions are those of the mount holding Path
	// (options of the mount and of the file system, "rw,relatime,discard").
	MountPoint   string `json:"mount_point,omitempty"`
	MountOptions string `json:"mount_options,omitempty"`
	// Memory is true on tmpfs and ramfs, where fsync survives no power loss.
	Memory bool `json:"memory,omitempty"`
}

// String is "ext4 (rw,relatime)", with a warning on a memory file system.
func (d DataDir) String() string {
	if d.FSType == "" {
		return "unknown"
	}
	s := d.FSType + " (" + d.MountOptions + ")"
	if d.Memory {
		s += " in memory: fsync proves nothing"
	}
	return s
}
