package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// Durability is how much an acknowledged op survives.
type Durability string

const (
	DurabilityFsync Durability = "fsync" // power loss
	DurabilityWrite Durability = "write" // process crash
	DurabilityNone  Durability = "none"  // nothing
)

// ParseDurability parses a mode name.
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(s); d {
	case DurabilityFsync, DurabilityWrite, DurabilityNone:
		return d, nil
	}
	return "", fmt.Errorf("engine: unknown durability %q (want fsync, write or none)", s)
}

// Config configures an engine. The zero value of every field but Dir means
// its default.
type Config struct {
	// Dir is the data directory (created if missing).
	Dir string
	// Durability is the acknowledgement mode (default fsync).
	Durability Durability
	// FS is the file system (default: the real one).
	FS vfs.FS
	// QueueMax bounds the replies waiting for the disk (default 65536):
	// Submit blocks beyond it.
	QueueMax int
	// SegmentBytes is the journal segment size (default
	// journal.SegmentBytesDefault, 16 MiB).
	SegmentBytes int64
	// SnapshotEveryOps is how many journaled ops trigger a snapshot
	// (default 4,194,304); recovery then replays at most about that many.
	SnapshotEveryOps int64
	// KeepSnapshots is how many snapshots stay on disk with the journal
	// after the oldest of them (journal.Options.KeepSnapshots; 0: 2): the
	// change stream can be read from the oldest on.
	KeepSnapshots int
	// NoneFlushBytes is how much journal the none mode buffers before a
	// write (default 1 MiB): its pending frame never holds more than this
	// and one op.
	NoneFlushBytes int
	// FrameBytesMax bounds the frame the writer builds while the flusher
	// writes and syncs the last one (fsync mode, and replicated engines):
	// Submit and the expiry tick wait while the pending frame holds this
	// much (default 16 MiB). Both this and NoneFlushBytes stay within half
	// of journal.FramePayloadMax, the largest frame recovery reads.
	FrameBytesMax int
	// Logger receives startup, recovery and failure notices (default: none).
	Logger *slog.Logger
	// Clock is the time the writer stamps each batch with (default: the
	// system clock). The state machine sees time only through those
	// journaled stamps.
	Clock Clock
	// Retention is how long finished holds and idempotency keys are
	// remembered (default 24h).
	Retention time.Duration
	// KeysMax bounds the idempotency keys kept (default KeysMaxDefault):
	// with that many kept, a request with a new key is refused before
	// anything is applied (ErrUnavailable naming the limit), while a
	// repeat of a kept key is answered as ever. Keys leave once past
	// Retention. Replay never applies it (recovery, a standby's frames, a
	// change-stream follower): the journal holds what was acknowledged.
	KeysMax int
	// TickInterval is how often the writer checks for holds past their
	// deadline when no request arrives (default 10ms). Negative: never;
	// the caller drives expiry with Tick (simulation).
	TickInterval time.Duration
	// Replicated opens the engine as a standby of a replicated shard (see
	// replicate.go): it applies the primary's frames and refuses
	// mutations until Promote. In every durability mode its frames are
	// then sealed and written by the flusher, as in fsync mode.
	Replicated bool
	// Broken deliberately breaks the journal (journal.Broken), for the
	// simulator's test of its own power (package sim). Zero in every real
	// use.
	Broken journal.Broken
	// ManualFlush makes the flusher wait for Flush instead of waking by
	// itself (manual.go): the caller decides where frames end. For the
	// simulator, whose seed then decides them.
	ManualFlush bool
	// CheckOp, when set, is asked about every op submitted, after
	// Op.Check (and also when the submitter ran Op.Check itself): a
	// detail it returns answers the op CodeInvalid with that detail,
	// unapplied and unjournaled, as Op.Check's would. A node of a
	// sharded cluster refuses the groups of other shards with it
	// (package cluster). It runs on the submitting goroutine for every
	// op, so it must be quick and allocate nothing for the ops it lets
	// through. Frames a standby applies are the primary's and are not
	// asked about.
	CheckOp func(op *inventory.Op) string
}

// Clock tells the time. It is injected so that simulation can run the
// engine on a clock of its own.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

// Now reads the wall clock alone (wallClock): time.Now reads the monotonic
// clock as well, which the engine never uses, and a write-mode op reads
// the clock once.
func (systemClock) Now() time.Time { return wallClock() }

// SystemClock is the real clock.
var SystemClock Clock = systemClock{}

// KeysMaxDefault is Config.KeysMax's default: 16,777,216 keys. A key
// with a short reply (a capture from one warehouse, an INSUFFICIENT, a
// stock) costs about 70 bytes of live heap (measured at 8M keys: 66 for
// an INSUFFICIENT capture, 71 for a one-line capture; about 28 of them
// the entry, also what a snapshot writes) and up to about 125 while the
// index map grows, plus the bytes of a longer reply (an order's
// allocation). The default is then 1.1-2 GB of live heap, 2-4 GB of
// process memory under Go's default GOGC. One pipelined client binding a
// new key per request (117,000 a second) reaches it in under three
// minutes, then gets ErrUnavailable until keys pass the window.
const KeysMaxDefault = 1 << 24

// expirySliceMax bounds the holds one batch expires, so that a million
// holds with one deadline never stall the writer: the rest are expired by
// the next batches, which the ticker runs back to back.
const expirySliceMax = 4096

