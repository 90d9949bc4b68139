package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"allot/catalog"
	"allot/engine"
	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// Defaults of Config.
const (
	OpsDefault       = 10_000
	FaultRateDefault = 0.005
	dir              = "/data"
	// windowMax bounds the requests in flight at once.
	windowMax = 32
	// openAttempts bounds the retries of a recovery that hit faults.
	openAttempts = 8
	// holdIDs and keys are the pools hold ids and idempotency keys are
	// drawn from: small, so that repeats and mismatches are common.
	holdIDs     = 16
	keys        = 12
	catalogSKUs = 8
	// ttlMaxMS bounds a hold's time to live: a few windows of the clock.
	ttlMaxMS = 300
	// killRate is the chance, in fsync runs, that the process dies in an
	// fdatasync of a segment (any, a spare renamed into place included:
	// faultFS.kill), between the write of a frame and its sync:
	// the one point of that mode where the page cache holds what the disk
	// does not. It is part of the crash schedule, not a fault: it applies
	// with faults off too.
	killRate = 0.002
	// StepKillRateDefault is Config.StepKillRate's default with faults
	// on.
	StepKillRateDefault = 0.01
	// clockStepBackMaxMS and clockStepForwardMaxMS bound a step of the
	// wall clock (NTP, or a machine that boots with its clock behind):
	// past every hold's time to live and the shorter retention windows.
	clockStepBackMaxMS    = 2000
	clockStepForwardMaxMS = 5000
	// clockStepOneIn: the clock steps after one window in this many.
	clockStepOneIn = 8
	// cutAfterMS and cutsMax are the engine's rule for closing a frame
	// aside in fsync mode (engine.cutLocked): when a batch finds the open
	// frame stamped cutAfterMS or more before the clock and a hold due by
	// the clock, it begins a frame of its own, unless cutsMax frames wait
	// aside already.
	cutAfterMS = 50
	cutsMax    = 1024
	// advanceOneIn and advanceMaxMS: between two submissions of an fsync
	// window the clock moves, one time in advanceOneIn, by up to
	// advanceMaxMS (runner.between).
	advanceOneIn = 6
	advanceMaxMS = 120
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
	// StepKillRate is the chance that the process dies at one step of
	// writing a snapshot or retiring a segment, or at any rename, remove
	// or directory sync (faultFS.stepKill). Default: StepKillRateDefault
	// with faults on, none with faults off (those steps run on the
	// engine's background goroutines too, so where they fall varies
	// between runs of a seed, as faults do); negative: none.
	StepKillRate float64
	// stepKillOnly, when set, limits the steps of StepKillRate to one kind
	// (stepKind): a test aims at each in turn.
	stepKillOnly string
	// modelNoCut, for a test of the simulator's power: the model never
	// closes a frame aside, as an engine without engine.cutLocked would
	// not; the engine's cuts must then fail the run.
	modelNoCut bool
	// keepSnapshots, when set, is the engine's KeepSnapshots (default:
	// the engine's, 2): more snapshots kept keep the history before the
	// newest one longer, for a test that aims at it.
	keepSnapshots int
	// Dir is the data directory (default /data). The engine makes it at
	// the first open, with its missing parents: each is a new name in its
	// parent, durable only once the parent is synced.
	Dir string
}

// Broken names a deliberately broken component.
type Broken int

const (
	// BrokenNone: everything as shipped.
	BrokenNone Broken = iota
	// BrokenLyingSync: fdatasync reports success without syncing, so the
	// engine acknowledges ops before they are synced, and a power cut
	// loses them.
	BrokenLyingSync
	// BrokenLosesSynced: a crash also drops the last synced bytes of the
	// newest journal segment.
	BrokenLosesSynced
	// BrokenLateAppend: the journal appends each frame only with the next
	// one (journal.BrokenLateAppend), so the engine applies and
	// acknowledges ops before they are in the journal.
	BrokenLateAppend
	// BrokenKeepTornTail: recovery does not cut a torn tail or a hole
	// (journal.BrokenKeepTornTail).
	BrokenKeepTornTail
	// BrokenSnapshotWithoutCatalog: snapshots leave out the catalog
	// (journal.BrokenSnapshotWithoutCatalog).
	BrokenSnapshotWithoutCatalog
	// BrokenReplayLongRetention: recovery replays under a 24 h retention
	// window whatever the engine ran with
	// (journal.BrokenReplayLongRetention).
	BrokenReplayLongRetention
	// BrokenSegmentNameNotSynced: a new segment's name is never made
	// durable by a directory sync (journal.BrokenSegmentNameNotSynced).
	BrokenSegmentNameNotSynced
	// BrokenNoRecoveryRewrite: recovery syncs what it replayed without
	// writing it again, so what a failed fdatasync left clean stays off
	// the disk (journal.BrokenNoRecoveryRewrite).
	BrokenNoRecoveryRewrite
	// BrokenNoRecoverySync: recovery neither writes again nor syncs what
	// it replayed (journal.BrokenNoRecoverySync).
	BrokenNoRecoverySync
	// BrokenStampRawClock: the engine stamps a batch with the clock as
	// read, which may go back, instead of its own never-decreasing time
	// (journal.BrokenStampRawClock).
	BrokenStampRawClock
	// BrokenSnapshotInPlace: a snapshot is written under its final name,
	// with no temporary file and rename (journal.BrokenSnapshotInPlace).
	BrokenSnapshotInPlace
	// BrokenRetryDirSync: a new segment whose directory sync failed is
	// synced again, and the journal goes on when that succeeds
	// (journal.BrokenRetryDirSync).
	BrokenRetryDirSync
	// BrokenDataDirNameNotSynced: the data directory's parent is never
	// synced, so a new data directory's own name is not durable
	// (journal.BrokenDataDirNameNotSynced).
	BrokenDataDirNameNotSynced
	// BrokenSpareNotSynced: in write and none modes a preallocated
	// segment takes frames before its header and size are synced
	// (journal.BrokenSpareNotSynced).
	BrokenSpareNotSynced
	// BrokenNoHistorySync: recovery syncs only the segments it replays,
	// not the history before the newest snapshot that change-stream
	// readers read (journal.BrokenNoHistorySync).
	BrokenNoHistorySync
)

