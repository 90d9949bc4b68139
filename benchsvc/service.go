package benchsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"allot/bench"
	"allot/vfs"
)

// Run states.
const (
	StateQueued    = "queued"
	StateRunning   = "running"
	StateDone      = "done"      // every store run finished and passed
	StateFailed    = "failed"    // the job could not run, or a store run failed (Error says which)
	StateCancelled = "cancelled" // DELETE /v1/runs/{id}
)

// Job is one validated bench invocation, built by a Parser.
type Job interface {
	// Stores lists the stores the job runs on; the service runs one job
	// per store at a time.
	Stores() []string
	// StoreRuns is how many store runs the job makes (stores x durability
	// modes x sweep points x presets).
	StoreRuns() int
	// Run runs the job. progress is called from the bench's sampler about
	// four times a second with the index of the store run (0, 1, ...);
	// result is called with each store run's result as it finishes. It
	// returns the text the command would have printed (the table) and the
	// error the command would have exited with.
	Run(ctx context.Context, progress func(storeRun int, p bench.Progress), result func(bench.Result)) (table string, err error)
}

// Parser builds a Job from a bench argument list (without "bench"). An
// error wrapping ErrUnknownStore is an unknown store (404); any other is
// bad input (400).
type Parser func(args []string) (Job, error)

// ErrUnknownStore is wrapped by a Parser's error for an unknown store.
var ErrUnknownStore = errors.New("unknown store")

// Config configures a Service.
type Config struct {
	// Parse builds jobs (required).
	Parse Parser
	// DataDir keeps the run history (one JSON file per run); empty keeps
	// it in memory only. A service holds it (a lock file in it) until
	// Close: a second service on it is refused.
	DataDir string
	// FS is where DataDir is (default vfs.OS).
	FS vfs.FS
	// Token, when set, must come as "Authorization: Bearer <token>" on
	// every request but GET / (the page asks for it).
	Token string
	// EventInterval is the time between live samples (default 1 s).
	EventInterval time.Duration
	// EventKeepalive is the longest an event stream stays silent: past
	// it, a comment line goes out, so that a proxy does not cut an idle
	// stream (a queued run, or one between samples) (default 15 s).
	EventKeepalive time.Duration
	// Log receives one line per run state change (default: discarded).
	Log io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Stores and Workloads name what the page's form offers.
	Stores, Workloads []string
	// Resource, when set, names what a store's runs must not share: the
	// server behind it (mysql and mysql-myisam are one MariaDB; a run
	// restarting Tarantool in another wal_mode would break a run on the
	// other engine), or the bench's own process for in-process stores.
	// Runs queue one at a time per resource. Default: the store's name.
	Resource func(store string) string
	// GenLoadOps, when set, sizes the --ops of a gen-load request on a
	// store (default GenLoadOps).
	GenLoadOps func(store string, g GenLoad) int64
	// Environment describes the machine, for the reports (JSON of
	// internal/sysinfo); nil leaves it out.
	Environment json.RawMessage
}

// eventKeepaliveDefault is below the idle timeouts proxies commonly cut
// a connection at (nginx's proxy_read_timeout is 60 s, some load
// balancers' 30 s).
const eventKeepaliveDefault = 15 * time.Second

