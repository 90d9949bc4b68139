// Package store is the bench-facing face of a datastore: the Store and
// Session interfaces every adapter implements, the typed Config they are
// opened with, and the registry that lists them by name.
//
// Each adapter lives in its own folder under store/ (embedded, memory,
// remote "allot", postgres, mysql, redis, tarantool, naive) with its SQL or
// Lua beside it, and registers itself from an init function. Adapters hold
// no metrics code: the bench measures around them.
//
// Every adapter implements capture with the allocation rule of the domain:
// warehouses of the group in ascending byte order of their id, taking
// min(count, remaining) from each, all or nothing.
package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"allot/inventory"
)

// Store is one datastore holding the inventory.
//
// Concurrency: Load, Rows and Close are called by one goroutine, never at
// the same time as a Session's operations. Session may be called from many
// goroutines; each Session is then used by one goroutine only.
//
// Errors: a business outcome (insufficient stock, unknown row, invalid
// input) is a Result, never an error. An error means the operation failed
// and its effect is unknown (a lost connection, a server gone).
type Store interface {
	// Load replaces whatever the store holds with rows, as fast as the
	// datastore allows (bulk insert, pipelining).
	Load(ctx context.Context, rows []inventory.Row) error
	// Session opens one worker's connection.
	Session(ctx context.Context) (Session, error)
	// Rows reads back every row, in any order, for the checker.
	Rows(ctx context.Context) ([]inventory.Row, error)
	// Close releases the store's resources; for an embedded engine it makes
	// every acknowledged op durable first.
	Close() error
}

// Session is one worker's handle on a Store. It is used by one goroutine.
type Session interface {
	// Capture takes n units of group g. On CodeOK the Result's Lines hold
	// the allocation in warehouse order; lines is a buffer the session may
	// use for it.
	Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error)
	// Release adds n units back to row k; on CodeOK Result.Count is the
	// row's new count.
	Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error)
	Close() error
}

// Retrier is an optional Session capability: a session that retried
// transactions because of deadlocks or serialization failures (not stock)
// reports how many times. The bench counts these apart from stock retries.
type Retrier interface {
	// ConflictRetries returns the number of conflict retries so far.
	ConflictRetries() int64
}

// OrdersOnly is an optional Store capability: a store whose sessions run
// multi-line orders only (a saga manager's: its Capture and Release fail).
// The reservation workload (captures and releases) is not run on it;
// OrdersOnly says why.
type OrdersOnly interface {
	OrdersOnly() string
}

// Describer is an optional Store capability: a line saying what server,
// version and settings the store runs on, for the results.
type Describer interface {
	Describe(ctx context.Context) (string, error)
}

// Durability is how much an acknowledged op survives. See DESIGN.md for
// what each mode means in each datastore.
type Durability string

const (
	// DurabilityFsync survives power loss: acknowledged ops were fdatasync'd.
	DurabilityFsync Durability = "fsync"
	// DurabilityWrite survives a process crash: acknowledged ops were written
	// to the operating system.
	DurabilityWrite Durability = "write"
	// DurabilityNone survives nothing.
	DurabilityNone Durability = "none"
)

// ParseDurability parses a mode name.
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(s); d {
	case DurabilityFsync, DurabilityWrite, DurabilityNone:
		return d, nil
	}
	return "", fmt.Errorf("store: unknown durability %q (want fsync, write or none)", s)
}

// Config is what a store is opened with. Each adapter reads the fields it
// needs and ignores the others.
type Config struct {
	// Durability is the mode the store should run in (default fsync).
	Durability Durability
	// DataDir is where an embedded store keeps its data; empty means a
	// fresh temporary directory removed on Close.
	DataDir string
	// Addr is the server to connect to (host:port), empty for the adapter's
	// default.
	Addr string
	// HTTPAddr is, with Addr, that server's HTTP address (host:port): an
	// allot server's /metrics, where the bench reads the stage breakdown
	// of a server it did not start.
	HTTPAddr string
	// Workers is how many sessions the bench will open: pools are sized to it.
	Workers int
	// Pipeline is how many ops a session may keep in flight, where the
	// adapter supports it (1 = one at a time).
	Pipeline int
	// Timeout bounds connecting and loading (default 30s).
	Timeout time.Duration
}