func (b Broken) journal() journal.Broken {
	switch b {
	case BrokenLateAppend:
		return journal.BrokenLateAppend
	case BrokenKeepTornTail:
		return journal.BrokenKeepTornTail
	case BrokenSnapshotWithoutCatalog:
		return journal.BrokenSnapshotWithoutCatalog
	case BrokenReplayLongRetention:
		return journal.BrokenReplayLongRetention
	case BrokenSegmentNameNotSynced:
		return journal.BrokenSegmentNameNotSynced
	case BrokenNoRecoveryRewrite:
		return journal.BrokenNoRecoveryRewrite
	case BrokenNoRecoverySync:
		return journal.BrokenNoRecoverySync
	case BrokenStampRawClock:
		return journal.BrokenStampRawClock
	case BrokenSnapshotInPlace:
		return journal.BrokenSnapshotInPlace
	case BrokenRetryDirSync:
		return journal.BrokenRetryDirSync
	case BrokenDataDirNameNotSynced:
		return journal.BrokenDataDirNameNotSynced
	case BrokenSpareNotSynced:
		return journal.BrokenSpareNotSynced
	case BrokenNoHistorySync:
		return journal.BrokenNoHistorySync
	}
	return journal.BrokenNone
}

// Result is what a run did and found.
type Result struct {
	Seed       uint64
	Durability engine.Durability
	Dir        string
	// StepKillRate is the run's Config.StepKillRate, defaults filled.
	StepKillRate float64
	Ops          int
	Acked        int
	Crashes      int
	PowerCuts    int // of Crashes; the others are crashes of the process
	Faults       int
	Recoveries   int
	// Kills counts the crashes of the process in an fdatasync, between a
	// frame's write and its sync (fsync runs).
	Kills int
	// PowerCutsAfterProcessCrash counts the power cuts that came after a
	// crash of the process earlier in the run: the page cache the
	// restarted process found held what the disk did not.
	PowerCutsAfterProcessCrash int
	// StepKills counts the crashes of the process at a step of writing a
	// snapshot or retiring a segment, or at a rename, remove or directory
	// sync (faults on); StepsKilled names those steps ("sync
	// snapshot-….snap.tmp").
	StepKills   int
	StepsKilled []string
	// Remounts counts the power cuts forced by a failed directory sync
	// (the file system must be remounted), of PowerCuts.
	Remounts int
	// RetirementsCut counts the crashes of the process (write and none
	// runs) placed before the background fdatasync of the full segment
	// the writer left last (faultFS.retiring; any full segment, a renamed
	// spare too), whether or not the journal's goroutine had called it
	// yet: its frames were left in the page cache only, for the next
	// recovery to make durable.
	RetirementsCut int
	// ClockStepsBack and ClockStepsForward count the steps of the wall
	// clock.
	ClockStepsBack    int
	ClockStepsForward int
	// Cuts counts the frames an fsync engine closed aside, as the model
	// has it (engine.cutLocked): a batch that found the open frame
	// stamped cutAfterMS or more before the clock, with a hold due by
	// then, began a frame of its own.
	Cuts int
	// Advances counts the moves of the clock inside fsync windows
	// (runner.between).
	Advances int
	// Violations lists broken promises; empty means the run passed.
	Violations []string
}

// Failed reports whether a promise was broken.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// ReplayCommand is the one command that runs this seed again.
func (r *Result) ReplayCommand() string {
	cmd := fmt.Sprintf("go run ./cmd/allot sim --seeds 1 --seed %d --ops %d --durability %s", r.Seed, r.Ops, r.Durability)
	if r.StepKillRate != StepKillRateDefault {
		cmd += " --step-kill-rate " + strconv.FormatFloat(r.StepKillRate, 'g', -1, 64)
	}
	if r.Dir != dir {
		cmd += " --dir " + r.Dir
	}
	return cmd
}

// clock is the simulated time: it moves only when the simulator says.
type clock struct{ ms atomic.Int64 }

