package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"allot/engine"
	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// Defaults of Config.
const (
	OpsDefault       = 10_000
	FaultRateDefault = 0.0005
	dir              = "/data"
	// windowMax bounds the requests in flight at once.
	windowMax = 32
	// openAttempts bounds the retries of a recovery that hit faults.
	openAttempts = 8
)

// Config is one simulated run.
type Config struct {
	Seed uint64
	// Ops is the number of ops submitted (default OpsDefault).
	Ops int
	// Durability is the engine's mode; empty: the seed picks one.
	Durability engine.Durability
	// FaultRate is the chance that one file-system call fails (default
	// FaultRateDefault; negative: none).
	FaultRate float64
	// Broken swaps in a broken component, to test the simulator itself.
	Broken Broken
}

// Broken names a deliberately broken component.
type Broken int

const (
	// BrokenNone: everything as shipped.
	BrokenNone Broken = iota
	// BrokenLyingSync: fdatasync reports success without syncing, so the
	// engine acknowledges ops that a power cut loses.
	BrokenLyingSync
	// BrokenLosesSynced: a crash also drops the last synced bytes of the
	// newest journal segment.
	BrokenLosesSynced
)

// Result is what a run did and found.
type Result struct {
	Seed       uint64
	Durability engine.Durability
	Ops        int
	Acked      int
	Crashes    int
	Faults     int
	Recoveries int
	// Violations lists broken promises; empty means the run passed.
	Violations []string
}

// Failed reports whether a promise was broken.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// ReplayCommand is the one command that runs this seed again.
func (r *Result) ReplayCommand() string {
	return fmt.Sprintf("go run ./cmd/allot sim --seed %d --ops %d --durability %s", r.Seed, r.Ops, r.Durability)
}

// clock is the simulated time: it moves only when the simulator says.
type clock struct{ ms atomic.Int64 }

func (c *clock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// entry is one submitted op and what the client learned of it.
type entry struct {
	op      inventory.Op
	result  inventory.Result
	acked   bool // Wait returned nil
	failed  bool // Submit or Wait returned an error
	refused bool // Submit refused it: never applied
	// afterError: submitted after the engine had reported a journal error.
	afterError bool
}

// runner holds one run's state.
type runner struct {
	cfg    Config
	rng    *rand.Rand
	res    *Result
	mem    *vfs.Mem
	ffs    *faultFS
	eng    *engine.Engine
	clock  *clock
	rows   []inventory.RowKey
	groups []inventory.GroupKey
	// history is the ops the engine's journal holds after the last
	// recovery, in order; epoch the ops submitted since.
	history []inventory.Op
	epoch   []*entry
	// journalError: the engine reported a journal failure this epoch.
	journalError bool
	// faultsBefore counts the faults of earlier processes' file systems.
	faultsBefore int
}

// Run runs one seed.
func Run(cfg Config) *Result {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x73696d))
	if cfg.Ops == 0 {
		cfg.Ops = OpsDefault
	}
	if cfg.FaultRate == 0 {
		cfg.FaultRate = FaultRateDefault
	}
	if cfg.FaultRate < 0 {
		cfg.FaultRate = 0
	}
	if cfg.Durability == "" {
		cfg.Durability = []engine.Durability{engine.DurabilityFsync, engine.DurabilityWrite, engine.DurabilityNone}[rng.IntN(3)]
	}
	r := &runner{cfg: cfg, rng: rng, res: &Result{Seed: cfg.Seed, Durability: cfg.Durability, Ops: cfg.Ops}, clock: &clock{}}
	r.clock.ms.Store(1_700_000_000_000)
	r.mem = vfs.NewMem()
	r.ffs = newFaultFS(r.mem, cfg.Seed, cfg.FaultRate)
	r.ffs.lieSync = cfg.Broken == BrokenLyingSync
	// A few groups of a few warehouses: every capture contends.
	skus, warehouses := 1+rng.IntN(6), 1+rng.IntN(4)
	for s := 0; s < skus; s++ {
		g := inventory.GroupKey{SKU: "s" + strconv.Itoa(s), Condition: "new", Source: "sim"}
		r.groups = append(r.groups, g)
		for w := 0; w < warehouses; w++ {
			r.rows = append(r.rows, g.Row("w"+strconv.Itoa(w)))
		}
	}
	if !r.open() {
		return r.finish()
	}
	crashEvery := 200 + rng.IntN(3000)
	for sent := 0; sent < cfg.Ops; {
		n := min(1+rng.IntN(windowMax), cfg.Ops-sent)
		r.window(n)
		sent += n
		r.clock.ms.Add(int64(rng.IntN(50)))
		if r.journalError || rng.IntN(crashEvery) < n {
			r.crash()
			if !r.open() {
				break
			}
		}
		if len(r.res.Violations) > 0 {
			break
		}
	}
	if r.eng != nil && len(r.res.Violations) == 0 {
		r.crash()
		r.open()
	}
	return r.finish()
}