// Validate fills defaults and checks the fields.
func (c *Config) Validate() error {
	if c.Dir == "" {
		return errors.New("engine: no data directory given")
	}
	if c.Durability == "" {
		c.Durability = DurabilityFsync
	}
	if _, err := ParseDurability(string(c.Durability)); err != nil {
		return err
	}
	if c.FS == nil {
		c.FS = vfs.OS{}
	}
	def := func(v *int, d int, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 1 {
			return fmt.Errorf("engine: %s must be positive, got %d", name, *v)
		}
		return nil
	}
	if err := def(&c.QueueMax, 1<<16, "QueueMax"); err != nil {
		return err
	}
	if err := def(&c.NoneFlushBytes, 1<<20, "NoneFlushBytes"); err != nil {
		return err
	}
	if err := def(&c.FrameBytesMax, 16<<20, "FrameBytesMax"); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"NoneFlushBytes", c.NoneFlushBytes}, {"FrameBytesMax", c.FrameBytesMax}} {
		if f.v > journal.FramePayloadMax/2 {
			return fmt.Errorf("engine: %s %d is over half the largest journal frame (%d bytes)", f.name, f.v, journal.FramePayloadMax)
		}
	}
	if c.SnapshotEveryOps == 0 {
		c.SnapshotEveryOps = 1 << 22
	}
	if c.SnapshotEveryOps < 1 {
		return fmt.Errorf("engine: SnapshotEveryOps must be positive, got %d", c.SnapshotEveryOps)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = SystemClock
	}
	if c.Retention == 0 {
		c.Retention = inventory.RetentionDefault * time.Millisecond
	}
	if c.Retention < time.Millisecond {
		return fmt.Errorf("engine: Retention must be at least 1ms, got %v", c.Retention)
	}
	if c.TickInterval == 0 {
		c.TickInterval = 10 * time.Millisecond
	}
	if c.KeysMax == 0 {
		c.KeysMax = KeysMaxDefault
	}
	if c.KeysMax < 1 {
		return fmt.Errorf("engine: KeysMax must be positive, got %d", c.KeysMax)
	}
	return nil
}

// Outcome classes of operational errors. Every error the engine returns
// for a request wraps one of them, so that a front end can tell the client
// whether the request was applied.
var (
	// ErrUnavailable: the request was refused before it was applied (the
	// engine is closed, or stopped after a journal failure): nothing
	// happened; retrying anywhere is safe.
	ErrUnavailable = errors.New("engine: unavailable")
	// ErrOutcomeUnknown: the request was applied in memory but the journal
	// failed before it was durable: it may or may not survive a restart.
	// Retry only with the same idempotency key. Only a request that
	// changed state gets it; a read or an op that changed nothing in a
	// failed batch is refused (ErrUnavailable).
	ErrOutcomeUnknown = errors.New("engine: outcome unknown")
)

// ErrClosed is returned for requests submitted after Close.
var ErrClosed = fmt.Errorf("%w: closed", ErrUnavailable)

// Engine is the reservation engine. Its methods are safe for concurrent
// use.
//
// The state machine is applied by the submitting goroutine itself, one op at
// a time under mu, and the op is added to the journal's pending frame under
// the same lock: apply order is journal order is Submit order. One flusher
// goroutine seals the pending frame, writes it, syncs it (fsync mode) and
// releases the replies it covers. While it does I/O, new ops pile up behind
// it and are covered by its next write: group commit without a timer.
//
// Rejected alternative, measured: a writer goroutine that took requests from
// a channel, applied them and wrote each batch. Every op then cost two
// goroutine hand-offs (to the writer and back) and the writer spent its time
// in write(2), so batches stayed at 1-2 ops; with 16 callers in write mode it
// ran at ~0.64M ops/s on the 2-core test machine, against ~2.5M with 1024
// callers. Applying in the caller leaves one hand-off per op (the reply) and
// keeps the I/O off the apply path.
type Engine struct {
	cfg      Config
	journal  *journal.Journal
	lock     io.Closer
	recovery journal.Recovery

	mu      sync.Mutex
	state   *inventory.State // guarded by mu
	waiting []*Request       // applied, waiting for the flusher; guarded by mu
	// flushing counts the replies the flusher took from waiting and has
	// not released yet: with waiting, what QueueMax bounds. Guarded by mu.
	flushing int
	kicked   bool          // a kick is in the channel; guarded by mu
	room     *sync.Cond    // on mu: signalled when the queue shrinks
	closed   bool          // guarded by mu
	failure  error         // the first journal failure, sticky; guarded by mu
	stopped  chan struct{} // closed with the first journal failure

	kick        chan struct{} // capacity 1: the flusher has work
	stop        chan struct{}
	flusherDone chan struct{}
	step        chan chan struct{} // with ManualFlush: Flush's requests
	tickerDone  chan struct{}
	backlog     bool // more holds are due than one batch expired; guarded by mu

	// keysFull refuses a new idempotency key at Config.KeysMax.
	keysFull error
	// grouped: frames are sealed and written by the flusher only (fsync
	// mode, and every mode of a replicated engine). Set at Open.
	grouped bool
	// cut are frames closed aside (cutLocked), cutBytes their size: the
	// next flush writes them, in order, before the pending frame; guarded
	// by mu. flushFrames is the flusher's list of a flush's frames.
	cut         [][]byte
	cutBytes    int
	flushFrames [][]byte
	standby     *NotPrimaryError // non-nil while a standby (replicate.go); guarded by mu
	replica     Replicator       // the primary's replicated log, or nil; guarded by mu
	// leaseUntil: a primary serves until then (SetLeaseUntil, replicate.go);
	// guarded by mu.
	leaseUntil time.Time
	// frameDec decodes the frames a standby applies (ApplyFrame), one
	// decoder for them all; guarded by frameMu.
	frameMu  sync.Mutex
	frameDec *inventory.Decoder

	opsSinceSnap int64 // guarded by mu
	journaled    int64 // guarded by mu
	appliedSince int   // requests applied since the last flush; guarded by mu

	// gatherTarget is how many sources the flusher expects before it
	// seals the next fsync frame (gather): those the last batch released,
	// coming back, and those that arrived while it synced. waitingSources
	// counts the distinct sources of waiting (Request.Source; each request
	// of source 0 counts apart), sources holds them. Guarded by mu.
	gatherTarget   int
	waitingSources int
	sources        map[uint64]struct{}
	snapshotting   atomic.Bool
	snapshotLSN    atomic.Uint64 // the newest snapshot's LSN (SnapshotLSN)
	snapshotWG     sync.WaitGroup
	// snapshotRead, when set (tests), runs on the snapshot's goroutine
	// after the cut and before the frozen state is read.
	snapshotRead func()

	requestPool sync.Pool
	stats       stats
	durable     durableFeed // what followers of the journal may read (changes.go)
}

