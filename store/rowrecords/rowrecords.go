// Package rowrecords keeps the records of workloads "rw" and "kv" in allot
// as rows: record k is the row (k, "rw", "rw", <the space's source>) and
// its value is the row's count. The embedded store and the remote store ("allot") both use
// it, over the engine's ops and over RESP respectively: no new op kind, no
// change to allot's durability.
//
// How each request maps onto the engine's ops:
//   - Read: STOCK.GET, submitted to the pipeline like any op: it is applied
//     in order behind every write submitted before it and, in fsync mode,
//     answered only after the fdatasync that covers those writes — reads
//     queue behind the writer, which is the hard lock. The soft lock (read
//     the last committed state without waiting) has no op in allot: it is
//     refused in fsync mode; in write and none modes every reply leaves at
//     once and the two are the same path, which the setting says.
//   - Write: STOCK.SET of a new row (allot has no insert-if-absent: a key
//     that exists is overwritten; the bench never reuses one).
//   - Modify without a lock: STOCK.GET, then STOCK.SET of count+delta, two
//     requests: concurrent modifies lose updates.
//   - Modify under a lock: RELEASE(row, delta), one atomic op applied by
//     the single writer: the engine's own serialisation is the lock.
//   - Versioned modifies and multi-record transactions have no op in allot
//     (it would need a compare-and-set op and a multi-row stock op): they
//     are refused with store.ErrRWUnsupported.
package rowrecords

import (
	"context"
	"fmt"
	"sync"

	"allot/inventory"
	"allot/store"
)

// part names the warehouse and condition of a record's row; the source is
// the space's own ("rw" + store.RWSpaceID), so that two spaces on one
// server never share a row. allot never deletes a row: a space's rows stay
// after Close (an embedded store's, and a server the bench started, go
// with their temporary data directory).
const part = "rw"

// key returns the row of record k.
func (s *Space) key(k string) inventory.RowKey {
	return inventory.RowKey{SKU: k, Warehouse: part, Condition: part, Source: s.source}
}

// Ops is what a session of the engine offers: one op at a time, or many
// in flight.
type Ops interface {
	Do(ctx context.Context, op inventory.Op) (inventory.Result, error)
	Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error
	Close() error
}

// Check refuses what allot cannot express, given the engine's durability
// mode. It returns the setting that names how the options are realised.
func Check(opts store.RWOptions, mode store.Durability) (string, error) {
	if opts.Transactional {
		return "", fmt.Errorf("%w: allot has no multi-record transaction for records (each op commits alone; a multi-row stock op would be needed)", store.ErrRWUnsupported)
	}
	if opts.Versioned {
		return "", fmt.Errorf("%w: allot has no compare-and-set op for a versioned modify (MODIFY_LOCKED is one atomic RELEASE instead)", store.ErrRWUnsupported)
	}
	if opts.Durable != (mode == store.DurabilityFsync) {
		want := "fsync"
		if !opts.Durable {
			want = "write"
		}
		return "", fmt.Errorf("%w: allot's engine runs in %s mode, fixed when it opens: --durable=%v needs --durability %s", store.ErrRWUnsupported, mode, opts.Durable, want)
	}
	setting := "engine durability " + string(mode)
	switch {
	case opts.Lock == store.RWLockSoft && mode == store.DurabilityFsync:
		return "", fmt.Errorf("%w: allot has no read of the last committed state that skips the fsync queue (a soft-lock read would need one); --lock hard reads queue behind the writer", store.ErrRWUnsupported)
	case mode == store.DurabilityFsync:
		setting += "; reads queue behind writes until their fdatasync (hard)"
	default:
		setting += "; reads are applied in order and answered at once (hard and soft are the same path)"
	}
	return setting + "; modify locked = RELEASE (one atomic op)", nil
}

// Space is a record space over allot rows.
type Space struct {
	setting string
	source  string
	open    func(ctx context.Context) (Ops, error)
	admin   Ops

	mu   sync.Mutex
	keys map[string]struct{} // loaded and written: what Records reads back
}

// NewSpace returns a space whose sessions come from open; admin serves
// Load and Records.
func NewSpace(setting string, admin Ops, open func(ctx context.Context) (Ops, error)) *Space {
	return &Space{setting: setting, source: part + store.RWSpaceID(), admin: admin, open: open, keys: map[string]struct{}{}}
}

func (s *Space) Info() store.RWInfo { return store.RWInfo{Setting: s.setting} }

// chunk is how many ops one pipeline carries when loading or reading back.
const chunk = 1024

// Load stocks every record's row, pipelined.
func (s *Space) Load(ctx context.Context, recs []store.RWRecord) error {
	ops := make([]inventory.Op, 0, chunk)
	results := make([]inventory.Result, chunk)
	for i := 0; i < len(recs); i += chunk {
		ops = ops[:0]
		for _, r := range recs[i:min(i+chunk, len(recs))] {
			ops = append(ops, inventory.Stock(s.key(r.Key), r.Value, 0))
		}
		if err := s.admin.Pipeline(ctx, ops, results); err != nil {
			return err
		}
		for j := range ops {
			if results[j].Code != inventory.CodeOK {
				return outcome("loading "+ops[j].Key.SKU, results[j])
			}
		}
	}
	s.remember(recs)
	return nil
}

func (s *Space) remember(recs []store.RWRecord) {
	s.mu.Lock()
	for _, r := range recs {
		s.keys[r.Key] = struct{}{}
	}
	s.mu.Unlock()
}

