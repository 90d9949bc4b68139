package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"allot/store"
	"allot/vfs"
)

// Bound is the closed-loop limit a run of durable writes is read against,
// measured on the machine just before the run (BoundApplies says which
// runs have one).
//
// With N ops in flight (W workers, each keeping --pipeline P ops in flight:
// N = W x P), an op cannot be acknowledged before its journal write is
// durable, so no store does more than N / fdatasync ops per second (the
// round trips of the next ops overlapping the sync), and a store whose ops
// wait for the sync and then travel back and forth does at most
// N / (fdatasync + round trip). A figure is only good or bad against these,
// not against another store's.
type Bound struct {
	// Dir is where fdatasync was timed: the store's data directory, or a
	// temporary one on the same file system as the bench's.
	Dir string `json:"dir"`
	// FsyncP50MS is the median of FsyncSamples write+fdatasync calls, each
	// writing 4 KiB into a preallocated, synced file (the journal's case:
	// data blocks only, no metadata).
	FsyncP50MS   float64 `json:"fsync_p50_ms"`
	FsyncSamples int     `json:"fsync_samples"`
	// RTTP50MS is the median PING round trip with the store's own client,
	// Workers sessions pinging at once; 0 when not measured: a store in
	// the bench's process has no round trip (InProcess), a server store
	// whose sessions have no store.Pinger (PostgreSQL, MariaDB, dtm,
	// RabbitMQ) one the bench cannot time.
	RTTP50MS   float64 `json:"rtt_p50_ms,omitempty"`
	RTTSamples int     `json:"rtt_samples,omitempty"`
	// InProcess: the store runs in the bench's process (its
	// store.ServerProcess is the bench's pid), so there is no round trip.
	InProcess bool `json:"in_process,omitempty"`
	Workers   int  `json:"workers"`
	// InFlight is the ops the run keeps in flight: Workers x the run's
	// pipeline depth (Workers at depth 1).
	InFlight int `json:"in_flight"`
	// OpsPerSecFsync is InFlight / fdatasync: the ceiling when round trips
	// overlap the syncs.
	OpsPerSecFsync float64 `json:"ops_per_sec_fsync"`
	// OpsPerSecFsyncRTT is InFlight / (fdatasync + round trip): the
	// ceiling when they do not. Equal to OpsPerSecFsync without a round
	// trip.
	OpsPerSecFsyncRTT float64 `json:"ops_per_sec_fsync_rtt"`
}

// Bound sample counts: a few hundred of each keeps the measurement near a
// tenth of a second on a disk doing ~0.1-0.5 ms per fdatasync.
const (
	BoundFsyncSamples = 300
	BoundRTTSamples   = 2000 // over all workers together
	boundBlockBytes   = 4096
)

// MeasureBound measures fdatasync in dir (a temporary directory when
// empty) and, when st's sessions are store.Pinger, the round trip of
// workers sessions pinging at once; the run keeps pipeline ops in flight
// per worker. A nil st is a store with no inventory sessions to ping on
// (one that does not run the reservation workload): the round trip is
// not measured.
func MeasureBound(ctx context.Context, st store.Store, dir string, workers, pipeline int) (*Bound, error) {
	if workers < 1 {
		return nil, fmt.Errorf("bench: bound: workers must be positive, got %d", workers)
	}
	if pipeline < 1 {
		return nil, fmt.Errorf("bench: bound: pipeline must be positive, got %d", pipeline)
	}
	fsync, dir, err := MeasureFsync(dir, BoundFsyncSamples)
	if err != nil {
		return nil, err
	}
	b := &Bound{Dir: dir, FsyncP50MS: millis(fsync), FsyncSamples: BoundFsyncSamples, Workers: workers, InFlight: workers * pipeline}
	var rtt time.Duration
	if st != nil {
		var n int
		rtt, n, err = MeasureRTT(ctx, st, workers, BoundRTTSamples)
		if err != nil {
			return nil, err
		}
		b.RTTP50MS, b.RTTSamples = millis(rtt), n
		b.InProcess = n == 0 && inProcess(ctx, st)
	}
	b.OpsPerSecFsync = float64(b.InFlight) / fsync.Seconds()
	b.OpsPerSecFsyncRTT = float64(b.InFlight) / (fsync + rtt).Seconds()
	return b, nil
}