// Open recovers the state in cfg.Dir and starts the flusher.
func Open(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Made durable, name included: a power cut must not take a new data
	// directory with the segments synced into it.
	if err := journal.MakeDir(journal.Options{FS: cfg.FS, Dir: cfg.Dir, Broken: cfg.Broken, Logger: cfg.Logger}); err != nil {
		return nil, fmt.Errorf("engine: data directory %s: %w", cfg.Dir, err)
	}
	lock, err := cfg.FS.Lock(path.Join(cfg.Dir, "LOCK"))
	if err != nil {
		switch {
		case errors.Is(err, vfs.ErrLocked):
			return nil, fmt.Errorf("engine: data directory %s is in use: %w", cfg.Dir, err)
		case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
			return nil, fmt.Errorf("engine: data directory %s is not writable: %w", cfg.Dir, err)
		}
		return nil, fmt.Errorf("engine: lock data directory %s: %w", cfg.Dir, err)
	}
	start := time.Now()
	// Replay runs with the shortest window (inventory.ReplayRetentionMS),
	// and cfg.Retention rules once it is done (SetRetention below).
	j, state, rec, err := journal.Open(journal.Options{FS: cfg.FS, Dir: cfg.Dir, SegmentBytes: cfg.SegmentBytes, Logger: cfg.Logger, RetentionMS: inventory.ReplayRetentionMS, KeepSnapshots: cfg.KeepSnapshots,
		// write and none promise survival of a process crash at most: a
		// frame copied into a shared mapping is enough, with no system call.
		Mmap: cfg.Durability != DurabilityFsync,
		// and their segments say so, so that recovery cuts a hole a power
		// cut left in them instead of refusing it as corruption.
		Unsynced: cfg.Durability != DurabilityFsync, Replica: cfg.Replicated, Broken: cfg.Broken})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("engine: recover %s: %w", cfg.Dir, err)
	}
	cfg.Logger.Info("engine: recovered", "dir", cfg.Dir, "durability", string(cfg.Durability),
		"rows", state.Len(), "snapshot_lsn", rec.SnapshotLSN, "replayed_ops", rec.Replayed,
		"last_lsn", rec.LastLSN, "tail_cut_bytes", rec.TailCut, "took", time.Since(start))
	e := &Engine{
		cfg:         cfg,
		state:       state,
		journal:     j,
		lock:        lock,
		recovery:    rec,
		kick:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
		flusherDone: make(chan struct{}),
		tickerDone:  make(chan struct{}),
		stopped:     make(chan struct{}),
		grouped:     cfg.Durability == DurabilityFsync || cfg.Replicated,
		keysFull: fmt.Errorf("%w: %d idempotency keys are kept, the limit (keys max, allot serve --keys-max): a new key is refused until kept ones pass the retention window (%v); a repeat of a kept key is answered",
			ErrUnavailable, cfg.KeysMax, cfg.Retention),
	}
	e.snapshotLSN.Store(rec.SnapshotLSN)
	if cfg.Replicated {
		e.standby = &NotPrimaryError{}
	}
	state.SetRetention(cfg.Retention.Milliseconds())
	// Replay keeps every journaled key: the keys past the window (by the
	// last op's time) go now, before the engine takes a request, rather
	// than under the lock of the first request that meets KeysMax.
	state.CollectKeys()
	e.room = sync.NewCond(&e.mu)
	e.sources = map[uint64]struct{}{}
	e.requestPool.New = func() any { return NewRequest() }
	if cfg.ManualFlush {
		e.step = make(chan chan struct{})
	}
	go e.flusher()
	if cfg.TickInterval > 0 {
		go e.ticker()
	} else {
		close(e.tickerDone)
	}
	return e, nil
}

// Recovery returns what Open found on disk.
func (e *Engine) Recovery() journal.Recovery { return e.recovery }

// Durability returns the engine's mode.
func (e *Engine) Durability() Durability { return e.cfg.Durability }

// Dir returns the data directory.
func (e *Engine) Dir() string { return e.cfg.Dir }

// Submit applies r's op and queues its reply for the flusher; r.Wait returns
// the outcome once it is as durable as the mode promises. Requests apply in
// the order Submit is called. Submit blocks while QueueMax replies are
// already waiting for the disk (back-pressure). A malformed op is answered
// with CodeInvalid without touching state.
func (e *Engine) Submit(r *Request) error {
	if d := e.invalid(r); d != "" {
		r.Result, r.Err = inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
		r.releaseNow()
		return nil
	}
	e.mu.Lock()
	// The batch the flusher is writing counts too: room was once made
	// when the flusher took the batch, so that another QueueMax piled up
	// behind the one on its way to the disk.
	for e.mustWaitLocked() {
		e.room.Wait()
	}
	e.checkLeaseLocked()
	if !e.closed && e.failure == nil {
		if e.standby != nil {
			e.submitStandbyLocked(r)
			return nil
		}
		e.beginLocked()
		e.expireBacklogLocked() // may let the lock go: closed and failure again below
	}
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	if e.failure != nil {
		r.Err = refused(e.failure)
		e.mu.Unlock()
		r.releaseNow()
		return nil
	}
	e.applyLocked(r)
	if e.failure != nil && r.Err == nil {
		// The journal failed during this Submit (a pending frame written
		// before the op, or a full none-mode frame after it): the op is
		// applied in memory but must not be acknowledged.
		r.Err = failedBatch(r, e.failure)
	}
	// By mode: who writes the op's frame, and when its reply is released.
	var kick, replyNow bool
	mode := e.cfg.Durability
	if e.grouped {
		mode = DurabilityFsync // the flusher's path (replicate.go)
	}
	switch mode {
	case DurabilityNone:
		// Reply now; frames are written in large chunks (journalLocked,
		// beginLocked and the flusher's tick write them).
		kick = e.opsSinceSnap >= e.cfg.SnapshotEveryOps
		replyNow = true
	case DurabilityWrite:
		// The op's frame goes to the operating system now, under the
		// lock, and the reply is released at once. With the journal mapped
		// (journal.Options.Mmap) that is a copy into the page cache,
		// cheaper than handing the op to the flusher and parking until it
		// wrote: measured on the server's one-op-per-connection path. The
		// flusher still takes snapshots.
		if err := e.writePendingLocked(); err != nil {
			r.Err = failedBatch(r, err)
		}
		kick = e.opsSinceSnap >= e.cfg.SnapshotEveryOps
		replyNow = true
	default:
		// fsync: the flusher writes, syncs and replies. It wakes for the
		// first request, and again when as many sources are waiting as it
		// expects (see gather).
		kick = e.enqueueLocked(r)
	}
	e.unlockKick(kick)
	if replyNow {
		r.releaseNow()
	}
	return nil
}