// Records reads back every record loaded or written through this space.
func (s *Space) Records(ctx context.Context) ([]store.RWRecord, error) {
	s.mu.Lock()
	keys := make([]string, 0, len(s.keys))
	for k := range s.keys {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	out := make([]store.RWRecord, 0, len(keys))
	ops := make([]inventory.Op, 0, chunk)
	results := make([]inventory.Result, chunk)
	for i := 0; i < len(keys); i += chunk {
		ops = ops[:0]
		for _, k := range keys[i:min(i+chunk, len(keys))] {
			ops = append(ops, inventory.Get(s.key(k)))
		}
		if err := s.admin.Pipeline(ctx, ops, results); err != nil {
			return nil, err
		}
		for j := range ops {
			switch results[j].Code {
			case inventory.CodeOK:
				out = append(out, store.RWRecord{Key: ops[j].Key.SKU, Value: results[j].Count})
			case inventory.CodeNotFound:
			default:
				return nil, outcome("reading "+ops[j].Key.SKU, results[j])
			}
		}
	}
	return out, nil
}

// Session opens one worker's ops.
func (s *Space) Session(ctx context.Context) (store.RWSession, error) {
	ops, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	return &Session{space: s, ops: ops}, nil
}

// Close closes the admin ops.
func (s *Space) Close() error { return s.admin.Close() }

// Session is one worker's handle.
type Session struct {
	space   *Space
	ops     Ops
	batch   []inventory.Op
	results []inventory.Result
}

var _ store.RWPipeliner = (*Session)(nil)

// outcome is the error of an op that did not succeed: "rowrecords: <what>:
// <code>", then ": <detail>" when the result has one.
func outcome(what string, r inventory.Result) error {
	if r.Detail == "" {
		return fmt.Errorf("rowrecords: %s: %v", what, r.Code)
	}
	return fmt.Errorf("rowrecords: %s: %v: %s", what, r.Code, r.Detail)
}

func (se *Session) Read(ctx context.Context, key string) (int64, bool, error) {
	r, err := se.ops.Do(ctx, inventory.Get(se.space.key(key)))
	switch {
	case err != nil:
		return 0, false, err
	case r.Code == inventory.CodeNotFound:
		return 0, false, nil
	case r.Code != inventory.CodeOK:
		return 0, false, outcome("read "+key, r)
	}
	return r.Count, true, nil
}

func (se *Session) Write(ctx context.Context, recs []store.RWRecord) error {
	for _, rec := range recs {
		r, err := se.ops.Do(ctx, inventory.Stock(se.space.key(rec.Key), rec.Value, 0))
		if err != nil {
			return err
		}
		if r.Code != inventory.CodeOK {
			return outcome("write "+rec.Key, r)
		}
		se.space.remember([]store.RWRecord{rec})
	}
	return nil
}

func (se *Session) Modify(ctx context.Context, keys []string, delta int64, mode store.RWModify) (int, error) {
	for _, key := range keys {
		switch mode {
		case store.RWLocked:
			r, err := se.ops.Do(ctx, inventory.Release(se.space.key(key), delta))
			if err != nil {
				return 0, err
			}
			if r.Code != inventory.CodeOK {
				return 0, outcome("modify "+key, r)
			}
		case store.RWUnlocked:
			r, err := se.ops.Do(ctx, inventory.Get(se.space.key(key)))
			if err != nil {
				return 0, err
			}
			if r.Code != inventory.CodeOK {
				return 0, outcome("modify (read) "+key, r)
			}
			w, err := se.ops.Do(ctx, inventory.Stock(se.space.key(key), r.Count+delta, r.Price))
			if err != nil {
				return 0, err
			}
			if w.Code != inventory.CodeOK {
				return 0, outcome("modify (write) "+key, w)
			}
		default:
			return 0, fmt.Errorf("%w: allot has no %s modify", store.ErrRWUnsupported, mode)
		}
	}
	return 0, nil
}

func (se *Session) pipeline(ctx context.Context) error {
	if len(se.results) < len(se.batch) {
		se.results = make([]inventory.Result, len(se.batch))
	}
	return se.ops.Pipeline(ctx, se.batch, se.results)
}

// PipelineWrite stocks every record's row, all in flight at once.
func (se *Session) PipelineWrite(ctx context.Context, recs []store.RWRecord) error {
	se.batch = se.batch[:0]
	for _, rec := range recs {
		se.batch = append(se.batch, inventory.Stock(se.space.key(rec.Key), rec.Value, 0))
	}
	if err := se.pipeline(ctx); err != nil {
		return err
	}
	for i := range recs {
		if se.results[i].Code != inventory.CodeOK {
			return outcome("write "+recs[i].Key, se.results[i])
		}
	}
	se.space.remember(recs)
	return nil
}

// PipelineRead reads every key's row, all in flight at once.
func (se *Session) PipelineRead(ctx context.Context, keys []string, values []int64, found []bool) error {
	se.batch = se.batch[:0]
	for _, k := range keys {
		se.batch = append(se.batch, inventory.Get(se.space.key(k)))
	}
	if err := se.pipeline(ctx); err != nil {
		return err
	}
	for i := range keys {
		switch se.results[i].Code {
		case inventory.CodeOK:
			values[i], found[i] = se.results[i].Count, true
		case inventory.CodeNotFound:
			values[i], found[i] = 0, false
		default:
			return outcome("read "+keys[i], se.results[i])
		}
	}
	return nil
}

func (se *Session) Close() error { return se.ops.Close() }
