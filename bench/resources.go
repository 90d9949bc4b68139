package bench

import (
	"context"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"allot/internal/procfs"
	"allot/store"
)

// ServerUsage is what a run cost the store's server: CPU time and memory
// of its processes during the timed part of the run, read from /proc.
type ServerUsage struct {
	// PID is the server's main process; Processes how many processes its
	// tree held at the end (PostgreSQL: the postmaster and its backends).
	PID       int `json:"pid"`
	Processes int `json:"processes"`
	// InProcess is set when the server is the bench's own process (the
	// embedded store): CPUSeconds then includes the bench's own work, and
	// only that process is measured, not its children.
	InProcess bool `json:"in_process,omitempty"`
	// CPUSeconds is user + system time of the whole process tree during
	// the run, children that exited meanwhile included (their time reaches
	// the parent's cutime/cstime when reaped). Resolution: 10 ms.
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUMicrosPerOp is CPUSeconds per op, in microseconds: what an op
	// costs the server, beside how fast it went.
	CPUMicrosPerOp float64 `json:"cpu_us_per_op"`
	// RSSPeakBytes is the largest resident memory of the tree seen by a
	// sampler every ResourceSampleInterval: the sum over its processes of
	// their proportional set size (Pss: a page shared by k processes
	// counts 1/k in each, so PostgreSQL's shared buffers count once),
	// or of VmRSS where smaps_rollup cannot be read.
	RSSPeakBytes int64 `json:"rss_peak_bytes"`
	// Samples is how many memory samples the peak is taken over.
	Samples int `json:"samples"`
	// BenchCPUSeconds is the bench's own process's user + system time over
	// the same span, when the server is another process on this machine:
	// the client's side of every op (its connections, encoding, timing).
	// BenchCPUMicrosPerOp is it per op. Zero for an in-process store,
	// whose CPUSeconds already holds both.
	BenchCPUSeconds     float64 `json:"bench_cpu_seconds,omitempty"`
	BenchCPUMicrosPerOp float64 `json:"bench_cpu_us_per_op,omitempty"`
	// CPUs is how many CPUs this process may run on (runtime.NumCPU):
	// what the server and the bench share when both run here.
	CPUs int `json:"cpus"`
	// Span is what the figures cover: "ops", the timed part of the run
	// alone (what Seconds covers), or "run", the whole store run with its
	// loading and checking (for a workload kind that does not meter its
	// timed part itself).
	Span string `json:"span"`
}

// Spans of ServerUsage.
const (
	SpanOps = "ops"
	SpanRun = "run"
)

// ResourceSampleInterval is how often the memory sampler reads /proc. A
// read of a tree of a few dozen processes takes about a millisecond.
const ResourceSampleInterval = 200 * time.Millisecond

// tree returns the processes measured: the server and its descendants,
// or for an in-process store the bench's own process alone (its children
// are other stores' servers, a browser in a test: not this store).
func (m *ServerMeter) tree() ([]int, error) {
	if m.inProcess {
		if _, err := m.proc.Stat(m.pid); err != nil {
			return nil, err
		}
		return []int{m.pid}, nil
	}
	return m.proc.Tree(m.pid)
}

// cpu is the CPU time of tree in clock ticks: own and reaped children's
// for a server's tree, own only for the bench's process.
func (m *ServerMeter) cpu(tree []int) int64 {
	if m.inProcess {
		st, err := m.proc.Stat(m.pid)
		if err != nil {
			return 0
		}
		return st.UTime + st.STime
	}
	return m.proc.TreeCPUTicks(tree)
}

// ServerMeter measures a server's process tree over a span of a run. The
// zero of it (nil) measures nothing: every method is safe on nil.
type ServerMeter struct {
	pid       int
	inProcess bool
	proc      procfs.FS
	cpuStart  int64
	selfStart time.Duration // the bench's own CPU at the start (another server process only)

	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	rssPeak int64
	samples int
}

// StartServerMeter starts measuring st's server, when st is a
// store.ServerProcess whose pid this machine can see. Otherwise it
// returns nil, and the run has no resource figures.
func StartServerMeter(ctx context.Context, st store.Store) *ServerMeter {
	sp, ok := st.(store.ServerProcess)
	if !ok {
		return nil
	}
	pid, err := sp.ServerPID(ctx)
	if err != nil || pid <= 0 {
		return nil
	}
	return startMeter(pid, procfs.FS("/proc"))
}

func startMeter(pid int, proc procfs.FS) *ServerMeter {
	m := &ServerMeter{pid: pid, inProcess: pid == os.Getpid(), proc: proc, stop: make(chan struct{}), done: make(chan struct{})}
	tree, err := m.tree()
	if err != nil {
		return nil
	}
	m.cpuStart = m.cpu(tree)
	if !m.inProcess {
		m.selfStart = selfCPU()
	}
	m.sampleRSS(tree)
	go m.loop()
	return m
}

func (m *ServerMeter) loop() {
	defer close(m.done)
	t := time.NewTicker(ResourceSampleInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			if tree, err := m.tree(); err == nil {
				m.sampleRSS(tree)
			}
		}
	}
}

func (m *ServerMeter) sampleRSS(tree []int) {
	var sum int64
	for _, p := range tree {
		sum += m.proc.RSS(p)
	}
	m.mu.Lock()
	m.rssPeak = max(m.rssPeak, sum)
	m.samples++
	m.mu.Unlock()
}

// Stop ends the measurement and returns the usage over ops ops, labelled
// with span (SpanOps or SpanRun); nil when nothing was measured or the
// server went away.
func (m *ServerMeter) Stop(ops int64, span string) *ServerUsage {
	if m == nil {
		return nil
	}
	close(m.stop)
	<-m.done
	tree, err := m.tree()
	if err != nil {
		return nil
	}
	m.sampleRSS(tree)
	cpu := m.cpu(tree) - m.cpuStart
	u := &ServerUsage{PID: m.pid, Processes: len(tree), InProcess: m.inProcess,
		CPUSeconds: float64(max(cpu, 0)) / procfs.ClockTicks, RSSPeakBytes: m.rssPeak, Samples: m.samples, Span: span}
	u.CPUs = runtime.NumCPU()
	if !m.inProcess {
		u.BenchCPUSeconds = max(selfCPU()-m.selfStart, 0).Seconds()
	}
	if ops > 0 {
		u.CPUMicrosPerOp = u.CPUSeconds * 1e6 / float64(ops)
		u.BenchCPUMicrosPerOp = u.BenchCPUSeconds * 1e6 / float64(ops)
	}
	return u
}

// selfCPU is the bench process's own user + system time (its children,
// servers it started, excluded); 0 if it cannot be read.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// OpsPerSecCPU is the most ops a second the machine's CPUs allow at the
// run's CPU cost per op, server and bench together, when both run on this
// machine and nothing else takes CPU: CPUs / (server + bench time per op).
// 0 when the run has no such figures (a remote or in-process server, or
// no ops).
func (u *ServerUsage) OpsPerSecCPU() float64 {
	if u == nil || u.InProcess || u.Span != SpanOps || u.CPUs == 0 || u.BenchCPUMicrosPerOp == 0 {
		return 0
	}
	return float64(u.CPUs) * 1e6 / (u.CPUMicrosPerOp + u.BenchCPUMicrosPerOp)
}
