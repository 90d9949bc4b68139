package engine

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"sync"
	"sync/atomic"
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
	// QueueMax bounds the requests waiting for the writer (default 65536).
	QueueMax int
	// BatchMax bounds the requests applied per journal frame (default 8192).
	BatchMax int
	// SegmentBytes is the journal segment size (default 64 MiB).
	SegmentBytes int64
	// SnapshotEveryOps is how many journaled ops trigger a snapshot
	// (default 4,194,304); recovery then replays at most about that many.
	SnapshotEveryOps int64
	// NoneFlushBytes is how much journal the none mode buffers before a
	// write (default 1 MiB).
	NoneFlushBytes int
	// Logger receives startup, recovery and failure notices (default: none).
	Logger *slog.Logger
}

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
	if err := def(&c.BatchMax, 8192, "BatchMax"); err != nil {
		return err
	}
	if err := def(&c.NoneFlushBytes, 1<<20, "NoneFlushBytes"); err != nil {
		return err
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
	return nil
}

// ErrClosed is returned for requests submitted after Close.
var ErrClosed = errors.New("engine: closed")

// Engine is the reservation engine. Its methods are safe for concurrent
// use.
type Engine struct {
	cfg      Config
	state    *inventory.State // owned by the writer goroutine
	journal  *journal.Journal
	lock     io.Closer
	recovery journal.Recovery

	queue chan *Request

	closeMu sync.RWMutex // held shared while submitting, exclusive to close
	closed  bool
	stop    chan struct{}

	writerDone chan struct{}

	syncMu      sync.Mutex
	syncCond    *sync.Cond
	syncPending []*Request // written, waiting for fdatasync
	syncStop    bool
	syncerDone  chan struct{}

	failure atomic.Pointer[error] // the first journal failure; sticky

	snapshotting atomic.Bool
	snapshotWG   sync.WaitGroup
	opsSinceSnap int64
	snapshotRows []inventory.Row
	requestPool  sync.Pool
	stats        stats
}

// Open recovers the state in cfg.Dir and starts the pipeline.
func Open(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.FS.MkdirAll(cfg.Dir); err != nil {
		return nil, fmt.Errorf("engine: data directory %s: %w", cfg.Dir, err)
	}
	lock, err := cfg.FS.Lock(path.Join(cfg.Dir, "LOCK"))
	if err != nil {
		return nil, fmt.Errorf("engine: data directory %s is in use: %w", cfg.Dir, err)
	}
	start := time.Now()
	j, state, rec, err := journal.Open(journal.Options{FS: cfg.FS, Dir: cfg.Dir, SegmentBytes: cfg.SegmentBytes, Logger: cfg.Logger})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("engine: recover %s: %w", cfg.Dir, err)
	}
	cfg.Logger.Info("engine: recovered", "dir", cfg.Dir, "durability", string(cfg.Durability),
		"rows", state.Len(), "snapshot_lsn", rec.SnapshotLSN, "replayed_ops", rec.Replayed,
		"last_lsn", rec.LastLSN, "tail_cut_bytes", rec.TailCut, "took", time.Since(start))
	e := &Engine{
		cfg:        cfg,
		state:      state,
		journal:    j,
		lock:       lock,
		recovery:   rec,
		queue:      make(chan *Request, cfg.QueueMax),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
		syncerDone: make(chan struct{}),
	}
	e.syncCond = sync.NewCond(&e.syncMu)
	e.requestPool.New = func() any { return NewRequest() }
	go e.writer()
	go e.syncer()
	return e, nil
}

// Recovery returns what Open found on disk.
func (e *Engine) Recovery() journal.Recovery { return e.recovery }

// Durability returns the engine's mode.
func (e *Engine) Durability() Durability { return e.cfg.Durability }

// Dir returns the data directory.
func (e *Engine) Dir() string { return e.cfg.Dir }