// mustWaitLocked reports whether a submitter must wait for room: QueueMax
// replies are waiting for the disk, or the pending frame is full, and the
// engine is neither closed nor stopped.
func (e *Engine) mustWaitLocked() bool {
	return (len(e.waiting)+e.flushing >= e.cfg.QueueMax || e.frameFullLocked()) && !e.closed && e.failure == nil
}

// unlockKick releases mu and, when kick is set and no kick is pending
// yet, wakes the flusher.
func (e *Engine) unlockKick(kick bool) {
	kick = kick && !e.kicked
	if kick {
		e.kicked = true
	}
	e.mu.Unlock()
	if kick {
		e.sendKick()
	}
}

// sendKick wakes the flusher. It never waits: a kick already in the
// channel wakes the flusher as well, and it then takes what the caller
// queued. The channel holds one kick, and one can be left in it while
// kicked says none is (a kicker that set kicked and sent only after a
// flush had reset it and taken its request). A bare send then waited for
// the flusher to come round, a whole fdatasync, and after Close for ever
// once the flusher chose stop over that kick and returned: the Submit of a
// request already applied and answered never returned, and a ticker
// blocked so hung Close (TestKickDoesNotOutliveTheFlusher).
func (e *Engine) sendKick() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// invalid says what is wrong with r's op ("" when nothing is): Op.Check,
// unless the submitter ran it (Request.Checked), then Config.CheckOp. A
// read run on the writer (r.fn) is neither.
func (e *Engine) invalid(r *Request) string {
	checked := r.takeChecked()
	if r.fn != nil {
		return ""
	}
	if !checked {
		if d := r.Op.Check(); d != "" {
			return d
		}
	}
	if e.cfg.CheckOp != nil {
		return e.cfg.CheckOp(&r.Op)
	}
	return ""
}

// refused is the error of an op the engine refused because it stopped
// earlier (its journal failed, or a primary's lease lapsed): never
// applied.
func refused(failure error) error {
	if errors.Is(failure, errLeaseLapsed) {
		return fmt.Errorf("%w: %w", ErrUnavailable, failure)
	}
	return fmt.Errorf("%w: the journal failed: %w", ErrUnavailable, failure)
}

// unknownOutcome is the error of an op applied in memory whose journal
// write or sync failed: it may or may not be durable.
func unknownOutcome(err error) error { return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err) }

// failedBatch is the error of r, answered in a batch whose journal write,
// sync or replication failed (err). An op that changed state may or may
// not be durable: ErrOutcomeUnknown. A read, and an op that changed
// nothing (a refusal without a key, an idempotent repeat), applied
// nothing, so it is refused (ErrUnavailable, safe to retry anywhere); its
// answer is not given, as it may rest on ops of the batch that will not
// survive.
func failedBatch(r *Request, err error) error {
	unknown := errors.Is(err, ErrOutcomeUnknown)
	switch {
	case r.fn == nil && r.Result.Changed && unknown:
		return err
	case r.fn == nil && r.Result.Changed:
		return unknownOutcome(err)
	case unknown:
		// Not wrapped: the reply must not test as ErrOutcomeUnknown.
		return fmt.Errorf("%w: the journal failed in its batch (this request changed nothing): %v", ErrUnavailable, err)
	}
	return fmt.Errorf("%w: the journal failed in its batch (this request changed nothing): %w", ErrUnavailable, err)
}

// applyLocked applies r's op (or runs its read) on the state and adds a
// mutation to the journal's pending frame. The caller began the batch
// (beginLocked).
func (e *Engine) applyLocked(r *Request) {
	r.Err = nil
	e.appliedSince++
	if r.fn != nil {
		r.fn(e.state)
	} else {
		if key := r.Op.IdempotencyKey; key != "" && e.state.KeysKept() >= e.cfg.KeysMax && !e.state.KeyKept(key) {
			// At the limit, a new key: keys past the window may be
			// dropped to make room, else it is refused before it
			// touches state, not applied and not journaled, so replay
			// (which never asks) meets the same ops. Checked here, on
			// the live path only, rather than in the state machine,
			// whose every op must replay.
			if e.state.CollectKeys(); e.state.KeysKept() >= e.cfg.KeysMax {
				r.Result, r.Err = inventory.Result{}, e.keysFull
				e.stats.keysRefused.Add(1)
				return
			}
		}
		if k := r.Op.Kind; (k == inventory.KindConfirm || k == inventory.KindCancel) && e.state.HoldDue(r.Op.Hold) {
			// Expire it first, as its own journaled op: the change stream
			// then shows an expiry, and the confirm or cancel meets an
			// expired hold.
			e.expireHoldLocked(r.Op.Hold)
		}
		// Straight into r.Result: a Result is 160 bytes, and a copy
		// through a local was a second one.
		r.Result = e.state.ApplyCheckedInto(&r.Op, r.Lines, r.Buffers) // Submit checked it
		res := &r.Result
		if res.Lines != nil {
			r.Lines = res.Lines
		}
		if b := r.Buffers; b != nil {
			if res.Allocations != nil {
				b.Allocations = res.Allocations[:0]
			}
			if res.Hits != nil {
				b.Hits = res.Hits[:0]
			}
		}
		if res.Changed && r.Op.Kind.Mutates() {
			e.journalLocked(&r.Op)
		}
	}
}