func millis(d time.Duration) float64 { return float64(d) / 1e6 }

// inProcess reports whether st runs in the bench's process, as
// StartServerMeter tells it: its store.ServerProcess is this process.
func inProcess(ctx context.Context, st store.Store) bool {
	sp, ok := st.(store.ServerProcess)
	if !ok {
		return false
	}
	pid, err := sp.ServerPID(ctx)
	return err == nil && pid == os.Getpid()
}

// MeasureFsync writes n 4 KiB blocks, one after another, into a file
// preallocated with zeros and synced first, and returns the median time of
// one write plus fdatasync, and the directory it used. The file is removed.
func MeasureFsync(dir string, n int) (time.Duration, string, error) {
	if n < 1 {
		return 0, dir, fmt.Errorf("bench: fsync samples must be positive, got %d", n)
	}
	if dir == "" {
		dir = os.TempDir()
	}
	name := filepath.Join(dir, fmt.Sprintf("allot-fsync-probe-%d-%d", os.Getpid(), time.Now().UnixNano()))
	f, err := vfs.OS{}.Create(name)
	if err != nil {
		return 0, dir, fmt.Errorf("bench: fsync probe in %s: %w", dir, err)
	}
	defer os.Remove(name)
	defer f.Close()
	block := make([]byte, boundBlockBytes)
	if _, err := f.WriteAt(make([]byte, n*boundBlockBytes), 0); err != nil {
		return 0, dir, fmt.Errorf("bench: fsync probe preallocate: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, dir, fmt.Errorf("bench: fsync probe: %w", err)
	}
	samples := make([]time.Duration, n)
	for i := range samples {
		block[0] = byte(i + 1) // a change in every block: a real write
		start := time.Now()
		if _, err := f.WriteAt(block, int64(i*boundBlockBytes)); err != nil {
			return 0, dir, fmt.Errorf("bench: fsync probe write: %w", err)
		}
		if err := f.Sync(); err != nil { // vfs.OS: fdatasync
			return 0, dir, fmt.Errorf("bench: fsync probe fdatasync: %w", err)
		}
		samples[i] = time.Since(start)
	}
	return median(samples), dir, nil
}

// MeasureRTT opens workers sessions of st and, if they are store.Pinger,
// has them ping at once until n round trips (n/workers each, at least 10)
// are timed, after a warm-up; it returns their median and the number of
// samples. A store without Pinger gives 0, 0, nil.
func MeasureRTT(ctx context.Context, st store.Store, workers, n int) (time.Duration, int, error) {
	sessions := make([]store.Session, 0, workers)
	defer func() {
		for _, se := range sessions {
			se.Close()
		}
	}()
	for range workers {
		se, err := st.Session(ctx)
		if err != nil {
			return 0, 0, fmt.Errorf("bench: bound: opening a session: %w", err)
		}
		sessions = append(sessions, se)
		if _, ok := se.(store.Pinger); !ok {
			return 0, 0, nil
		}
	}
	each := max(10, n/workers)
	const warmup = 20
	all := make([][]time.Duration, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i, se := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := se.(store.Pinger)
			samples := make([]time.Duration, 0, each)
			for j := range warmup + each {
				start := time.Now()
				if err := p.Ping(ctx); err != nil {
					errs[i] = err
					return
				}
				if j >= warmup {
					samples = append(samples, time.Since(start))
				}
			}
			all[i] = samples
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, fmt.Errorf("bench: bound: ping: %w", err)
	}
	merged := slices.Concat(all...)
	return median(merged), len(merged), nil
}

// median sorts d and returns its middle value, or the mean of its two
// middle values when their count is even.
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	m := len(d) / 2
	if len(d)%2 == 0 {
		return d[m-1] + (d[m]-d[m-1])/2
	}
	return d[m]
}

// inFlight is InFlight, or Workers for a bound recorded before InFlight
// was (a results file of an earlier version, at depth 1).
// InFlightOps is the ops in flight the bound counts: workers x pipeline
// (Workers, for a bound recorded before InFlight was).
func (b *Bound) InFlightOps() int {
	if b.InFlight == 0 {
		return b.Workers
	}
	return b.InFlight
}