func (r *runner) finish() *Result {
	if r.eng != nil {
		r.eng.Close()
	}
	r.res.Faults = r.faultsBefore + r.ffs.faults
	return r.res
}

func (r *runner) violation(format string, a ...any) {
	if len(r.res.Violations) < 10 {
		r.res.Violations = append(r.res.Violations, fmt.Sprintf(format, a...))
	}
}

// nextOp draws one op: mostly captures and releases, some stock sets.
func (r *runner) nextOp() inventory.Op {
	n := int64(1 + r.rng.IntN(3))
	switch k := r.rng.IntN(20); {
	case k < 2:
		return inventory.Stock(r.rows[r.rng.IntN(len(r.rows))], int64(r.rng.IntN(10)), 100)
	case k < 11:
		return inventory.Capture(r.groups[r.rng.IntN(len(r.groups))], n)
	default:
		return inventory.Release(r.rows[r.rng.IntN(len(r.rows))], n)
	}
}

// window submits n ops as concurrent clients would, in a seed-chosen
// order, then waits for every reply.
func (r *runner) window(n int) {
	reqs := make([]*engine.Request, n)
	ents := make([]*entry, n)
	for i := range reqs {
		op := r.nextOp()
		reqs[i], ents[i] = engine.NewRequest(), &entry{op: op}
	}
	r.rng.Shuffle(n, func(i, j int) { reqs[i], reqs[j], ents[i], ents[j] = reqs[j], reqs[i], ents[j], ents[i] })
	for i, q := range reqs {
		e := ents[i]
		q.Op = e.op
		e.afterError = r.journalError
		if err := r.eng.Submit(q); err != nil {
			e.failed, e.refused = true, true
			r.noteError(err)
		}
		r.epoch = append(r.epoch, e)
	}
	for i, q := range reqs {
		e := ents[i]
		if e.refused {
			continue
		}
		if err := q.Wait(); err != nil {
			// Unavailable: refused, never applied; outcome unknown:
			// applied in memory, perhaps not on disk.
			e.failed, e.refused = true, errors.Is(err, engine.ErrUnavailable) && !errors.Is(err, engine.ErrOutcomeUnknown)
			r.noteError(err)
			continue
		}
		e.acked, e.result = true, q.Result
		e.result.Lines = slices.Clone(q.Result.Lines)
		r.res.Acked++
		if e.afterError {
			r.violation("op %v acknowledged after the engine reported a journal error", e.op)
		}
	}
}

func (r *runner) noteError(err error) {
	if errors.Is(err, engine.ErrUnavailable) || errors.Is(err, engine.ErrOutcomeUnknown) {
		r.journalError = true
		return
	}
	r.violation("an op failed with an error of no outcome class: %v", err)
}

// crash ends the process: a power cut under fsync and none (a part of each
// file's unsynced tail survives), a process crash under write (all of it).
func (r *runner) crash() {
	r.res.Crashes++
	keep := func(string, int) int { return 0 }
	switch r.cfg.Durability {
	case engine.DurabilityWrite:
		keep = func(_ string, unsynced int) int { return unsynced }
	default:
		seed := r.rng.Uint64()
		keep = func(name string, unsynced int) int {
			h := rand.New(rand.NewPCG(seed, uint64(len(name))<<32|uint64(unsynced)))
			return h.IntN(unsynced + 1)
		}
	}
	survived := r.mem.Crash(keep)
	if r.cfg.Broken == BrokenLosesSynced {
		loseSyncedTail(survived)
	}
	old := r.eng
	r.eng = nil
	// The old engine goes on writing to the old file system, which no one
	// reads again; closing it only stops its goroutines.
	go old.Close()
	r.mem = survived
	// A file system of its own for the new process: the old engine's
	// goroutines may still write through the old one.
	next := &faultFS{fs: survived, rng: r.ffs.rng, rate: r.ffs.rate, lieSync: r.ffs.lieSync}
	r.ffs.mu.Lock()
	r.faultsBefore += r.ffs.faults
	r.ffs.rate, r.ffs.rng = 0, nil
	r.ffs.mu.Unlock()
	r.ffs = next
}