// enqueueLocked adds r to the replies the flusher releases after its
// fdatasync (fsync mode), counting its source for the group commit, and
// reports whether the flusher should be kicked: for the first request, and
// again when as many sources are waiting as it expects (see gather).
func (e *Engine) enqueueLocked(r *Request) bool {
	e.waiting = append(e.waiting, r)
	if r.Source == 0 {
		e.waitingSources++
	} else if _, seen := e.sources[r.Source]; !seen {
		e.sources[r.Source] = struct{}{}
		e.waitingSources++
	}
	return len(e.waiting) == 1 || e.waitingSources >= e.gatherTarget
}

// beginLocked starts a batch if none is open: it stamps the journal's
// pending frame with the clock (never going back), sets the state
// machine's time to it, expires a bounded slice of the holds due by then,
// and lets the state machine free what its retention let go. In write and
// none modes, a frame left open from an earlier millisecond is written
// first, so that every op is applied at a fresh stamp. In fsync mode a
// frame stays open until the flusher takes it, at most one fdatasync, or
// until a hold comes due cutAfter past its stamp (cutLocked).
//
// The state collects (State.Collect) only when its time moved: once a
// millisecond rather than once an op where every op is a batch (write
// mode). No answer depends on when it runs, and what one call leaves (it
// frees a bounded amount) waits at most until the clock's next
// millisecond.
func (e *Engine) beginLocked() {
	now := e.cfg.Clock.Now().UnixMilli()
	fresh := true
	if e.journal.Pending() > 0 {
		switch {
		case e.grouped:
			fresh = e.cutLocked(now)
		case now <= e.journal.Stamp():
			fresh = false
		case e.writePendingLocked() != nil:
			return
		}
	}
	moved := false
	if fresh {
		moved = now > e.state.Now()
		e.state.SetTime(now)
		stamp := e.state.Now()
		if e.cfg.Broken == journal.BrokenStampRawClock {
			stamp = now // the simulator's test of its own power
		}
		e.journal.SetStamp(stamp)
	}
	// Holds due by the open frame's stamp may expire in it too: replay
	// sees the same stamp.
	e.expireLocked()
	if moved {
		e.state.Collect()
	}
}

// cutAfter is how long a frame may stay open in fsync mode (and on a
// replicated engine) while a hold comes due after its stamp before it is
// closed aside for a fresh one (cutLocked). Below the 100 ms within which
// DESIGN.md has a due hold expire, far above an fdatasync or a log append
// in health: it cuts only behind a stalled disk or log.
const cutAfter = 50 * time.Millisecond

// cutLocked decides, for a batch in fsync mode (grouped) that finds the
// pending frame open, whether it gets a fresh frame: when the open one was
// stamped cutAfter or more before now and a hold is due by now, the open
// frame is closed aside (the flusher writes it before the pending one, in
// the same flush) and the batch begins a frame stamped now. Otherwise it
// joins the open frame at its stamp, as every op that arrives during an
// fdatasync does.
//
// Without it a frame stayed open at its first op's stamp for as long as
// the flusher's fdatasync (or append to the replicated log) took: behind
// a 400 ms fdatasync no tick expired a hold due after that stamp, and a
// confirm sent 350 ms past the hold's deadline was answered OK
// (TestSlowSyncDoesNotHoldBackExpiry). At most cutsMax frames, of
// FrameBytesMax in all, wait aside; past that the batch joins the open
// frame.
func (e *Engine) cutLocked(now int64) (fresh bool) {
	if now-e.journal.Stamp() < cutAfter.Milliseconds() || len(e.cut) >= cutsMax ||
		e.cutBytes+e.journal.PendingBytes() > e.cfg.FrameBytesMax {
		return false
	}
	if due, ok := e.state.NextDeadline(); !ok || due > now {
		return false
	}
	f := e.journal.SealAside()
	e.cut = append(e.cut, f)
	e.cutBytes += len(f)
	return true
}

// cutsMax bounds the frames closed aside between two flushes: at one per
// cutAfter, a stall of 51 s. Their bytes are bounded by FrameBytesMax as
// the open frame's are (what an expiry storm can add).
const cutsMax = 1024

// expireLocked expires up to expirySliceMax holds due by the state's time,
// each a journaled Expire op.
func (e *Engine) expireLocked() {
	n := 0
	for ; n < expirySliceMax; n++ {
		if e.frameFullLocked() {
			// The rest wait for the flusher to take the frame.
			e.backlog = true
			return
		}
		id, ok := e.state.NextDue()
		if !ok {
			break
		}
		e.expireHoldLocked(id)
	}
	e.backlog = n == expirySliceMax
}