// Validate fills defaults and checks the fields.
func (c *Config) Validate() error {
	if c.Parse == nil {
		return errors.New("benchsvc: Config.Parse is required")
	}
	if c.EventInterval == 0 {
		c.EventInterval = time.Second
	}
	if c.EventInterval < 0 {
		return fmt.Errorf("benchsvc: event interval must be positive, got %v", c.EventInterval)
	}
	if c.EventKeepalive == 0 {
		c.EventKeepalive = eventKeepaliveDefault
	}
	if c.EventKeepalive < 0 {
		return fmt.Errorf("benchsvc: event keepalive must be positive, got %v", c.EventKeepalive)
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Resource == nil {
		c.Resource = func(store string) string { return store }
	}
	if c.FS == nil {
		c.FS = vfs.OS{}
	}
	return nil
}

// Progress is where a running job is.
type Progress struct {
	// StoreRun is the index of the current store run, StoreRuns how many
	// the job makes.
	StoreRun  int    `json:"store_run"`
	StoreRuns int    `json:"store_runs"`
	Store     string `json:"store,omitempty"`
	// OpsDone and OpsTotal count the current store run's ops.
	OpsDone  int64 `json:"ops_done"`
	OpsTotal int64 `json:"ops_total"`
	// Fraction is the whole job's completion, 0..1.
	Fraction float64 `json:"fraction"`
}

// Event is one live sample of a running job (the data of one server-sent
// event).
type Event struct {
	// Seconds since the job started running.
	T        float64 `json:"t"`
	StoreRun int     `json:"store_run"`
	Store    string  `json:"store"`
	// OpsPerSec over the last interval; P99MS from the bench's coarse
	// live histogram (within 25%: the final result has the exact one).
	OpsPerSec float64 `json:"ops_per_sec"`
	P99MS     float64 `json:"p99_ms"`
	Errors    int64   `json:"errors"`
	OpsDone   int64   `json:"ops_done"`
	OpsTotal  int64   `json:"ops_total"`
	// Ops is the ops completed over the sample's interval (OpsPerSec
	// times it, counted).
	Ops int64 `json:"ops"`
	// Seq is the sample's number in the run (1, 2, ...), its id in the
	// event stream. A point of Record.Series that merges older samples
	// has its last sample's number: the numbers of a series increase, and
	// they have gaps where samples were merged.
	Seq int `json:"seq"`
}

// Record is a run as the API shows it and the data directory keeps it.
type Record struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Request is the JSON the run was asked with; Args the bench command
	// line it became.
	Request  json.RawMessage `json:"request"`
	Args     []string        `json:"args"`
	Stores   []string        `json:"stores"`
	Created  time.Time       `json:"created"`
	Started  *time.Time      `json:"started,omitempty"`
	Finished *time.Time      `json:"finished,omitempty"`
	Error    string          `json:"error,omitempty"`
	Progress Progress        `json:"progress"`
	// Results are the CLI's JSON objects (what `allot bench --json`
	// prints), one per finished store run.
	Results []bench.Result `json:"results"`
	// Table is what `allot bench` would have printed.
	Table string `json:"table,omitempty"`
	// Series holds the live samples, for a page that opens late: the
	// newest one by one, older ones merged, a few hundred points at most
	// however long the run (see series).
	Series []Event `json:"series,omitempty"`
	// Concurrent lists the runs (on other stores) that ran at some time
	// while this one ran: they shared the machine, so their figures
	// disturbed each other's.
	Concurrent []string `json:"concurrent,omitempty"`
}

// Summary is a run in the history list: no series, results reduced to
// their headline figures.
type Summary struct {
	ID         string        `json:"id"`
	State      string        `json:"state"`
	Concurrent []string      `json:"concurrent,omitempty"`
	Args       []string      `json:"args"`
	Stores     []string      `json:"stores"`
	Created    time.Time     `json:"created"`
	Finished   *time.Time    `json:"finished,omitempty"`
	Error      string        `json:"error,omitempty"`
	Progress   Progress      `json:"progress"`
	Results    []ResultBrief `json:"results"`
}