// BoundOf returns r's bound, nil when r has none to be read against (none
// recorded, or a run that never happened).
func BoundOf(r *Result) *Bound {
	if r.Status == StatusFailed || r.Status == StatusServerDown {
		return nil
	}
	return r.Bound
}

// Share returns opsPerSec as a fraction of both bounds.
func (b *Bound) Share(opsPerSec float64) (ofFsync, ofFsyncRTT float64) {
	if b == nil || b.OpsPerSecFsync == 0 {
		return 0, 0
	}
	return opsPerSec / b.OpsPerSecFsync, opsPerSec / b.OpsPerSecFsyncRTT
}

// BoundShareNote says why r's ops/s cannot be read as a share of its
// bound, "" when it can. The bound counts one durable call per op in
// flight: true of the reservation workload's captures and releases, of
// a kind that declares it (KindRegistration.OneDurableCallPerOp) and of
// a run that declares it (Result.OneDurableCallPerOp: an rw run of
// durable writes, one record a call). Where a call carries several ops
// (rw's --transactional --batch) or an op makes several calls (a
// checkout cart), the share would be off by that factor.
func BoundShareNote(r *Result) string {
	k := kindOf(r)
	if k == "" || r.OneDurableCallPerOp {
		return ""
	}
	reg, err := LookupKind(k)
	switch {
	case err != nil:
		return fmt.Sprintf("workload %s is not registered in this program, so how many durable calls its ops make is unknown", k)
	case reg.OneDurableCallPerOp:
		return ""
	case reg.DurableCalls != "":
		return reg.DurableCalls
	}
	return fmt.Sprintf("workload %s does not declare each op one durable call (the bound counts one per op in flight)", k)
}

// WriteBounds writes, under the table, each durable run's bound and how
// close the run came to it: as a share where each op is one durable call
// (BoundShareNote), else the bound alone, in durable calls/s, and why.
func WriteBounds(w io.Writer, runs []Result) {
	first := true
	for i := range runs {
		r := &runs[i]
		b := BoundOf(r)
		if b == nil {
			continue
		}
		if first {
			fmt.Fprintln(w, "bound (closed loop, measured before each durable run): ops in flight / fdatasync, and ops in flight / (fdatasync + PING round trip); ops in flight = workers x pipeline")
			first = false
		}
		var rtt string
		switch {
		case b.RTTSamples > 0:
			rtt = fmt.Sprintf("rtt p50 %.3f ms", b.RTTP50MS)
		case b.InProcess:
			rtt = "no round trip (in-process)"
		default:
			rtt = "round trip not measured (the store has no PING)"
		}
		if why := BoundShareNote(r); why != "" {
			fmt.Fprintf(w, "  %s: fdatasync p50 %.3f ms, %s; %d in flight: bound %.0f / %.0f durable calls/s; measured %.0f ops/s, no share: %s\n",
				runLabel(r), b.FsyncP50MS, rtt, b.InFlightOps(), b.OpsPerSecFsync, b.OpsPerSecFsyncRTT, r.OpsPerSec, why)
		} else {
			a, c := b.Share(r.OpsPerSec)
			fmt.Fprintf(w, "  %s: fdatasync p50 %.3f ms, %s; %d in flight: bound %.0f / %.0f ops/s; measured %.0f = %.0f%% / %.0f%%\n",
				runLabel(r), b.FsyncP50MS, rtt, b.InFlightOps(), b.OpsPerSecFsync, b.OpsPerSecFsyncRTT, r.OpsPerSec, 100*a, 100*c)
		}
		if u, cpu := r.Server, r.Server.OpsPerSecCPU(); cpu > 0 {
			// The disk's bound assumes free CPU; on a machine the server
			// shares with the bench, the CPU may bind first.
			fmt.Fprintf(w, "    CPU per op: server %.1f µs + bench %.1f µs on %d CPUs: at most %.0f ops/s; measured = %.0f%%\n",
				u.CPUMicrosPerOp, u.BenchCPUMicrosPerOp, u.CPUs, cpu, 100*r.OpsPerSec/cpu)
		}
	}
	if !first {
		fmt.Fprintln(w)
	}
}