// expireBacklogLocked expires, slice by slice, the holds still due after
// beginLocked's slice, so that a request is applied only once every hold
// due by its batch's stamp expired (DESIGN.md, "Expiry by the engine's
// clock"), however many came due at once. Between slices it lets the lock
// go, so that reads and other writers go on (write mode writes the
// slice's frame first); while the pending frame is full it wakes the
// flusher and waits for room, as Submit does. Tick keeps to one slice a
// call: the ticker clears a backlog in bounded batches, and a request that
// comes meanwhile finishes it here. The caller checks closed and failure
// after it.
//
// Rejected: applying the request after one slice. With more than
// expirySliceMax holds due at once (a restart after downtime, a drop
// whose carts share a deadline) a capture was answered INSUFFICIENT
// against units due back (TestRequestsWaitForEveryDueHold), an answer a
// keyed request keeps for the retention window.
func (e *Engine) expireBacklogLocked() {
	for e.backlog && !e.closed && e.failure == nil {
		if e.frameFullLocked() {
			if !e.kicked {
				e.kicked = true
				select {
				case e.kick <- struct{}{}:
				default:
				}
			}
			e.room.Wait()
			continue
		}
		if !e.grouped && e.cfg.Durability == DurabilityWrite && e.writePendingLocked() != nil {
			return
		}
		e.mu.Unlock()
		e.mu.Lock()
		if !e.closed && e.failure == nil {
			e.beginLocked()
		}
	}
}

// frameFullLocked reports whether the pending frame holds FrameBytesMax,
// where the flusher alone writes frames: new ops wait for it to take the
// frame. An expiry storm during a slow fdatasync grew it without a bound,
// toward frames larger than recovery reads (journal.FramePayloadMax).
func (e *Engine) frameFullLocked() bool {
	return e.grouped && e.journal.PendingBytes() >= e.cfg.FrameBytesMax
}

// expireHoldLocked expires hold id, due by the state's time, as a
// journaled Expire op (the only op the writer makes itself), and records
// its lag.
func (e *Engine) expireHoldLocked(id string) {
	if at, ok := e.state.HoldExpiresAt(id); ok {
		e.stats.expiry(e.cfg.Clock.Now().UnixMilli() - at)
	}
	op := inventory.Expire(id)
	if res := e.state.Apply(&op, nil); !res.Changed {
		panic(fmt.Sprintf("engine: expiring hold %q changed nothing: %s %s", id, res.Code, res.Detail))
	}
	e.journalLocked(&op)
}

// journalLocked adds op to the journal's pending frame. In none mode it
// writes the frame once it holds NoneFlushBytes, so that the frame is
// bounded whoever adds to it: a batch of expiries (Tick adds thousands of
// them within one millisecond, and any number while the clock stands
// still) once grew it without a bound until the flusher's next tick.
func (e *Engine) journalLocked(op *inventory.Op) {
	e.journal.Add(op)
	e.opsSinceSnap++
	e.journaled++
	if !e.grouped && e.cfg.Durability == DurabilityNone && e.journal.PendingBytes() >= e.cfg.NoneFlushBytes {
		e.writePendingLocked()
	}
}

// writePendingLocked writes the pending frame under the lock (write and
// none modes: every frame is written under mu there, so writes never
// interleave). A failure stops the engine.
func (e *Engine) writePendingLocked() error {
	if e.failure != nil {
		// Stopped: nothing more reaches the journal.
		return e.failure
	}
	frame := e.journal.Seal()
	if frame == nil {
		return nil
	}
	if err := e.journal.WriteFrame(frame); err != nil {
		e.failLocked(err)
		return err
	}
	e.published(frame)
	return nil
}

// Tick runs one batch with no request: it expires the holds due by the
// clock's time (a bounded slice) and reports whether more are due. The
// engine's ticker calls it every TickInterval; with a negative
// TickInterval the caller does (simulation).
func (e *Engine) Tick() (backlog bool, err error) {
	e.mu.Lock()
	for e.frameFullLocked() && !e.closed && e.failure == nil {
		e.room.Wait()
	}
	if e.closed {
		e.mu.Unlock()
		return false, ErrClosed
	}
	if e.failure != nil {
		e.mu.Unlock()
		return false, refused(e.failure)
	}
	if e.standby != nil {
		// A standby's expiries come in the primary's frames.
		e.mu.Unlock()
		return false, nil
	}
	e.backlog = false
	e.beginLocked()
	backlog = e.backlog
	kick := false
	switch {
	case e.journal.Pending() == 0:
	case e.grouped:
		kick = !e.kicked
		e.kicked = true
	default:
		// An expiry that nobody waits for is still written now in write
		// mode; none mode leaves it to the flusher's tick.
		if e.cfg.Durability == DurabilityWrite {
			e.writePendingLocked()
		}
	}
	e.mu.Unlock()
	if kick {
		e.sendKick()
	}
	return backlog, nil
}

// ticker expires holds when no request comes: every TickInterval, and back
// to back while a backlog of due holds remains.
func (e *Engine) ticker() {
	defer close(e.tickerDone)
	t := time.NewTicker(e.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		for {
			backlog, err := e.Tick()
			if err != nil || !backlog {
				break
			}
			select {
			case <-e.stop:
				return
			default:
			}
		}
	}
}

func (e *Engine) do(op inventory.Op, lines []inventory.Line) (inventory.Result, error) {
	r := e.requestPool.Get().(*Request)
	r.Op, r.Lines = op, lines
	if err := e.Submit(r); err != nil {
		r.Lines = nil
		e.requestPool.Put(r)
		return inventory.Result{}, err
	}
	err := r.Wait()
	res := r.Result
	r.Lines, r.Result, r.Err = nil, inventory.Result{}, nil
	e.requestPool.Put(r)
	return res, err
}

// read runs fn on the state, in order with the ops, and returns when its
// reply is as durable as the mode promises.
func (e *Engine) read(fn func(*inventory.State)) error {
	r := NewRequest()
	r.fn = fn
	if err := e.Submit(r); err != nil {
		return err
	}
	return r.Wait()
}

// Rows returns every row, ordered by key.
func (e *Engine) Rows() ([]inventory.Row, error) {
	var rows []inventory.Row
	err := e.read(func(s *inventory.State) { rows = s.Rows() })
	return rows, err
}

// RowsOfSKU returns the rows of one SKU ordered by warehouse, condition,
// source. An invalid SKU is an error.
func (e *Engine) RowsOfSKU(sku string) ([]inventory.Row, error) {
	if d := inventory.CheckID(sku); d != "" {
		return nil, fmt.Errorf("engine: sku %s", d)
	}
	var rows []inventory.Row
	err := e.read(func(s *inventory.State) { rows = s.RowsOfSKU(sku) })
	return rows, err
}