// ResultBrief is the headline of one store run.
type ResultBrief struct {
	Store      string  `json:"store"`
	Workload   string  `json:"workload"`
	Durability string  `json:"durability"`
	Workers    int     `json:"workers"`
	Status     string  `json:"status"`
	Ops        int64   `json:"ops"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	P99MS      float64 `json:"p99_ms"`
	Errors     int64   `json:"errors"`
	// CPUMicrosPerOp is the server's CPU per op (0 when not measured).
	CPUMicrosPerOp float64 `json:"cpu_us_per_op,omitempty"`
}

// historyMax bounds the runs kept; the oldest finished ones go first.
const historyMax = 10000

// Bounds of a page of the history (List, GET /v1/runs?limit=).
const (
	listLimitDefault = 100
	listLimitMax     = 1000
)

// queueMax bounds the runs waiting.
const queueMax = 1000

// run is a Record plus what only a live run has. Every field is guarded
// by Service.mu.
type run struct {
	rec    Record
	series series // rec.Series is series.points
	job    Job
	cancel context.CancelFunc // set while running
	done   chan struct{}      // closed when the run reaches a final state
	subs   map[chan Event]struct{}

	// live progress: the latest report of the current store run
	last     bench.Progress
	lastRun  int
	haveLast bool
	prevDone int64
	prevRun  int
	prevAt   time.Time
}

// Service runs bench jobs. Create it with New, serve Handler, Close it.
type Service struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	runs   map[string]*run
	order  []string          // ids, oldest first
	queue  []*run            // waiting, in arrival order
	busy   map[string]string // resource (Config.Resource) -> id of the run using it
	closed bool
	// saves are the record writes and removals not done yet, in the
	// order of the changes they keep (see flush).
	saves []save

	// diskMu is held by the one flush writing; it is taken before mu,
	// never while holding it.
	diskMu sync.Mutex
	// dirLock is DataDir's lock file, held from New to Close.
	dirLock io.Closer
}

// save is a record to write (data) or to remove (data nil).
type save struct {
	id   string
	data []byte
}

// dirLockName is the lock file a service holds in its data directory.
const dirLockName = "bench-serve.lock"

// New makes a service and loads the history from cfg.DataDir. Runs the
// previous process left queued or running are marked failed.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{cfg: cfg, ctx: ctx, cancel: cancel, runs: map[string]*run{}, busy: map[string]string{}}
	if cfg.DataDir != "" {
		if err := cfg.FS.MkdirAll(cfg.DataDir); err != nil {
			cancel()
			return nil, fmt.Errorf("benchsvc: %w", err)
		}
		// Two services on one directory would each rewrite the other's
		// records from their own memory, and each mark the other's runs
		// in flight failed at its start.
		lockPath := filepath.Join(cfg.DataDir, dirLockName)
		lock, err := cfg.FS.Lock(lockPath)
		if err != nil {
			cancel()
			if errors.Is(err, vfs.ErrLocked) {
				return nil, fmt.Errorf("benchsvc: data directory %s is in use: another bench service holds its lock (%s); stop it, or give this one another directory", cfg.DataDir, lockPath)
			}
			return nil, fmt.Errorf("benchsvc: locking data directory %s: %w", cfg.DataDir, err)
		}
		s.dirLock = lock
		if err := s.load(); err != nil {
			cancel()
			lock.Close()
			return nil, err
		}
		s.flush()
	}
	return s, nil
}

// load reads every run record of the data directory.
func (s *Service) load() error {
	names, err := s.cfg.FS.List(s.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("benchsvc: reading history: %w", err)
	}
	var recs []Record
	for _, name := range names {
		if !strings.HasPrefix(name, "run-") || !strings.HasSuffix(name, ".json") {
			continue
		}
		p := filepath.Join(s.cfg.DataDir, name)
		data, err := vfs.ReadFile(s.cfg.FS, p)
		if err != nil {
			return fmt.Errorf("benchsvc: reading history: %w", err)
		}
		var rec Record
		if err := json.Unmarshal(data, &rec); err != nil || rec.ID == "" {
			fmt.Fprintf(s.cfg.Log, "allot bench serve: skipping %s: not a run record (%v)\n", p, err)
			continue
		}
		// A run's record is run-<id>.json. Another name holding it (a
		// copy kept beside it, run-<id>-copy.json) made the run twice in
		// the history (listed twice; past historyMax, the trim found
		// the second one gone from runs and panicked, in New, holding
		// mu), and its id decides where the record is written: an id
		// that is no file name wrote outside the directory.
		if want := "run-" + rec.ID + ".json"; name != want {
			fmt.Fprintf(s.cfg.Log, "allot bench serve: skipping %s: it holds run %q, whose record is %s\n", p, rec.ID, want)
			continue
		}
		if rec.State == StateQueued || rec.State == StateRunning {
			rec.State = StateFailed
			rec.Error = "the service stopped before this run finished"
			now := s.cfg.Now().UTC()
			rec.Finished = &now
			data, err := json.Marshal(&rec)
			if err == nil {
				err = s.write(rec.ID, data)
			}
			if err != nil {
				return fmt.Errorf("benchsvc: marking run %s failed: %w", rec.ID, err)
			}
		}
		recs = append(recs, rec)
	}
	sort.Slice(recs, func(i, j int) bool {
		if !recs[i].Created.Equal(recs[j].Created) {
			return recs[i].Created.Before(recs[j].Created)
		}
		return recs[i].ID < recs[j].ID
	})
	for _, rec := range recs {
		r := &run{rec: rec, series: newSeries(rec.Series), done: make(chan struct{})}
		r.rec.Series = r.series.points
		close(r.done)
		s.runs[rec.ID] = r
		s.order = append(s.order, rec.ID)
	}
	// The bound holds from the start, not from the next submit: a
	// directory may hold more (records copied in, a build that kept more).
	// New flushes the removals.
	s.mu.Lock()
	s.trimLocked()
	s.mu.Unlock()
	return nil
}

// recordPath is where run id's record is kept.
func (s *Service) recordPath(id string) string {
	return filepath.Join(s.cfg.DataDir, "run-"+id+".json")
}

// write saves a record durably (vfs.WriteFileAtomic): a crash leaves the
// old record or the new one.
func (s *Service) write(id string, data []byte) error {
	if err := vfs.WriteFileAtomic(s.cfg.FS, s.recordPath(id), data); err != nil {
		return fmt.Errorf("benchsvc: saving run %s: %w", id, err)
	}
	return nil
}

// persistLocked queues a write of r's record as it is now; the caller
// calls flush once it has let go of mu. A state change writes it, not a
// sample. The record is encoded here, under mu (its series and results
// are bounded), and written there, outside it: a reader of the API never
// waits for the disk.
func (s *Service) persistLocked(r *run) {
	if s.cfg.DataDir == "" {
		return
	}
	data, err := json.Marshal(&r.rec)
	if err != nil {
		fmt.Fprintf(s.cfg.Log, "allot bench serve: encoding run %s: %v\n", r.rec.ID, err)
		return
	}
	s.saves = append(s.saves, save{id: r.rec.ID, data: data})
}

// flush does the writes queued so far, in the order they were queued,
// and returns when they are all done (by this call or by the one that
// took them first): a run's records reach the disk in the order of its
// changes, so an older one never overwrites a newer one, and a caller
// that flushes after a change knows it is on disk. A failure is logged:
// the run goes on, and the API still shows it; only the history on disk
// misses the change (until the run's next one).
func (s *Service) flush() {
	s.diskMu.Lock()
	defer s.diskMu.Unlock()
	s.mu.Lock()
	saves := s.saves
	s.saves = nil
	s.mu.Unlock()
	for _, sv := range saves {
		var err error
		if sv.data == nil {
			if err = s.cfg.FS.Remove(s.recordPath(sv.id)); err != nil && !errors.Is(err, os.ErrNotExist) {
				err = fmt.Errorf("benchsvc: removing run %s from the history: %w", sv.id, err)
			} else {
				err = nil
			}
		} else {
			err = s.write(sv.id, sv.data)
		}
		if err != nil {
			fmt.Fprintf(s.cfg.Log, "allot bench serve: %v\n", err)
		}
	}
}

func newID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Submit parses args into a job and queues it. body is kept as the run's
// request. Errors wrap ErrBadRequest or ErrUnknownStore, but for a full
// queue or a service shutting down.
func (s *Service) Submit(body json.RawMessage, args []string) (Record, error) {
	return s.submit(body, args, "")
}

// submit is Submit; a job that must run on one store (a gen-load
// request's) names it in only, and one that would run on any other or
// more is an unknown store.
func (s *Service) submit(body json.RawMessage, args []string, only string) (Record, error) {
	job, err := s.cfg.Parse(args)
	if err != nil {
		return Record{}, err
	}
	if only != "" && !slices.Equal(job.Stores(), []string{only}) {
		return Record{}, fmt.Errorf("%w %q: name one store (it runs on %s)", ErrUnknownStore, only, strings.Join(job.Stores(), ", "))
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Record{}, errors.New("benchsvc: the service is shutting down")
	}
	if len(s.queue) >= queueMax {
		s.mu.Unlock()
		// Not the request's fault: the same request is fine later.
		return Record{}, fmt.Errorf("benchsvc: %d runs are waiting already; try later", len(s.queue))
	}
	now := s.cfg.Now().UTC()
	r := &run{
		rec: Record{
			ID: newID(now), State: StateQueued, Request: body, Args: args, Stores: job.Stores(),
			Created: now, Progress: Progress{StoreRuns: job.StoreRuns()}, Results: []bench.Result{},
		},
		job: job, done: make(chan struct{}), subs: map[chan Event]struct{}{},
	}
	for s.runs[r.rec.ID] != nil {
		r.rec.ID = newID(now)
	}
	s.runs[r.rec.ID] = r
	s.order = append(s.order, r.rec.ID)
	s.queue = append(s.queue, r)
	s.trimLocked()
	s.persistLocked(r)
	fmt.Fprintf(s.cfg.Log, "allot bench serve: run %s queued: bench %s\n", r.rec.ID, strings.Join(args, " "))
	s.scheduleLocked()
	rec := r.snapshot()
	s.mu.Unlock()
	// The run is on disk before the client hears of it.
	s.flush()
	return rec, nil
}

// trimLocked forgets the oldest finished runs past historyMax.
func (s *Service) trimLocked() {
	for i := 0; len(s.order) > historyMax && i < len(s.order); {
		r := s.runs[s.order[i]]
		if r.rec.State == StateQueued || r.rec.State == StateRunning {
			i++
			continue
		}
		delete(s.runs, s.order[i])
		if s.cfg.DataDir != "" {
			// After the run's last write, which may not be done yet.
			s.saves = append(s.saves, save{id: s.order[i]})
		}
		s.order = slices.Delete(s.order, i, i+1)
	}
}

// scheduleLocked starts every queued run whose stores are all free and
// not wanted by an earlier queued run.
func (s *Service) scheduleLocked() {
	if s.closed {
		return
	}
	claimed := map[string]bool{}
	for i := 0; i < len(s.queue); {
		r := s.queue[i]
		free := true
		for _, res := range s.resources(r) {
			if s.busy[res] != "" || claimed[res] {
				free = false
			}
		}
		if !free {
			for _, res := range s.resources(r) {
				claimed[res] = true
			}
			i++
			continue
		}
		s.queue = slices.Delete(s.queue, i, i+1)
		s.startLocked(r)
	}
}

// resources are what r's stores must not share with another run.
func (s *Service) resources(r *run) []string {
	out := make([]string, 0, len(r.rec.Stores))
	for _, st := range r.rec.Stores {
		if res := s.cfg.Resource(st); !slices.Contains(out, res) {
			out = append(out, res)
		}
	}
	return out
}

func (s *Service) startLocked(r *run) {
	for _, res := range s.resources(r) {
		s.busy[res] = r.rec.ID
	}
	for _, other := range s.runs {
		if other != r && other.rec.State == StateRunning {
			other.rec.Concurrent = append(other.rec.Concurrent, r.rec.ID)
			r.rec.Concurrent = append(r.rec.Concurrent, other.rec.ID)
		}
	}
	ctx, cancel := context.WithCancel(s.ctx)
	r.cancel = cancel
	now := s.cfg.Now().UTC()
	r.rec.State = StateRunning
	r.rec.Started = &now
	r.prevAt = now
	s.persistLocked(r)
	fmt.Fprintf(s.cfg.Log, "allot bench serve: run %s running\n", r.rec.ID)
	s.wg.Add(2)
	finished := make(chan struct{})
	go func() {
		defer s.wg.Done()
		defer close(finished)
		s.execute(ctx, r)
	}()
	go func() {
		defer s.wg.Done()
		s.sample(r, finished)
	}()
}

// execute runs r's job and records how it ended.
func (s *Service) execute(ctx context.Context, r *run) {
	progress := func(i int, p bench.Progress) {
		s.mu.Lock()
		r.last, r.lastRun, r.haveLast = p, i, true
		r.rec.Progress.StoreRun = i
		r.rec.Progress.Store = p.Store
		r.rec.Progress.OpsDone, r.rec.Progress.OpsTotal = p.Done, p.Total
		r.rec.Progress.Fraction = fraction(r.rec.Progress)
		s.mu.Unlock()
	}
	result := func(res bench.Result) {
		res.Throughput = boundThroughput(res.Throughput)
		s.mu.Lock()
		r.rec.Results = append(r.rec.Results, res)
		r.rec.Progress.StoreRun = len(r.rec.Results)
		r.rec.Progress.OpsDone, r.rec.Progress.OpsTotal = 0, 0
		r.rec.Progress.Fraction = fraction(r.rec.Progress)
		s.persistLocked(r)
		s.mu.Unlock()
		s.flush()
	}
	table, err := runJob(ctx, r.job, progress, result)
	s.mu.Lock()
	now := s.cfg.Now().UTC()
	r.rec.Finished = &now
	r.rec.Table = table
	switch {
	case ctx.Err() != nil:
		r.rec.State = StateCancelled
		r.rec.Error = "cancelled"
		if s.closed {
			r.rec.State = StateFailed
			r.rec.Error = "the service stopped before this run finished"
		}
	case err != nil:
		r.rec.State = StateFailed
		r.rec.Error = err.Error()
	default:
		r.rec.State = StateDone
		r.rec.Progress.Fraction = 1
	}
	r.cancel()
	r.cancel = nil
	r.job = nil
	for _, res := range s.resources(r) {
		if s.busy[res] == r.rec.ID {
			delete(s.busy, res)
		}
	}
	s.persistLocked(r)
	// The error after the state, unless it only repeats it ("cancelled").
	end := r.rec.State
	if r.rec.Error != "" && r.rec.Error != r.rec.State {
		end += ": " + r.rec.Error
	}
	fmt.Fprintf(s.cfg.Log, "allot bench serve: run %s %s\n", r.rec.ID, end)
	s.scheduleLocked()
	s.mu.Unlock()
	s.flush()
	s.ended(r)
}

// ended tells r's waiters and event streams that it has ended: once its
// final record is on disk, so that a client told a run is done finds it
// done after a restart.
func (s *Service) ended(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(r.done)
	for ch := range r.subs {
		close(ch)
	}
	r.subs = nil
}

// runJob runs a job, turning a panic in it into an error: a bad run must
// not take the service and every other run down with it.
func runJob(ctx context.Context, job Job, progress func(int, bench.Progress), result func(bench.Result)) (table string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("benchsvc: the run panicked: %v", p)
		}
	}()
	return job.Run(ctx, progress, result)
}

func fraction(p Progress) float64 {
	if p.StoreRuns <= 0 {
		return 0
	}
	f := float64(p.StoreRun)
	if p.OpsTotal > 0 {
		f += min(float64(p.OpsDone)/float64(p.OpsTotal), 1)
	}
	return min(f/float64(p.StoreRuns), 1)
}

// sample makes one Event per interval while r runs and sends it to the
// subscribers.
func (s *Service) sample(r *run, finished <-chan struct{}) {
	t := time.NewTicker(s.cfg.EventInterval)
	defer t.Stop()
	for {
		select {
		case <-finished:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if r.rec.State != StateRunning {
			s.mu.Unlock()
			return
		}
		now := s.cfg.Now().UTC()
		ev := Event{T: now.Sub(*r.rec.Started).Seconds(), StoreRun: r.rec.Progress.StoreRun, Store: r.rec.Progress.Store}
		if r.haveLast {
			p := r.last
			ev.StoreRun, ev.Store = r.lastRun, p.Store
			ev.P99MS = float64(p.P99) / 1e6
			ev.Errors = p.Errors
			ev.OpsDone, ev.OpsTotal = p.Done, p.Total
			prev := r.prevDone
			if r.prevRun != r.lastRun {
				prev = 0
			}
			if p.Done >= prev {
				ev.Ops = p.Done - prev
				if dt := now.Sub(r.prevAt).Seconds(); dt > 0 {
					ev.OpsPerSec = float64(ev.Ops) / dt
				}
			}
			r.prevDone, r.prevRun = p.Done, r.lastRun
		}
		r.prevAt = now
		r.series.add(ev)
		r.rec.Series = r.series.points
		ev = r.rec.Series[len(r.rec.Series)-1]
		for ch := range r.subs {
			select {
			case ch <- ev:
			default:
				// A reader more than subscriptionDepth samples behind:
				// its stream ends after the samples it has room for,
				// rather than stall the run or miss this one, and its
				// client comes back with Last-Event-ID for the rest
				// (serveEvents).
				delete(r.subs, ch)
				close(ch)
			}
		}
		s.mu.Unlock()
	}
}

// Get returns a run's record.
func (s *Service) Get(id string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return Record{}, false
	}
	return r.snapshot(), true
}

// snapshot returns r's record, to be read outside Service.mu: a copy of
// what changes in place (the series merges its points) or grows.
func (r *run) snapshot() Record {
	rec := r.rec
	rec.Results = slices.Clone(rec.Results)
	rec.Series = slices.Clone(rec.Series)
	rec.Concurrent = slices.Clone(rec.Concurrent)
	return rec
}

// ListPage is a page of the history, newest first.
type ListPage struct {
	Runs []Summary `json:"runs"`
	// Next is the before of the page after this one (its last run's id),
	// empty on the last page.
	Next string `json:"next,omitempty"`
	// Total is how many runs the history holds.
	Total int `json:"total"`
}

// List returns a page of the history, newest first: the limit runs
// (1 to listLimitMax) that came before run before, or the newest when
// before is empty. A cursor, not an offset: runs that come while a client
// pages through the history go on the first page and shift no later one.
// An error wraps ErrBadRequest: a limit out of bounds, or a before that
// names no run of the history (a run trimmed since, or no run at all).
func (s *Service) List(before string, limit int) (ListPage, error) {
	if limit < 1 || limit > listLimitMax {
		return ListPage{}, badRequest("limit %d: a page holds 1 to %d runs", limit, listLimitMax)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	end := len(s.order) // the page is the newest runs of s.order[:end]
	if before != "" {
		// The history is at most historyMax ids: a scan is cheaper than
		// keeping an index beside s.order through every trim.
		if end = slices.Index(s.order, before); end < 0 {
			return ListPage{}, badRequest("before %q: no such run in the history (trimmed since, or never there): start again from the newest page", before)
		}
	}
	start := max(end-limit, 0)
	page := ListPage{Runs: make([]Summary, 0, end-start), Total: len(s.order)}
	for i := end - 1; i >= start; i-- {
		rec := &s.runs[s.order[i]].rec
		sum := Summary{ID: rec.ID, State: rec.State, Concurrent: rec.Concurrent, Args: rec.Args, Stores: rec.Stores, Created: rec.Created,
			Finished: rec.Finished, Error: rec.Error, Progress: rec.Progress, Results: []ResultBrief{}}
		for j := range rec.Results {
			sum.Results = append(sum.Results, brief(&rec.Results[j]))
		}
		page.Runs = append(page.Runs, sum)
	}
	if start > 0 {
		page.Next = s.order[start]
	}
	return page, nil
}

func brief(r *bench.Result) ResultBrief {
	b := ResultBrief{Store: r.Store, Workload: r.Workload.Name, Durability: r.Durability, Workers: r.Workers,
		Status: r.Status, Ops: r.Ops, OpsPerSec: r.OpsPerSec, P99MS: r.LatencyMS.P99, Errors: r.Errors}
	if r.Server != nil {
		b.CPUMicrosPerOp = r.Server.CPUMicrosPerOp
	}
	return b
}

// ErrFinished is returned by Cancel for a run that already ended.
var ErrFinished = errors.New("the run has finished")

// Cancel cancels a queued or running run. A running run ends as soon as
// the bench notices (its workers stop within one op).
func (s *Service) Cancel(id string) (Record, error) {
	s.mu.Lock()
	r, ok := s.runs[id]
	if !ok {
		s.mu.Unlock()
		return Record{}, os.ErrNotExist
	}
	rec := r.snapshot()
	switch r.rec.State {
	case StateQueued:
		s.queue = slices.DeleteFunc(s.queue, func(q *run) bool { return q == r })
		now := s.cfg.Now().UTC()
		r.rec.State, r.rec.Error, r.rec.Finished = StateCancelled, "cancelled before it started", &now
		r.job = nil
		s.persistLocked(r)
		s.scheduleLocked()
		rec = r.snapshot()
		s.mu.Unlock()
		s.flush()
		s.ended(r)
		return rec, nil
	case StateRunning:
		r.cancel()
	default:
		s.mu.Unlock()
		return rec, ErrFinished
	}
	s.mu.Unlock()
	return rec, nil
}

// subscriptionDepth is how many samples a subscriber may be behind the
// run before its subscription is closed.
const subscriptionDepth = 8

// Subscribe returns the samples so far and a channel of the next ones,
// and a function that stops the subscription. The channel is closed when
// the run ends (at once for a finished run), or when its reader falls
// more than subscriptionDepth samples behind: the samples after those it
// holds are not sent on it, and its reader finds them in the run's
// series.
func (s *Service) Subscribe(id string) (past []Event, next <-chan Event, stop func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, found := s.runs[id]
	if !found {
		return nil, nil, nil, false
	}
	ch := make(chan Event, subscriptionDepth)
	past = slices.Clone(r.rec.Series)
	if r.subs == nil {
		close(ch)
		return past, ch, func() {}, true
	}
	r.subs[ch] = struct{}{}
	return past, ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.subs != nil {
			if _, in := r.subs[ch]; in {
				delete(r.subs, ch)
				close(ch)
			}
		}
	}, true
}

// Wait blocks until the run ends or ctx is done, and returns its record.
func (s *Service) Wait(ctx context.Context, id string) (Record, error) {
	s.mu.Lock()
	r, ok := s.runs[id]
	s.mu.Unlock()
	if !ok {
		return Record{}, os.ErrNotExist
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return Record{}, ctx.Err()
	}
	rec, _ := s.Get(id)
	return rec, nil
}

// Close cancels every run, waits for them to stop and keeps their records
// as failed ("the service stopped").
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	queued := s.queue
	for _, r := range queued {
		now := s.cfg.Now().UTC()
		r.rec.State, r.rec.Error, r.rec.Finished = StateFailed, "the service stopped before this run started", &now
		r.job = nil
		s.persistLocked(r)
	}
	s.queue = nil
	s.mu.Unlock()
	s.flush()
	for _, r := range queued {
		s.ended(r)
	}
	s.cancel()
	s.wg.Wait()
	// Every record is written (each run's end flushed its own); only now
	// may another service take the directory.
	s.flush()
	s.mu.Lock()
	lock := s.dirLock
	s.dirLock = nil
	s.mu.Unlock()
	if lock != nil {
		if err := lock.Close(); err != nil {
			return fmt.Errorf("benchsvc: releasing data directory %s: %w", s.cfg.DataDir, err)
		}
	}
	return nil
}