// open recovers the engine and checks the promises.
func (r *runner) open() bool {
	r.ffs.mu.Lock()
	r.ffs.reads = true
	r.ffs.mu.Unlock()
	defer func() {
		r.ffs.mu.Lock()
		r.ffs.reads = false
		r.ffs.mu.Unlock()
	}()
	var err error
	for attempt := 0; attempt < openAttempts; attempt++ {
		if attempt == openAttempts-1 {
			r.ffs.setRate(0) // the cause gone
		}
		r.eng, err = engine.Open(engine.Config{
			Dir: dir, FS: r.ffs, Durability: r.cfg.Durability, Clock: r.clock, TickInterval: -1,
			SegmentBytes: 8 << 10, SnapshotEveryOps: 1500, QueueMax: 256,
		})
		if err == nil {
			break
		}
		if ce := (*journal.CorruptionError)(nil); errors.As(err, &ce) {
			r.violation("recovery refused the data as corrupt: %v", err)
			return false
		}
	}
	r.ffs.setRate(r.cfg.FaultRate)
	if err != nil {
		r.violation("recovery failed with faults off: %v", err)
		return false
	}
	r.res.Recoveries++
	r.check()
	return len(r.res.Violations) == 0
}

// check compares the recovered engine with the model.
func (r *runner) check() {
	// The candidates: the history, then this epoch's ops that changed
	// state, in submit order (= apply order), replayed on the model.
	model := inventory.NewState()
	for i := range r.history {
		model.Apply(&r.history[i], nil)
	}
	base := len(r.history)
	lsn := int(r.eng.Recovery().LastLSN)
	if lsn < base && r.res.Recoveries > 1 && r.cfg.Durability != engine.DurabilityNone {
		r.violation("recovered to op %d, but %d ops had been recovered before", lsn, base)
	}
	// Rebuild the model from scratch to the recovered point.
	cands := slices.Clone(r.history)
	lastAcked := -1
	for _, e := range r.epoch {
		if e.refused {
			continue
		}
		res := model.Apply(&e.op, nil)
		if e.acked {
			if res.Code != e.result.Code || res.Count != e.result.Count || !slices.Equal(res.Lines, e.result.Lines) {
				r.violation("op %v: engine replied %v %d %v, the model %v %d %v", e.op, e.result.Code, e.result.Count, e.result.Lines, res.Code, res.Count, res.Lines)
			}
		}
		if res.Changed {
			cands = append(cands, e.op)
			if e.acked {
				lastAcked = len(cands)
			}
		}
	}
	if lsn > len(cands) {
		r.violation("recovered %d ops, only %d were ever applied", lsn, len(cands))
		return
	}
	if lastAcked > lsn && r.cfg.Durability != engine.DurabilityNone {
		r.violation("durability %s: %d acknowledged ops lost (recovered to op %d, acknowledged up to %d)", r.cfg.Durability, lastAcked-lsn, lsn, lastAcked)
	}
	want := inventory.NewState()
	for i := 0; i < lsn; i++ {
		want.Apply(&cands[i], nil)
	}
	got, err := r.eng.Rows()
	if err != nil {
		r.violation("reading the recovered rows: %v", err)
		return
	}
	if !sameRows(got, want.Rows()) {
		r.violation("the recovered state differs from the model after %d ops", lsn)
	}
	r.history = cands[:lsn]
	r.epoch = r.epoch[:0]
	r.journalError = false
}

func sameRows(a, b []inventory.Row) bool {
	key := func(x, y inventory.Row) int {
		k1, k2 := x.Key, y.Key
		for _, c := range [][2]string{{k1.SKU, k2.SKU}, {k1.Warehouse, k2.Warehouse}, {k1.Condition, k2.Condition}, {k1.Source, k2.Source}} {
			if c[0] != c[1] {
				if c[0] < c[1] {
					return -1
				}
				return 1
			}
		}
		return 0
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, key)
	slices.SortFunc(b, key)
	return slices.Equal(a, b)
}

// loseSyncedTail zeroes the last bytes written to the newest journal
// segment, synced or not: a disk that loses acknowledged data.
func loseSyncedTail(m *vfs.Mem) {
	var newest string
	for _, n := range m.Names() {
		if strings.HasPrefix(path.Base(n), "journal-") && n > newest {
			newest = n
		}
	}
	if newest == "" {
		return
	}
	f, err := m.Open(newest)
	if err != nil {
		return
	}
	size, _ := f.Size()
	buf := make([]byte, size)
	f.ReadAt(buf, 0)
	f.Close()
	end := len(buf)
	for end > 0 && buf[end-1] == 0 {
		end--
	}
	if end == 0 {
		return
	}
	w, err := m.OpenAppend(newest)
	if err != nil {
		return
	}
	w.WriteAt(make([]byte, min(end, 48)), int64(end-min(end, 48)))
	w.Sync()
	w.Close()
}