// Close stops taking requests, finishes every applied one, makes the
// journal durable (whatever the mode) and releases the data directory.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.room.Broadcast()
	e.mu.Unlock()
	close(e.stop)
	<-e.tickerDone
	<-e.flusherDone
	e.snapshotWG.Wait()
	err := e.journal.Close()
	e.mu.Lock()
	if e.failure != nil {
		err = e.failure
	}
	e.mu.Unlock()
	if lerr := e.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// flusher is the one goroutine that writes and syncs the journal and
// releases replies.
func (e *Engine) flusher() {
	defer close(e.flusherDone)
	var tick <-chan time.Time
	if e.cfg.Durability != DurabilityFsync && e.step == nil {
		// none mode: bound what a crash can take, though the mode
		// promises nothing. none and write: keep the stats current, since
		// replies do not pass through the flusher there.
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	var spare []*Request
	gatherTimer := time.NewTimer(time.Hour)
	gatherTimer.Stop()
	var lastSync time.Duration
	for {
		stopping := false
		var stepped chan struct{}
		select {
		case <-e.kick:
			if e.step != nil {
				continue // the caller flushes (ManualFlush)
			}
			if e.grouped {
				stopping = e.gather(gatherTimer, lastSync)
				break
			}
			// The kick came from a caller that is about to park; callers
			// that are runnable behind it would each get a write of their
			// own if the flusher ran now. Yielding once lets them apply
			// first, so that one write covers them all.
			runtime.Gosched()
		case <-tick:
		case stepped = <-e.step:
		case <-e.stop:
			stopping = true
		}
		spare, lastSync = e.flush(spare)
		if stepped != nil {
			close(stepped)
		}
		if stopping {
			// Submit refuses new requests now; one more pass takes any
			// that were applied after the last kick was consumed.
			e.flush(spare)
			return
		}
	}
}

// gather is the fsync group commit's wait before it seals a frame: until
// requests of gatherTarget sources are waiting (the sources the last batch
// answered, coming back with their next ops, and those that arrived during
// its fdatasync), or for at most one fdatasync (lastSync), or until Close.
// Sources, not requests: a connection whose pipeline is waiting sends no
// more until its replies are out (client.Batcher sends one pipeline after
// the other on one connection), so counting its requests made the flusher
// wait, every batch, for ones that could not come.
//
// Rejected, measured: sealing at the first arrival. With 16 connections of
// one op each, the others, a round trip behind, then waited for that whole
// fdatasync and then for their own: the batch wait was the largest stage
// (a median of 0.53 ms beside a 0.64 ms fdatasync) and the connections
// settled into two groups taking turns, 8.2 ops per fdatasync. Waiting for
// the group as it was last seen merged them: 15.5 ops per fdatasync, a mean
// batch wait of 0.19 ms instead of 0.89 ms, +31% ops/s in the same run
// (a machine at load 21). Waiting costs at most one fdatasync, which is
// what a late op waits anyway. It reports whether Close was called.
func (e *Engine) gather(timer *time.Timer, lastSync time.Duration) (stopping bool) {
	e.mu.Lock()
	target := e.gatherTarget
	if len(e.waiting) == 0 || e.waitingSources >= target || e.closed || e.failure != nil || lastSync <= 0 {
		e.mu.Unlock()
		return false
	}
	e.kicked = false // the Submit that reaches target kicks again
	e.mu.Unlock()
	timer.Reset(min(lastSync, gatherWaitMax))
	defer timer.Stop()
	for {
		select {
		case <-e.kick:
			e.mu.Lock()
			done := e.waitingSources >= target
			if !done {
				e.kicked = false
			}
			e.mu.Unlock()
			if done {
				return false
			}
		case <-timer.C:
			return false
		case <-e.stop:
			return true
		}
	}
}

// writeFrames makes a flush's frames as durable as the mode says, in
// order: on a primary each is appended to the log first (the local journal
// stays a prefix of it), then they are written to the journal and, in
// fsync mode, synced once, and published. The error is classed for the
// batch's replies: refused only when no frame reached the log.
func (e *Engine) writeFrames(replica Replicator, frames [][]byte, trace *Trace) error {
	trace.Taken = time.Now()
	if replica != nil {
		for i, frame := range frames {
			if err := e.replicate(replica, frame); err != nil {
				if i > 0 && !errors.Is(err, ErrOutcomeUnknown) {
					// The frames before it are in the log: the batch's
					// outcome is unknown, not refused.
					return unknownOutcome(err)
				}
				return err
			}
		}
	}
	if err := e.writeLocal(frames, trace); err != nil {
		e.fail(err)
		return unknownOutcome(err)
	}
	for _, frame := range frames {
		e.published(frame)
	}
	return nil
}

// writeLocal writes frames to the journal and, in fsync mode, syncs them.
func (e *Engine) writeLocal(frames [][]byte, trace *Trace) error {
	for _, frame := range frames {
		if err := e.journal.WriteFrame(frame); err != nil {
			return err
		}
	}
	if e.cfg.Durability != DurabilityFsync {
		return nil
	}
	trace.Written = time.Now()
	err := e.journal.Sync()
	trace.Synced = time.Now()
	e.stats.sync(trace.Synced.Sub(trace.Written))
	return err
}

// gatherWaitMax bounds gather's wait whatever the last fdatasync took.
const gatherWaitMax = 2 * time.Millisecond

// flush takes the waiting replies, the frames closed aside and the pending
// frame, writes them in order (on a primary, appends each to the log
// first), syncs them once in fsync mode, and releases the replies. It returns the
// batch slice for reuse and how long fdatasync took (0 when none ran; on a
// replicated primary, the log's append, the write and the fdatasync).
func (e *Engine) flush(spare []*Request) ([]*Request, time.Duration) {
	e.mu.Lock()
	e.kicked = false
	batch := e.waiting
	e.waiting = spare[:0]
	e.flushing = len(batch)
	batchSources := e.waitingSources
	e.waitingSources = 0
	clear(e.sources)
	applied := e.appliedSince
	e.appliedSince = 0
	frames := e.flushFrames[:0]
	replica := e.replica
	if e.grouped {
		frames = append(frames, e.cut...)
		clear(e.cut)
		e.cut, e.cutBytes = e.cut[:0], 0
		if frame := e.journal.Seal(); frame != nil {
			frames = append(frames, frame)
		}
		e.room.Broadcast() // room in the frame (frameFullLocked)
	} else {
		// write and none: frames are written under mu.
		e.writePendingLocked()
	}
	var snap *journal.Snapshot
	var frozen *inventory.Frozen
	if e.opsSinceSnap >= e.cfg.SnapshotEveryOps && !e.snapshotting.Load() && e.failure == nil {
		// A frame boundary: everything added so far is in frame or
		// before it. Freezing costs O(chunks); the snapshot's goroutine
		// reads the state as it is now while ops go on (inventory.Frozen).
		snap = &journal.Snapshot{LSN: e.journal.NextLSN() - 1}
		frozen = e.state.Freeze()
		e.opsSinceSnap = 0
	}
	failure := e.failure
	e.mu.Unlock()

	var trace Trace
	err := failure
	if err == nil && len(frames) > 0 {
		err = e.writeFrames(replica, frames, &trace)
	} else if err != nil {
		err = refused(err)
	}
	clear(frames)
	e.flushFrames = frames[:0]
	// In none mode replies do not wait for the flush; the batch is then
	// what was applied since the last one.
	e.stats.batch(applied)
	if e.grouped && len(batch) > 0 {
		// Counted before any reply goes, so no client is counted twice:
		// the next frame waits for this batch's clients and for those
		// that arrived during its fdatasync, as one group.
		e.mu.Lock()
		e.gatherTarget = batchSources + e.waitingSources
		e.mu.Unlock()
	}
	for i, r := range batch {
		if err != nil {
			r.Err = err
			if errors.Is(err, ErrOutcomeUnknown) {
				r.Err = failedBatch(r, err)
			}
		}
		r.Trace = trace
		r.release()
		batch[i] = nil
	}
	if len(batch) > 0 {
		// Their replies are out: room for as many more.
		e.mu.Lock()
		e.flushing = 0
		e.room.Broadcast()
		e.mu.Unlock()
	}
	if snap != nil && err == nil {
		e.startSnapshot(snap, frozen)
	} else if frozen != nil {
		e.thaw(frozen)
	}
	if replica != nil && !trace.Synced.IsZero() {
		// A primary's late op waits for the log's append as well as the
		// local fdatasync: the gather may wait as long for the group
		// (TestReplicatedPrimaryKeepsClientsInOneFrame). Bounded by the
		// local sync only, 16 clients at pipeline 1 split into groups
		// taking turns at the log, and at pipeline 64 frames held about
		// 640 of the 1,024 ops in flight; with it, +7% (pipeline 1) and
		// +10% (pipeline 64) ops/s, medians of five side-by-side runs.
		return batch, trace.Synced.Sub(trace.Taken)
	}
	return batch, trace.Synced.Sub(trace.Written)
}

// thaw ends a frozen view of the state (its reader is done).
func (e *Engine) thaw(f *inventory.Frozen) {
	e.mu.Lock()
	e.state.Thaw(f)
	e.mu.Unlock()
}

func (e *Engine) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failLocked(err)
}