func (c *clock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// entry is one step of an epoch: a submitted op and what the client
// learned of it, or (mark) a batch the engine began at time at, which
// expires the holds due by then.
type entry struct {
	mark bool
	// flush: the simulator flushed here (the open frame, and the frames
	// closed aside, were written and synced).
	flush bool
	at    int64
	op    inventory.Op
	// retention is the engine's retention window when the op came, in
	// milliseconds: whether its hold id or key is a repeat depends on it.
	retention int64
	result    inventory.Result
	acked     bool // Wait returned nil
	failed    bool // Submit or Wait returned an error
	refused   bool // Submit refused it: never applied
	// afterError: submitted after the engine had reported a journal error.
	afterError bool
	// failedDuring: the engine's journal failed while this op was
	// submitted (the engine runs no flusher of its own, so the failure
	// came from this Submit's own writes).
	failedDuring bool
	// deadAtSubmit: the process was dead (killed at a step or in an
	// fdatasync) when Submit returned; afterKill: when the ack was seen.
	// Such an ack may postdate the state the next process finds, so it
	// is not counted as promised.
	deadAtSubmit bool
	afterKill    bool
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
	// recovery, in order, each with the time it was applied at; epoch the
	// steps since.
	history []applied
	epoch   []*entry
	// retention is the open engine's retention window in milliseconds,
	// drawn at each open from retentionRNG (a stream of its own, so that
	// the rest of a seed's run is drawn as before): a restart may shorten
	// or lengthen it, as an operator may, and recovery must replay the
	// journal whatever window its ops ran under.
	retention    int64
	retentionRNG *rand.Rand
	// keyed are ops that carried an idempotency key, to repeat.
	keyed []inventory.Op
	// powerCut: the last crash was a power cut (else a process crash).
	powerCut bool
	// processCrashed: a crash of the process came earlier in the run.
	processCrashed bool
	// recovered is the last op the last recovery replayed: recovery syncs
	// what it keeps before it appends, so no later crash, of any kind in
	// any mode, may lose it.
	recovered int
	// journalError: the engine reported a journal failure this epoch.
	journalError bool
	// faultsBefore counts the faults of earlier processes' file systems.
	faultsBefore int
	// machine outlives processes until a power cut (faultfs.go); mapping:
	// the seed's file systems map segments.
	machine *machine
	mapping bool
	// clockRNG draws the steps of the clock, a stream of its own so that
	// the rest of a seed's run is drawn as before; advanceRNG, the moves
	// inside fsync windows (between).
	clockRNG   *rand.Rand
	advanceRNG *rand.Rand
	// retireRNG draws, at a crash of the process in write and none runs,
	// whether the background sync of the last full segment ran before it
	// (placeRetirement), a stream of its own.
	retireRNG *rand.Rand
	// snapshotEvery is the engine's SnapshotEveryOps, drawn per seed from
	// its own stream: often enough that snapshots trim segments.
	snapshotEvery int64
	// floor is the engine's time when the last check ended, which the
	// model's replay of the history (times of ops alone) would not know:
	// the engine's time also moves with batches that journal nothing, and
	// after a step back of the clock it stays there. latest is the latest
	// clock reading the engine began a batch at.
	floor  int64
	latest int64
	// readableFrom: under write and none, the first op of the journal the
	// last recovery found readable (and synced, with all it kept).
	readableFrom uint64
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
	if cfg.Dir == "" {
		cfg.Dir = dir
	}
	if cfg.StepKillRate == 0 && cfg.FaultRate > 0 {
		cfg.StepKillRate = StepKillRateDefault
	}
	if cfg.StepKillRate < 0 {
		cfg.StepKillRate = 0
	}
	// The mode is drawn whether or not one is given, so that a given one
	// (the replay command names the mode the seed drew) leaves every later
	// draw as it was: the replay runs the same simulation.
	drawn := []engine.Durability{engine.DurabilityFsync, engine.DurabilityWrite, engine.DurabilityNone}[rng.IntN(3)]
	if cfg.Durability == "" {
		cfg.Durability = drawn
	}
	r := &runner{cfg: cfg, rng: rng, res: &Result{Seed: cfg.Seed, Durability: cfg.Durability, Dir: cfg.Dir, StepKillRate: cfg.StepKillRate, Ops: cfg.Ops}, clock: &clock{},
		retentionRNG: rand.New(rand.NewPCG(cfg.Seed, 0x726574)), clockRNG: rand.New(rand.NewPCG(cfg.Seed, 0x636c6b)),
		advanceRNG: rand.New(rand.NewPCG(cfg.Seed, 0x616476)), retireRNG: rand.New(rand.NewPCG(cfg.Seed, 0x727472)),
		machine: newMachine()}
	r.snapshotEvery = []int64{150, 400, 1500}[rand.New(rand.NewPCG(cfg.Seed, 0x736e70)).IntN(3)]
	r.clock.ms.Store(1_700_000_000_000)
	r.mem = vfs.NewMem()
	// Most seeds let write and none modes write their segments through a
	// mapping, as the engine does on a real disk (unsynced page cache
	// until fdatasync); the others take the write(2) path, where frame
	// writes fail and tear.
	if rng.IntN(4) != 0 {
		r.mem.EnableMapping()
		r.mapping = true
	}
	r.ffs = r.newFS(r.mem, cfg.Seed)
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
		if rng.IntN(4) == 0 {
			// The writer's tick, with no request: expiries alone.
			r.tick()
		}
		// Half the crashes come in the middle of a window: after some of
		// its replies, while the rest may be on their way to the disk.
		crash := rng.IntN(crashEvery) < n
		waitFor := n
		if crash && rng.IntN(2) == 0 {
			waitFor = rng.IntN(n)
		}
		r.window(n, waitFor)
		sent += n
		r.clock.ms.Add(int64(rng.IntN(50)))
		r.stepClock(clockStepOneIn, true)
		if r.journalError || crash || r.ffs.dead() {
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

// applied is an op that changed state, and the time it was applied at.
type applied struct {
	op        inventory.Op
	at        int64
	retention int64 // the window it was applied under (entry.retention)
}

// nextOp draws one op of every kind the engine has: stock sets, captures,
// releases, holds, confirms, cancels, orders, hold reads and catalog sets
// and deletes, some with an idempotency key, some repeating a keyed op
// (the same arguments: the first reply again; others: a mismatch).
func (r *runner) nextOp() inventory.Op {
	n := int64(1 + r.rng.IntN(3))
	var op inventory.Op
	switch k := r.rng.IntN(100); {
	case k < 8:
		op = inventory.Stock(r.rows[r.rng.IntN(len(r.rows))], int64(r.rng.IntN(10)), 100)
	case k < 31:
		op = inventory.Capture(r.groups[r.rng.IntN(len(r.groups))], n)
	case k < 50:
		op = inventory.Release(r.rows[r.rng.IntN(len(r.rows))], n)
	case k < 63:
		op = inventory.Hold(r.holdID(), 1+int64(r.rng.IntN(ttlMaxMS)), r.demands())
	case k < 71:
		op = inventory.Confirm(r.holdID())
	case k < 77:
		op = inventory.Cancel(r.holdID())
	case k < 84:
		op = inventory.Order(r.demands())
	case k < 87:
		op = inventory.HoldGet(r.holdID())
	case k < 89:
		op = inventory.CatalogDel(r.catalogSKU())
	case k < 90:
		op = inventory.CatalogSet(catalog.Record{SKU: r.catalogSKU(), Title: "Titel " + strconv.Itoa(r.rng.IntN(50)), Brand: []string{"Acme", "Über"}[r.rng.IntN(2)],
			Attributes: []catalog.Attribute{{Name: "colour", Value: []string{"red", "blue"}[r.rng.IntN(2)]}}[:r.rng.IntN(2)]})
	default:
		if len(r.keyed) == 0 {
			op = inventory.Capture(r.groups[r.rng.IntN(len(r.groups))], n)
			break
		}
		op = r.keyed[r.rng.IntN(len(r.keyed))]
		if r.rng.IntN(4) == 0 && (op.Kind == inventory.KindCapture || op.Kind == inventory.KindRelease) {
			op.N = op.N%3 + 1 // other arguments: a mismatch
		}
		return op
	}
	if op.Kind.Keyed() && r.rng.IntN(4) == 0 {
		op.IdempotencyKey = "k" + strconv.Itoa(r.rng.IntN(keys))
		if len(r.keyed) < 64 {
			r.keyed = append(r.keyed, op)
		} else {
			r.keyed[r.rng.IntN(len(r.keyed))] = op
		}
	}
	return op
}

func (r *runner) holdID() string { return "h" + strconv.Itoa(r.rng.IntN(holdIDs)) }

// catalogSKU draws a catalog record's SKU: a small pool, so that sets
// replace records and deletes find them.
func (r *runner) catalogSKU() string { return "c" + strconv.Itoa(r.rng.IntN(catalogSKUs)) }

// demands draws the lines of a hold or an order: 1..3, a group sometimes
// named twice.
func (r *runner) demands() []inventory.Demand {
	d := make([]inventory.Demand, 1+r.rng.IntN(3))
	for i := range d {
		d[i] = inventory.Demand{Group: r.groups[r.rng.IntN(len(r.groups))], N: int64(1 + r.rng.IntN(3))}
	}
	return d
}

// tick runs the writer's tick at the clock's time.
func (r *runner) tick() {
	if r.journalError {
		return
	}
	r.epoch = append(r.epoch, &entry{mark: true, at: r.clock.ms.Load(), retention: r.retention})
	r.latest = max(r.latest, r.clock.ms.Load())
	if _, err := r.eng.Tick(); err != nil {
		r.noteError(err)
	}
}

// window submits n ops as concurrent clients would, in a seed-chosen
// order, flushing after seed-chosen ones (a frame ends there), then waits
// for the first waitFor replies (n: all of them, after a last flush; fewer
// when a crash comes before the others, and under fsync only those a flush
// covered).
func (r *runner) window(n, waitFor int) {
	reqs := make([]*engine.Request, n)
	ents := make([]*entry, n)
	for i := range reqs {
		op := r.nextOp()
		reqs[i], ents[i] = engine.NewRequest(), &entry{op: op, retention: r.retention}
	}
	r.rng.Shuffle(n, func(i, j int) { reqs[i], reqs[j], ents[i], ents[j] = reqs[j], reqs[i], ents[j], ents[i] })
	if !r.journalError {
		// The window's first request begins a batch at the clock's time.
		r.epoch = append(r.epoch, &entry{mark: true, at: r.clock.ms.Load(), retention: r.retention})
		r.latest = max(r.latest, r.clock.ms.Load())
	}
	flushed := 0 // requests submitted before the last flush
	for i := 0; i < n; {
		// One request at a time, or a seed-chosen run of them as one
		// batch, as a RESP connection submits a round of its pipeline
		// (engine.SubmitBatch).
		k := 1
		if r.rng.IntN(3) == 0 {
			k = min(n-i, 2+r.rng.IntN(7))
		}
		// Under fsync each request begins a batch (SubmitBatch submits
		// them one by one there): a mark before each, at the clock's time,
		// for the model to join the open frame or close it aside, as the
		// engine does.
		marks := r.cfg.Durability == engine.DurabilityFsync && !r.journalError && r.eng.Failure() == nil
		if i > 0 && r.cfg.Durability == engine.DurabilityFsync {
			r.between()
		}
		batch, bents := reqs[i:i+k], ents[i:i+k]
		for j, q := range batch {
			q.Op = bents[j].op
			bents[j].afterError = r.journalError
		}
		failedBefore := r.eng.Stats().Failed
		submitted := k
		var err error
		if k == 1 {
			if err = r.eng.Submit(batch[0]); err != nil {
				submitted = 0
			}
		} else {
			submitted, err = r.eng.SubmitBatch(batch)
		}
		if err != nil {
			for _, e := range bents[submitted:] {
				e.failed, e.refused = true, true
			}
			r.noteError(err)
		}
		failedDuring := !failedBefore && r.eng.Stats().Failed
		dead := r.ffs.dead()
		for _, e := range bents {
			e.failedDuring, e.deadAtSubmit = failedDuring, dead
			if marks {
				r.epoch = append(r.epoch, &entry{mark: true, at: r.clock.ms.Load(), retention: r.retention})
			}
			r.epoch = append(r.epoch, e)
		}
		i += k
		if r.rng.IntN(4) == 0 {
			r.flush()
			flushed = i
		}
	}
	if waitFor == n && (r.cfg.Durability == engine.DurabilityFsync || r.rng.IntN(2) == 0) {
		// Under write and none replies need no flush: half the windows
		// leave their frame open for the next one to write.
		r.flush()
		flushed = n
	}
	if r.cfg.Durability == engine.DurabilityFsync {
		waitFor = min(waitFor, flushed)
	}
	for i, q := range reqs[:waitFor] {
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
		// Under fsync the reply came from the flusher, after Submit: the
		// process must still have been alive when it was seen. Under write
		// and none it came in Submit.
		e.afterKill = e.deadAtSubmit || (r.cfg.Durability == engine.DurabilityFsync && r.ffs.dead())
		e.result.Lines = slices.Clone(q.Result.Lines)
		e.result.Allocations = slices.Clone(q.Result.Allocations)
		r.res.Acked++
		if e.afterError {
			r.violation("op %v acknowledged after the engine reported a journal error", e.op)
		}
		if e.failedDuring {
			r.violation("op %v acknowledged though the journal failed while it was submitted", e.op)
		}
	}
}

// between is the time between two submissions of an fsync window: one
// time in advanceOneIn the clock moves on by up to advanceMaxMS, as it
// does while the flusher's fdatasync of the last flush runs and requests
// keep coming, joining the open frame at its stamp. Each request begins
// a batch (engine.beginLocked; window marks each): it joins the open
// frame, or, with a hold due, the open frame is closed aside for one
// stamped now (engine.cutLocked); the model decides which (check).
func (r *runner) between() {
	if r.advanceRNG.IntN(advanceOneIn) == 0 {
		r.clock.ms.Add(1 + r.advanceRNG.Int64N(advanceMaxMS))
		r.res.Advances++
	}
	r.latest = max(r.latest, r.clock.ms.Load())
}

// flush ends the open frame (Config.ManualFlush), and notes where in the
// epoch it did: under fsync the frames closed aside go with it.
func (r *runner) flush() {
	r.epoch = append(r.epoch, &entry{flush: true, retention: r.retention})
	r.eng.Flush()
}

func (r *runner) noteError(err error) {
	if errors.Is(err, engine.ErrUnavailable) || errors.Is(err, engine.ErrOutcomeUnknown) {
		r.journalError = true
		return
	}
	r.violation("an op failed with an error of no outcome class: %v", err)
}

// crash ends the process. Under fsync and none it is a power cut two times
// in three, else a crash of the process; under write a process crash, and
// one time in three a power cut (which the mode does not promise to
// survive, but must recover from). A process killed in an fdatasync
// (faultFS.kill) has crashed already. A power cut keeps a seed-chosen
// subset of each file's unsynced pages, each whole, torn or lost, mapped
// pages included (vfs.Mem.CrashPages), and the directory entries as of
// each directory's last sync; a process crash keeps the page cache and
// the entries as they are, unsynced still (vfs.Mem.CrashProcess), for a
// later power cut to lose what the next process does not make durable.
func (r *runner) crash() {
	r.res.Crashes++
	// The process is over: its goroutines may still call in, but every
	// call fails (errKilled) and writes nothing, a write into a mapping
	// included (faultFile.WriteMapped), and none acts on the machine.
	// Dead here, before what the next process finds is taken below: the
	// crash is this point, and no write of the dead process's goroutines
	// lands between it and the taking.
	r.ffs.mu.Lock()
	r.faultsBefore += r.ffs.faults
	r.ffs.rate, r.ffs.kills, r.ffs.retired = 0, false, true
	step := r.ffs.killedAt
	r.ffs.dying = true
	r.ffs.mu.Unlock()
	// A process killed in an fdatasync or at a step crashed then: what it
	// left.
	survived := r.ffs.takeKilled()
	r.powerCut = false
	switch {
	case survived != nil && step != "":
		// Killed at a step: the machine may go down with it.
		r.res.StepKills++
		r.res.StepsKilled = append(r.res.StepsKilled, step)
		r.powerCut = r.drawPowerCut()
	case survived != nil:
		r.res.Kills++
	default:
		r.powerCut = r.drawPowerCut()
		r.placeRetirement(r.powerCut || r.machine.mustRemount())
		if !r.powerCut {
			survived = r.mem.CrashProcess()
		}
	}
	if r.machine.mustRemount() && !r.powerCut {
		// A directory sync failed: the file system is remounted, which
		// keeps only what is on the disk.
		r.powerCut = true
		r.res.Remounts++
	}
	if r.powerCut && r.processCrashed {
		r.res.PowerCutsAfterProcessCrash++
	}
	r.processCrashed = r.processCrashed || !r.powerCut
	if r.powerCut {
		r.res.PowerCuts++
		if survived == nil {
			survived = r.mem
		}
		survived = r.machine.powerCut(survived.CrashPages(pageKeep(r.rng.Uint64())), r.mapping)
	}
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
	r.ffs = r.newFS(survived, r.rng.Uint64())
	// A machine that lost power may boot with its clock behind.
	if r.powerCut {
		r.stepClock(3, false)
	}
}

// placeRetirement places, in write and none runs, the background fdatasync
// of the last full segment (faultFS.retiring) against this crash. Before
// a crash of the process, half the time (drawn from the seed): it ran, or
// the process died first, its frames in the page cache only, whatever the
// journal's goroutine had done by then. So a seed, not the scheduler,
// decides whether the next recovery finds a full segment unsynced, which
// it must sync, history before the newest snapshot included
// (journal.BrokenNoHistorySync), before a later power cut. Before a power
// cut, it ran if the goroutine called it (the process may have gone on
// past it), as before.
func (r *runner) placeRetirement(powerCut bool) {
	r.ffs.settleRetiring(func(called bool) bool {
		if powerCut {
			return called
		}
		if r.retireRNG.IntN(2) == 0 {
			return true
		}
		r.res.RetirementsCut++
		return false
	})
}

// drawPowerCut draws whether a crash is a power cut: under fsync and none
// two times in three, under write one time in three.
func (r *runner) drawPowerCut() bool {
	if r.cfg.Durability == engine.DurabilityWrite {
		return r.rng.IntN(3) == 0
	}
	return r.rng.IntN(3) != 0
}

// pageKeep is a power cut's choice, from seed, of what reached the disk
// of each unsynced page: none of it, all of it, or a torn prefix.
func pageKeep(seed uint64) func(name string, page int64) int {
	return func(name string, page int64) int {
		h := fnv.New64a()
		h.Write([]byte(name))
		pr := rand.New(rand.NewPCG(seed^h.Sum64(), uint64(page)))
		switch pr.IntN(3) {
		case 0:
			return 0
		case 1:
			return vfs.PageBytes
		}
		return pr.IntN(vfs.PageBytes)
	}
}

// newFS returns the file system of a new process on mem.
func (r *runner) newFS(mem *vfs.Mem, seed uint64) *faultFS {
	f := newFaultFS(mem, seed, r.cfg.FaultRate)
	f.mem, f.machine = mem, r.machine
	f.lieSync = r.cfg.Broken == BrokenLyingSync
	f.unsynced = r.cfg.Durability != engine.DurabilityFsync
	if r.cfg.Durability == engine.DurabilityFsync {
		f.killRate = killRate
	}
	f.stepKillRate, f.stepOnly = r.cfg.StepKillRate, r.cfg.stepKillOnly
	return f
}

// remount is the power cut a failed directory sync calls for before a
// failed recovery is tried again: the file system keeps what is on the
// disk.
func (r *runner) remount() {
	r.ffs.mu.Lock()
	r.faultsBefore += r.ffs.faults
	r.ffs.rate, r.ffs.retired, r.ffs.dying = 0, true, true
	r.ffs.mu.Unlock()
	r.res.Remounts++
	r.res.PowerCuts++
	r.powerCut = true
	r.mem = r.machine.powerCut(r.mem.CrashPages(pageKeep(r.rng.Uint64())), r.mapping)
	r.ffs = r.newFS(r.mem, r.rng.Uint64())
	r.ffs.reads = true
}

// stepClock steps the wall clock, one call in oneIn, as NTP may: back by
// up to clockStepBackMaxMS, or (when forward is set, half the time)
// ahead by up to clockStepForwardMaxMS. The engine's time never goes back
// (DESIGN.md, "Expiry by the engine's clock"): after a step back it stands
// until the clock passes it again, and the model (inventory.State.SetTime)
// keeps the same rule, so every check holds the engine to it.
func (r *runner) stepClock(oneIn int, forward bool) {
	if r.clockRNG.IntN(oneIn) != 0 {
		return
	}
	if forward && r.clockRNG.IntN(2) == 0 {
		r.clock.ms.Add(1 + r.clockRNG.Int64N(clockStepForwardMaxMS))
		r.res.ClockStepsForward++
		return
	}
	r.clock.ms.Add(-1 - r.clockRNG.Int64N(clockStepBackMaxMS))
	r.res.ClockStepsBack++
}

// open recovers the engine and checks the promises.
func (r *runner) open() bool {
	r.ffs.mu.Lock()
	r.ffs.reads, r.ffs.kills = true, false
	r.ffs.mu.Unlock()
	defer func() {
		r.ffs.mu.Lock()
		r.ffs.reads = false
		r.ffs.mu.Unlock()
	}()
	retention := retentionChoices[r.retentionRNG.IntN(len(retentionChoices))]
	if r.retention == 0 || retention < r.retention || !r.snapshotWritten() {
		r.retention = retention
	}
	var err error
	for attempt := 0; attempt < openAttempts; attempt++ {
		if attempt > 0 && r.machine.mustRemount() {
			// A directory sync failed: no later one tells what it left,
			// so the file system is remounted before recovery runs again.
			r.remount()
		}
		if attempt == openAttempts-1 {
			r.ffs.setRate(0) // the cause gone
		}
		r.eng, err = engine.Open(engine.Config{
			Dir: r.cfg.Dir, FS: r.ffs, Durability: r.cfg.Durability, Clock: r.clock, TickInterval: -1,
			Retention:    time.Duration(r.retention) * time.Millisecond,
			SegmentBytes: 8 << 10, SnapshotEveryOps: r.snapshotEvery, KeepSnapshots: r.cfg.keepSnapshots, QueueMax: 256, Broken: r.cfg.Broken.journal(),
			// Frames end where the seed says (window), not where the
			// flusher goroutine happens to wake.
			ManualFlush: true,
		})
		if err == nil {
			break
		}
		if ce := (*journal.CorruptionError)(nil); errors.As(err, &ce) {
			r.violation("recovery refused the data as corrupt: %v", err)
			return false
		}
	}
	if err != nil {
		r.violation("recovery failed with faults off: %v", err)
		return false
	}
	r.res.Recoveries++
	// The check reads through the engine, which may journal expiries:
	// faults stay off until it is done.
	r.ffs.setRate(0)
	r.check()
	r.ffs.setRate(r.cfg.FaultRate)
	r.ffs.setKills(true)
	return len(r.res.Violations) == 0
}

// snapshotWritten reports whether the data directory holds a snapshot.
// Once one does, a restart keeps or shortens the retention window but
// does not lengthen it: a longer window remembers the finished holds the
// journal replays but not those a snapshot left out, being past the old
// window when it was taken, so what the engine answers for them depends on
// where the last snapshot fell, which the model cannot know.
func (r *runner) snapshotWritten() bool {
	names, _ := r.mem.List(r.cfg.Dir)
	for _, n := range names {
		if strings.HasPrefix(n, "snapshot-") && strings.HasSuffix(n, ".snap") {
			return true
		}
	}
	return false
}

// retentionChoices are the retention windows an engine opens with, in
// milliseconds: a few windows of simulated time (the clock moves up to 50
// ms a window), and the default.
var retentionChoices = []int64{60, 400, 3000, inventory.RetentionDefault}

// replay returns the model after ops, each applied at its time under the
// window it was applied with, as they ran live.
func replay(ops []applied) *inventory.State {
	m := inventory.NewState()
	for i := range ops {
		m.SetTime(ops[i].at)
		m.SetRetention(ops[i].retention)
		m.Apply(&ops[i].op, nil)
	}
	return m
}

// begin is the model of the engine beginning a batch at time at: the
// holds due by then expire, each a journaled op, appended to cands.
func begin(m *inventory.State, at int64, cands []applied) []applied {
	m.SetTime(at)
	for {
		id, ok := m.NextDue()
		if !ok {
			return cands
		}
		cands = expire(m, id, cands)
	}
}

func expire(m *inventory.State, id string, cands []applied) []applied {
	op := inventory.Expire(id)
	m.Apply(&op, nil)
	return append(cands, applied{op: op, at: m.Now(), retention: m.Retention()})
}

// checkTime holds the model's ops, in apply order, to DESIGN.md's rules of
// time, apart from the state machine the model shares with the engine:
// times never decrease; a hold expires at or after its deadline (its
// batch's time + its ttl), the earliest deadline first, never twice; no
// op is applied while a hold is held past its deadline (a batch expires
// the holds due by its time first); and no confirm or cancel takes a
// hold past its deadline. It returns the first rule broken, or "".
func checkTime(ops []applied) string {
	type held struct {
		deadline int64
		live     bool
	}
	holds := map[string]*held{}
	var last int64
	for i := range ops {
		op, at := &ops[i].op, ops[i].at
		if at < last {
			return fmt.Sprintf("op %d (%s) applied at %d, after an op at %d: the engine's time went back", i+1, op.Kind, at, last)
		}
		last = at
		if op.Kind != inventory.KindExpire {
			for id, h := range holds {
				if h.live && h.deadline <= at {
					return fmt.Sprintf("op %d (%s) applied at %d while hold %s, due at %d, was still held", i+1, op.Kind, at, id, h.deadline)
				}
			}
		}
		h := holds[op.Hold]
		switch op.Kind {
		case inventory.KindHold:
			holds[op.Hold] = &held{deadline: at + op.TTL, live: true}
		case inventory.KindExpire:
			if h == nil || !h.live {
				return fmt.Sprintf("op %d expires hold %s at %d, which is not held (expired twice, or resurrected)", i+1, op.Hold, at)
			}
			if at < h.deadline {
				return fmt.Sprintf("op %d expires hold %s at %d, before its deadline %d", i+1, op.Hold, at, h.deadline)
			}
			for id, o := range holds {
				if o.live && o.deadline < h.deadline {
					return fmt.Sprintf("op %d expires hold %s (due at %d) before hold %s, due earlier at %d", i+1, op.Hold, h.deadline, id, o.deadline)
				}
			}
			h.live = false
		case inventory.KindConfirm, inventory.KindCancel:
			if h == nil || !h.live || at >= h.deadline {
				return fmt.Sprintf("op %d (%s) of hold %s at %d took a hold that is not held or past its deadline", i+1, op.Kind, op.Hold, at)
			}
			h.live = false
		}
	}
	return ""
}

// recoveredTime returns the time the recovered engine runs at, read from
// the disk as recovery reads it: the newest snapshot's time, and the
// stamps of the frames after it. On the way it compares the stamp of every
// op the recovered journal holds (from the oldest it keeps) with the time
// the model applied it at: the engine's own time, which never goes back
// whatever the clock did, is what the journal and the change stream carry
// (an event's time_ms). That time may pass the last op's (a snapshot
// taken after batches that journaled nothing), but not the latest the
// engine ever began a batch at, nor fall before the last op's: a recovery
// that lost its time would run behind its own journal after a step back
// of the clock. ok is false when a violation was found.
func (r *runner) recoveredTime(cands []applied, lsn, prev int) (at int64, ok bool) {
	_, snap, err := journal.LoadSnapshot(r.mem, r.cfg.Dir, uint64(lsn))
	if err != nil {
		r.violation("reading the recovered snapshot: %v", err)
		return 0, false
	}
	at = snap.Now()
	oldest, err := journal.Oldest(r.mem, r.cfg.Dir)
	if err != nil {
		r.violation("reading the recovered journal: %v", err)
		return 0, false
	}
	if r.cfg.Durability != engine.DurabilityFsync {
		// Under write and none, the segments before the newest snapshot
		// (history for the change stream) that the last process wrote are
		// not what recovery reads: a power cut may tear one whose
		// background sync a crash cut short, which the mode does not
		// promise to survive. But the previous recovery synced every
		// segment it kept, history included (journal.BrokenNoHistorySync):
		// the ops that were readable then (from r.readableFrom) up to the
		// last it replayed (prev) must be readable still, those of them
		// still kept. Past them, only what this recovery replayed is held
		// to the model's times.
		snapLSN := int(r.eng.Recovery().SnapshotLSN)
		if start, end := max(oldest, r.readableFrom), min(prev, snapLSN); prev > 0 && int(start) <= end {
			if _, ok := r.journalStamps(cands, start, end); !ok {
				return 0, false
			}
		}
		// What this recovery keeps readable, for the next one to hold it
		// to: from the oldest op if its history came through the crash,
		// else from what it replayed.
		r.readableFrom = uint64(snapLSN) + 1
		if r.readable(oldest, snapLSN) {
			r.readableFrom = oldest
		}
		oldest = max(oldest, uint64(snapLSN)+1)
	}
	last, ok := r.journalStamps(cands, oldest, lsn)
	if !ok {
		return 0, false
	}
	at = max(at, last)
	if lsn > 0 && at < cands[lsn-1].at {
		r.violation("the engine recovered at time %d, before its last op (%d, at %d)", at, lsn, cands[lsn-1].at)
		return 0, false
	}
	if at > r.latest {
		r.violation("the engine recovered at time %d, past any time it ran at (%d)", at, r.latest)
		return 0, false
	}
	return at, true
}

// journalStamps reads the recovered journal's frames from op from up to
// op limit, and compares the stamp of each op with the time the model
// applied it at. It returns the latest stamp; ok is false when a
// violation was found.
func (r *runner) journalStamps(cands []applied, from uint64, limit int) (last int64, ok bool) {
	rd, err := journal.NewReader(r.mem, r.cfg.Dir, from)
	if err != nil {
		r.violation("reading the recovered journal from op %d: %v", from, err)
		return 0, false
	}
	defer rd.Close()
	for {
		f, more, err := rd.Next(uint64(limit))
		if err != nil {
			r.violation("reading the recovered journal from op %d up to %d: %v", from, limit, err)
			return 0, false
		}
		if !more {
			return last, true
		}
		for l := max(f.FirstLSN, from); l <= f.LastLSN(); l++ {
			if c := &cands[l-1]; c.at != f.Stamp {
				r.violation("op %d (%s) is journaled at time %d, the model applied it at %d", l, c.op.Kind, f.Stamp, c.at)
				return 0, false
			}
		}
		last = max(last, f.Stamp)
	}
}

// readable reports whether the recovered journal's frames from op from
// up to op limit can all be read.
func (r *runner) readable(from uint64, limit int) bool {
	rd, err := journal.NewReader(r.mem, r.cfg.Dir, from)
	if err != nil {
		return false
	}
	defer rd.Close()
	for {
		_, more, err := rd.Next(uint64(limit))
		if err != nil {
			return false
		}
		if !more {
			return true
		}
	}
}

func sameResult(a, b *inventory.Result) bool {
	return a.Code == b.Code && a.Count == b.Count && a.Price == b.Price && a.Available == b.Available &&
		a.ShortLine == b.ShortLine && a.ExpiresAt == b.ExpiresAt && a.State == b.State &&
		slices.Equal(a.Lines, b.Lines) && slices.Equal(a.Allocations, b.Allocations)
}

// check compares the recovered engine with the model.
func (r *runner) check() {
	// The candidates: the history, then this epoch's ops that changed
	// state (expiries included), in submit order (= apply order),
	// replayed on the model.
	model := replay(r.history)
	model.SetTime(r.floor)
	base := len(r.history)
	lsn := int(r.eng.Recovery().LastLSN)
	// What the mode promises to survive this crash.
	promised := r.cfg.Durability == engine.DurabilityFsync || (r.cfg.Durability == engine.DurabilityWrite && !r.powerCut)
	if lsn < base && r.res.Recoveries > 1 && promised {
		r.violation("recovered to op %d, but %d ops had been recovered before", lsn, base)
	}
	if lsn < r.recovered {
		r.violation("recovered to op %d, but an earlier recovery replayed ops up to %d and made them durable before it went on", lsn, r.recovered)
	}
	prev := r.recovered
	r.recovered = lsn
	cands := slices.Clone(r.history)
	lastAcked := -1
	// Under fsync a frame stays open until a flush: a batch that finds
	// it open joins it, at its stamp, unless the engine closes it aside
	// (engine.cutLocked). pending: the open frame holds ops; cuts: the
	// frames closed aside since the last flush.
	fsync := r.cfg.Durability == engine.DurabilityFsync
	pending, cuts := false, 0
	for _, e := range r.epoch {
		model.SetRetention(e.retention)
		if e.flush {
			pending, cuts = false, 0
			continue
		}
		if e.mark {
			if fsync && pending {
				due, ok := model.NextDeadline()
				if e.at-model.Now() < cutAfterMS || cuts >= cutsMax || !ok || due > e.at || r.cfg.modelNoCut {
					continue // the batch joins the open frame
				}
				cuts++
				r.res.Cuts++
			}
			n0 := len(cands)
			cands = begin(model, e.at, cands)
			pending = len(cands) > n0
			continue
		}
		if e.refused {
			continue
		}
		if k := e.op.Kind; (k == inventory.KindConfirm || k == inventory.KindCancel) && model.HoldDue(e.op.Hold) {
			cands = expire(model, e.op.Hold, cands)
			pending = true
		}
		res := model.Apply(&e.op, nil)
		if e.acked && !sameResult(&res, &e.result) {
			r.violation("op %v: engine replied %+v, the model %+v", e.op, e.result, res)
		}
		if res.Changed && e.op.Kind.Mutates() {
			pending = true
			cands = append(cands, applied{op: e.op, at: model.Now(), retention: e.retention})
			if e.acked && !e.afterKill {
				lastAcked = len(cands)
			}
		}
	}
	if lsn > len(cands) {
		r.violation("recovered %d ops, only %d were ever applied", lsn, len(cands))
		return
	}
	if v := checkTime(cands); v != "" {
		r.violation("%s", v)
	}
	if lastAcked > lsn && promised {
		r.violation("durability %s: %d acknowledged ops lost (recovered to op %d, acknowledged up to %d)", r.cfg.Durability, lastAcked-lsn, lsn, lastAcked)
	}
	recovered, ok := r.recoveredTime(cands, lsn, prev)
	if !ok {
		return
	}
	// The engine's reads below begin a batch at the clock's time: the
	// holds due by then expire, journaled, in the engine and the model.
	want := replay(cands[:lsn])
	want.SetTime(recovered)
	want.SetRetention(r.retention) // the recovered engine's window rules its answers now
	r.latest = max(r.latest, r.clock.ms.Load())
	history := begin(want, r.clock.ms.Load(), slices.Clone(cands[:lsn]))
	var got []inventory.Row
	err := r.flushing(func() (err error) { got, err = r.eng.Rows(); return err })
	if err != nil {
		r.violation("reading the recovered rows: %v", err)
		return
	}
	if !sameRows(got, want.Rows()) {
		r.violation("the recovered state differs from the model after %d ops", lsn)
	}
	var records []catalog.Record
	if err := r.flushing(func() (err error) { records, err = r.eng.CatalogRecords(); return err }); err != nil {
		r.violation("reading the recovered catalog: %v", err)
		return
	}
	if w := want.CatalogRecords(); !reflect.DeepEqual(records, w) && (len(records) > 0 || len(w) > 0) {
		r.violation("after %d ops the recovered catalog has %d records, the model %d: %v, want %v", lsn, len(records), len(w), records, w)
	}
	for h := 0; h < holdIDs; h++ {
		op := inventory.HoldGet("h" + strconv.Itoa(h))
		var res inventory.Result
		err := r.flushing(func() (err error) { res, err = r.eng.HoldGet(op.Hold); return err })
		if err != nil {
			r.violation("reading hold %s: %v", op.Hold, err)
			return
		}
		if w := want.Apply(&op, nil); !sameResult(&res, &w) {
			r.violation("after %d ops hold %s is %+v, the model's %+v", lsn, op.Hold, res, w)
		}
	}
	r.history = history
	r.floor = want.Now()
	r.epoch = r.epoch[:0]
	r.journalError = false
}

// flushing runs a read, flushing until it is answered (under fsync a
// reply waits for a flush, and the engine runs no flusher of its own).
func (r *runner) flushing(read func() error) error {
	done := make(chan error, 1)
	go func() { done <- read() }()
	for {
		select {
		case err := <-done:
			return err
		default:
		}
		if err := r.eng.Flush(); err != nil {
			return <-done
		}
		runtime.Gosched()
	}
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