// Validate fills defaults and checks the fields.
func (c *Config) Validate() error {
	if c.Durability == "" {
		c.Durability = DurabilityFsync
	}
	if _, err := ParseDurability(string(c.Durability)); err != nil {
		return err
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Workers < 0 {
		return fmt.Errorf("store: workers must be positive, got %d", c.Workers)
	}
	if c.Pipeline == 0 {
		c.Pipeline = 1
	}
	if c.Pipeline < 0 {
		return fmt.Errorf("store: pipeline must be positive, got %d", c.Pipeline)
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Timeout < 0 {
		return fmt.Errorf("store: timeout must be positive, got %v", c.Timeout)
	}
	return nil
}

// Opener opens a store.
type Opener func(ctx context.Context, cfg Config) (Store, error)

// Registration is one entry of the registry.
type Registration struct {
	Name  string
	About string // one line for --help
	Open  Opener
	// Server names the peer server the store needs (for example
	// "postgres"), empty for an in-process store.
	Server string
	// AddrRequired: the store connects only to a server given by
	// Config.Addr (the bench starts one itself only for its kill audit);
	// `--stores all` leaves it out.
	AddrRequired bool
	// Workloads names the bench workloads the store can run ("ims", the
	// reservation workload, and the kinds "checkout", "order", "rw",
	// "kv", "search"), for a store that cannot run them all; nil means
	// every one. `--stores all` runs a workload on the stores that run
	// it. A store named explicitly is run anyway, and the workload fails
	// saying what the store lacks.
	Workloads []string
	// Pipelines names the workloads among "ims", "search" and "checkout"
	// whose sessions keep several calls in flight (store.Pipeliner,
	// SearchPipeliner, CheckoutPipeliner); in the others the store runs
	// --pipeline 1 only (Refusal).
	Pipelines []string
	// Refuses, when set, says why the store cannot run a use of a
	// workload it runs ("" when it can): a flag it cannot honour, such as
	// rw's MODIFY on a queue or --transactional on MyISAM. Pipelining is
	// Pipelines's. See Refusal.
	Refuses func(Use) string
	// Volatile: the store keeps nothing beyond the bench's process,
	// whatever the durability asked (memory); no fdatasync bound applies
	// to it.
	Volatile bool
}

// Runs reports whether the store runs the bench workload named workload
// (Workloads).
func (r Registration) Runs(workload string) bool {
	return r.Workloads == nil || slices.Contains(r.Workloads, workload)
}

// ErrUnknown is returned by Open for a name nobody registered.
var ErrUnknown = errors.New("store: unknown store")

// ErrServerDown wraps the error of a store whose server cannot be reached.
var ErrServerDown = errors.New("store: server is not reachable")

var (
	registryMu sync.Mutex
	registry   = map[string]Registration{}
)

// Register adds a store to the registry. It panics on a duplicate name: two
// adapters claiming one name is a programming error.
func Register(r Registration) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[r.Name]; dup {
		panic("store: " + r.Name + " registered twice")
	}
	registry[r.Name] = r
}

// Lookup returns the registration for name.
func Lookup(name string) (Registration, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	r, ok := registry[name]
	if !ok {
		names := make([]string, 0, len(registry))
		for n := range registry {
			names = append(names, n)
		}
		sort.Strings(names)
		return Registration{}, fmt.Errorf("%w %q (known: %v)", ErrUnknown, name, names)
	}
	return r, nil
}

// Open validates cfg and opens the store registered as name.
func Open(ctx context.Context, name string, cfg Config) (Store, error) {
	r, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return r.Open(ctx, cfg)
}

// Registered returns every registration, sorted by name.
func Registered() []Registration {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]Registration, 0, len(registry))
	for _, r := range registry {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Registration) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ErrDurabilityMismatch wraps the error of a store whose server runs in a
// different durability mode than asked, and cannot change it at runtime
// (Tarantool's wal_mode) or could not (PostgreSQL's fsync, on a server
// not marked as one allot services runs, or without a superuser). The bench may switch or restart a server it started in the
// right mode and open the store again.
var ErrDurabilityMismatch = errors.New("store: server runs in another durability mode")

// CheckRows checks every row a Load is given, before the store touches
// anything, so that a bad row leaves the store as it was. The error names
// the row's index and key and what was wrong.
func CheckRows(rows []inventory.Row) error {
	for i := range rows {
		op := inventory.Stock(rows[i].Key, rows[i].Count, rows[i].Price)
		if d := op.Check(); d != "" {
			return fmt.Errorf("row %d %v: %s", i, rows[i].Key, d)
		}
	}
	return nil
}

// Pipeliner is an optional Session capability: a session that keeps many
// ops in flight at once. Given store.Config.Pipeline N > 1, the bench hands
// such a session up to N ops per call (its closed loop then has N ops in
// flight per worker instead of one).
type Pipeliner interface {
	// Pipeline issues ops in order, all at once, and fills results[i] with
	// op i's outcome (len(results) >= len(ops)); results[i].Lines is reused
	// as the buffer of a capture's lines. An error means the fate of every
	// op in the call is unknown.
	Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error
	// PipelineDepth is store.Config.Pipeline: how many ops a call should
	// carry.
	PipelineDepth() int
}