func (e *Engine) failLocked(err error) {
	if e.failure == nil {
		e.failure = err
		close(e.stopped)
		e.room.Broadcast()
		if errors.Is(err, errLeaseLapsed) {
			// Not the journal's fault: the node steps down, and says why.
			e.cfg.Logger.Warn("engine: the primary's lease lapsed; refusing all further requests", "err", err)
		} else {
			e.cfg.Logger.Error("engine: journal failed; refusing all further requests", "err", err)
		}
	}
}

// Stopped is closed when the engine stops taking requests after a journal
// (or, on a replicated primary, a log) failure: from then on it refuses
// every request until it is closed and opened again. Failure says why.
func (e *Engine) Stopped() <-chan struct{} { return e.stopped }

// Closed reports whether Close was called: the engine refuses every
// request (ErrClosed) and no event will become durable.
func (e *Engine) Closed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// Failure returns the failure that stopped the engine, or nil.
func (e *Engine) Failure() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failure
}

// startSnapshot writes a snapshot of the state frozen at a frame boundary
// on its own goroutine.
func (e *Engine) startSnapshot(snap *journal.Snapshot, frozen *inventory.Frozen) {
	e.snapshotting.Store(true)
	e.snapshotWG.Add(1)
	go func() {
		defer e.snapshotWG.Done()
		defer e.snapshotting.Store(false)
		start := time.Now()
		if e.snapshotRead != nil {
			e.snapshotRead() // tests: ops go on while the snapshot is read
		}
		snap.Rows = frozen.AppendRows(make([]inventory.Row, 0, frozen.Len()))
		snap.Sections = frozen.Sections()
		e.thaw(frozen)
		slices.SortFunc(snap.Rows, func(a, b inventory.Row) int { return inventory.CompareRowKeys(a.Key, b.Key) })
		if err := e.journal.WriteSnapshot(snap); err != nil {
			// The journal still holds every op; recovery just replays more.
			e.cfg.Logger.Error("engine: snapshot failed", "lsn", snap.LSN, "err", err)
			return
		}
		e.snapshotLSN.Store(snap.LSN)
		e.stats.snapshots.Add(1)
		e.cfg.Logger.Info("engine: snapshot written", "lsn", snap.LSN, "rows", len(snap.Rows), "took", time.Since(start))
	}()
}