// Submit queues r. Requests are applied in the order Submit is called; the
// outcome is ready when r.Wait returns. Submit blocks while the queue is
// full. A malformed op is answered at once with CodeInvalid, without a trip
// through the pipeline.
func (e *Engine) Submit(r *Request) error {
	if d := r.Op.Check(); d != "" && r.fn == nil {
		r.Result = inventory.Result{Code: inventory.CodeInvalid, Detail: d}
		r.Err = nil
		r.done <- struct{}{}
		return nil
	}
	e.closeMu.RLock()
	if e.closed {
		e.closeMu.RUnlock()
		return ErrClosed
	}
	e.queue <- r
	e.closeMu.RUnlock()
	return nil
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

// read runs fn on the writer goroutine, in order with the ops, and returns
// when its reply is as durable as the mode promises.
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

// Close stops taking requests, finishes every queued one, makes the journal
// durable (whatever the mode) and releases the data directory.
func (e *Engine) Close() error {
	e.closeMu.Lock()
	if e.closed {
		e.closeMu.Unlock()
		return nil
	}
	e.closed = true
	e.closeMu.Unlock()
	close(e.stop)
	<-e.writerDone
	<-e.syncerDone
	e.snapshotWG.Wait()
	err := e.journal.Close()
	if f := e.failure.Load(); f != nil && err == nil {
		err = *f
	}
	if lerr := e.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// writer is the one goroutine that owns the state.
func (e *Engine) writer() {
	defer close(e.writerDone)
	batch := make([]*Request, 0, e.cfg.BatchMax)
	for {
		var r *Request
		select {
		case r = <-e.queue:
		case <-e.stop:
			// Submit can no longer add: drain what is queued, then stop.
			for {
				batch = batch[:0]
				for len(batch) < cap(batch) {
					select {
					case r = <-e.queue:
						batch = append(batch, r)
						continue
					default:
					}
					break
				}
				if len(batch) == 0 {
					break
				}
				e.process(batch)
			}
			if err := e.journal.Write(); err != nil {
				e.fail(err)
			}
			e.syncMu.Lock()
			e.syncStop = true
			e.syncCond.Signal()
			e.syncMu.Unlock()
			return
		}
		batch = append(batch[:0], r)
	fill:
		for len(batch) < cap(batch) {
			select {
			case r = <-e.queue:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		e.process(batch)
	}
}

func (e *Engine) fail(err error) {
	if e.failure.CompareAndSwap(nil, &err) {
		e.cfg.Logger.Error("engine: journal failed; refusing all further requests", "err", err)
	}
}

// process applies one batch and sends it on by durability mode.
func (e *Engine) process(batch []*Request) {
	if f := e.failure.Load(); f != nil {
		for _, r := range batch {
			r.Err = *f
			r.done <- struct{}{}
		}
		return
	}
	j := e.journal
	var mutated int64
	for _, r := range batch {
		if r.fn != nil {
			r.fn(e.state)
			continue
		}
		res := e.state.Apply(&r.Op, r.Lines)
		if res.Lines != nil {
			r.Lines = res.Lines
		}
		r.Result = res
		if res.Code == inventory.CodeOK && r.Op.Kind.Mutates() {
			j.Add(&r.Op)
			mutated++
		}
	}
	e.stats.batch(len(batch), mutated)
	e.opsSinceSnap += mutated

	switch e.cfg.Durability {
	case DurabilityNone:
		for _, r := range batch {
			r.done <- struct{}{}
		}
		if j.PendingBytes() >= e.cfg.NoneFlushBytes || len(e.queue) == 0 {
			e.write(nil)
		}
	case DurabilityWrite:
		e.write(batch)
		for _, r := range batch {
			r.done <- struct{}{}
		}
	default:
		if !e.write(batch) {
			for _, r := range batch {
				r.done <- struct{}{}
			}
			break
		}
		e.syncMu.Lock()
		for len(e.syncPending) >= e.cfg.QueueMax && !e.syncStop {
			// Bound the replies waiting on the disk too.
			e.syncCond.Wait()
		}
		e.syncPending = append(e.syncPending, batch...)
		e.syncCond.Broadcast()
		e.syncMu.Unlock()
	}
	e.maybeSnapshot()
}

// write writes the pending frame; on failure it fails the engine and sets
// the error on batch. It reports success.
func (e *Engine) write(batch []*Request) bool {
	if err := e.journal.Write(); err != nil {
		e.fail(err)
		for _, r := range batch {
			r.Err = err
		}
		return false
	}
	e.stats.journalBytes.Store(e.journal.Bytes())
	return true
}

func (e *Engine) syncer() {
	defer close(e.syncerDone)
	var taken []*Request
	for {
		e.syncMu.Lock()
		for len(e.syncPending) == 0 && !e.syncStop {
			e.syncCond.Wait()
		}
		if len(e.syncPending) == 0 && e.syncStop {
			e.syncMu.Unlock()
			return
		}
		taken, e.syncPending = e.syncPending, taken[:0]
		e.syncCond.Broadcast() // room for the writer again
		e.syncMu.Unlock()

		var err error
		if f := e.failure.Load(); f != nil {
			err = *f
		} else {
			start := time.Now()
			err = e.journal.Sync()
			e.stats.sync(time.Since(start))
			if err != nil {
				e.fail(err)
			}
		}
		for i, r := range taken {
			if err != nil {
				r.Err = err
			}
			r.done <- struct{}{}
			taken[i] = nil
		}
	}
}

// maybeSnapshot starts a snapshot on its own goroutine when enough ops were
// journaled since the last one and none is running. The rows are copied
// here, on the writer, at a frame boundary.
func (e *Engine) maybeSnapshot() {
	if e.opsSinceSnap < e.cfg.SnapshotEveryOps || e.snapshotting.Load() {
		return
	}
	if !e.write(nil) {
		return
	}
	lsn := e.journal.SnapshotLSN()
	rows := e.state.AppendRows(make([]inventory.Row, 0, e.state.Len()))
	e.opsSinceSnap = 0
	e.snapshotting.Store(true)
	e.snapshotWG.Add(1)
	go func() {
		defer e.snapshotWG.Done()
		defer e.snapshotting.Store(false)
		start := time.Now()
		slices.SortFunc(rows, func(a, b inventory.Row) int { return inventory.CompareRowKeys(a.Key, b.Key) })
		if err := e.journal.WriteSnapshot(lsn, rows); err != nil {
			// The journal still holds every op; recovery just replays more.
			e.cfg.Logger.Error("engine: snapshot failed", "lsn", lsn, "err", err)
			return
		}
		e.stats.snapshots.Add(1)
		e.cfg.Logger.Info("engine: snapshot written", "lsn", lsn, "rows", len(rows), "took", time.Since(start))
	}()
}
