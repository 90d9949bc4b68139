package tarantool

import (
	"context"
	_ "embed"
	"fmt"

	gotarantool "github.com/tarantool/go-tarantool/v2"

	"allot/store"
)

//go:embed rw.lua
var rwLuaSource string

// rwPageMax is how many records one select of Records reads.
const rwPageMax = 10000

var _ store.RWStore = (*Store)(nil)

// rwSpace keeps records as tuples {k, v, ver} in a space of its own, of
// the store's engine (allot_rw_<store.RWSpaceID>, dropped on Close), over
// the store's shared connection:
//   - Read: a native IPROTO select by primary key. No read ever waits for
//     a writer in Tarantool (memtx runs each request without yielding;
//     vinyl reads committed data, MVCC): hard and soft are the same path,
//     and the setting says so.
//   - Write: allot_rw.insert (one transaction with --transactional).
//   - Modify without a lock: a select, then allot_rw.set with the value
//     computed here: two requests, other fibers run between them: lost
//     updates. Locked: allot_rw.modify reads and writes in one
//     transaction. Versioned: a select, then allot_rw.cas, retried when
//     the version moved.
//   - --durable: wal_mode is the server's, fixed at its start: it must
//     agree with the durability the store was opened in (fsync is
//     durable); the bench restarts Tarantool for another --durability.
//   - kv: native replace and select requests, N in flight on the shared
//     connection (go-tarantool multiplexes them).
type rwSpace struct {
	s    *Store
	opts store.RWOptions
	name string
	id   uint32
}

// RWOpen defines the Lua functions and makes an empty space.
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	if opts.Durable != (s.cfg.Durability == store.DurabilityFsync) {
		want := "fsync"
		if !opts.Durable {
			want = "write"
		}
		return nil, fmt.Errorf("%w: tarantool runs with wal_mode %s, fixed at its start: --durable=%v needs --durability %s",
			store.ErrRWUnsupported, s.cfg.Durability, opts.Durable, want)
	}
	if _, err := s.conn.Do(gotarantool.NewEvalRequest(rwLuaSource).Context(ctx)).Get(); err != nil {
		return nil, fmt.Errorf("tarantool: defining the records functions: %w", err)
	}
	sp := &rwSpace{s: s, opts: opts, name: "allot_rw_" + store.RWSpaceID()}
	var id []uint32
	if err := s.conn.Do(gotarantool.NewCallRequest("allot_rw.setup").Args([]any{sp.name, s.engine.name}).Context(ctx)).GetTyped(&id); err != nil || len(id) != 1 {
		return nil, fmt.Errorf("tarantool: creating space %s: %v (reply %v)", sp.name, err, id)
	}
	sp.id = id[0]
	return sp, nil
}

func (sp *rwSpace) Info() store.RWInfo {
	return store.RWInfo{Setting: fmt.Sprintf("wal_mode=%s, %s; reads never wait (no read locks: hard = soft); modify locked = one Lua transaction", sp.s.cfg.Durability, sp.s.engine.name)}
}

// rwTuple is a record as Tarantool returns it.
type rwTuple struct {
	_msgpack struct{} `msgpack:",as_array"`
	K        string
	V        int64
	Ver      int64
}

func (sp *rwSpace) Load(ctx context.Context, recs []store.RWRecord) error {
	for i := 0; i < len(recs); i += rwPageMax {
		part := recs[i:min(i+rwPageMax, len(recs))]
		args := make([][2]any, len(part))
		for j, r := range part {
			args[j] = [2]any{r.Key, r.Value}
		}
		if _, err := sp.s.conn.Do(gotarantool.NewCallRequest("allot_rw.load").Args([]any{sp.name, args}).Context(ctx)).Get(); err != nil {
			return fmt.Errorf("tarantool: loading records: %w", err)
		}
	}
	return nil
}

func (sp *rwSpace) Records(ctx context.Context) ([]store.RWRecord, error) {
	var out []store.RWRecord
	after := []any{}
	for {
		var page []rwTuple
		req := gotarantool.NewSelectRequest(sp.id).Index(0).Iterator(gotarantool.IterGt).Key(after).Limit(rwPageMax).Context(ctx)
		if len(after) == 0 {
			req = req.Iterator(gotarantool.IterAll)
		}
		if err := sp.s.conn.Do(req).GetTyped(&page); err != nil {
			return nil, fmt.Errorf("tarantool: reading records: %w", err)
		}
		for _, t := range page {
			out = append(out, store.RWRecord{Key: t.K, Value: t.V, Version: t.Ver})
		}
		if len(page) < rwPageMax {
			return out, nil
		}
		after = []any{page[len(page)-1].K}
	}
}

// Close drops the space.
func (sp *rwSpace) Close() error {
	_, err := sp.s.conn.Do(gotarantool.NewCallRequest("allot_rw.drop").Args([]any{sp.name})).Get()
	return err
}

func (sp *rwSpace) Session(ctx context.Context) (store.RWSession, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &rwSession{sp: sp}, nil
}

type rwSession struct {
	sp      *rwSpace
	futures []*gotarantool.Future
}

var _ store.RWPipeliner = (*rwSession)(nil)

// The session's requests carry no context: go-tarantool starts a
// watchdog goroutine for every request that has one, which cut pipelined
// reads by a fifth to a half here (session.call in session.go says the
// same of captures). The connection's Timeout bounds each request; a
// done ctx stops a call before it sends anything.

func (se *rwSession) get(ctx context.Context, key string) (rwTuple, bool, error) {
	if err := ctx.Err(); err != nil {
		return rwTuple{}, false, err
	}
	var ts []rwTuple
	req := gotarantool.NewSelectRequest(se.sp.id).Index(0).Iterator(gotarantool.IterEq).Key([]any{key}).Limit(1)
	if err := se.sp.s.conn.Do(req).GetTyped(&ts); err != nil {
		return rwTuple{}, false, fmt.Errorf("tarantool: select %s: %w", key, err)
	}
	if len(ts) == 0 {
		return rwTuple{}, false, nil
	}
	return ts[0], true, nil
}

func (se *rwSession) Read(ctx context.Context, key string) (int64, bool, error) {
	t, found, err := se.get(ctx, key)
	return t.V, found, err
}

func (se *rwSession) call(ctx context.Context, function string, args []any) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// A call replies with the function's return values: one table here.
	var reply [][]int64
	if err := se.sp.s.conn.Do(gotarantool.NewCallRequest(function).Args(args)).GetTyped(&reply); err != nil {
		return nil, fmt.Errorf("tarantool: %s: %w", function, err)
	}
	if len(reply) != 1 {
		return nil, fmt.Errorf("tarantool: %s returned %d values, want 1", function, len(reply))
	}
	return reply[0], nil
}

func (se *rwSession) Write(ctx context.Context, recs []store.RWRecord) error {
	args := make([][2]any, len(recs))
	for i, r := range recs {
		args[i] = [2]any{r.Key, r.Value}
	}
	_, err := se.call(ctx, "allot_rw.insert", []any{se.sp.name, args, se.sp.opts.Transactional})
	return err
}

// conflicts is the second element of an allot.atomically reply.
func conflicts(reply []int64) int {
	if len(reply) > 1 {
		return int(reply[1])
	}
	return 0
}

func (se *rwSession) Modify(ctx context.Context, keys []string, delta int64, mode store.RWModify) (int, error) {
	batches := [][]string{keys}
	if !se.sp.opts.Transactional {
		batches = batches[:0]
		for i := range keys {
			batches = append(batches, keys[i:i+1])
		}
	}
	retries := 0
	for _, batch := range batches {
		n, err := se.modify(ctx, batch, delta, mode)
		retries += n
		if err != nil {
			return retries, err
		}
	}
	return retries, nil
}

func (se *rwSession) modify(ctx context.Context, keys []string, delta int64, mode store.RWModify) (int, error) {
	if mode == store.RWLocked {
		reply, err := se.call(ctx, "allot_rw.modify", []any{se.sp.name, keys, delta})
		return conflicts(reply), err
	}
	if mode != store.RWUnlocked && mode != store.RWVersioned {
		return 0, fmt.Errorf("%w: %s modify", store.ErrRWUnsupported, mode)
	}
	retries := 0
	for {
		values := make([]int64, len(keys))
		versions := make([]int64, len(keys))
		for i, k := range keys {
			t, found, err := se.get(ctx, k)
			if err != nil {
				return retries, err
			}
			if !found {
				return retries, fmt.Errorf("tarantool: modify %s: no such record", k)
			}
			values[i], versions[i] = t.V+delta, t.Ver
		}
		if mode == store.RWUnlocked {
			reply, err := se.call(ctx, "allot_rw.set", []any{se.sp.name, keys, values, se.sp.opts.Transactional})
			return retries + conflicts(reply), err
		}
		reply, err := se.call(ctx, "allot_rw.cas", []any{se.sp.name, keys, values, versions})
		if err != nil {
			return retries, err
		}
		retries += conflicts(reply)
		if len(reply) > 0 && reply[0] == 1 {
			return retries, nil
		}
		if retries++; retries > 1000 {
			return retries, fmt.Errorf("tarantool: modify %v: %d compare-and-set conflicts in a row", keys, retries)
		}
	}
}

// PipelineWrite sends a native replace per record, all before the first
// reply is awaited.
func (se *rwSession) PipelineWrite(ctx context.Context, recs []store.RWRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	se.futures = se.futures[:0]
	for _, r := range recs {
		se.futures = append(se.futures, se.sp.s.conn.Do(gotarantool.NewReplaceRequest(se.sp.id).Tuple([]any{r.Key, r.Value, 0})))
	}
	var first error
	for _, f := range se.futures {
		if _, err := f.Get(); err != nil && first == nil {
			first = fmt.Errorf("tarantool: replace: %w", err)
		}
	}
	return first
}

// PipelineRead sends a native select per key, all before the first reply
// is awaited.
func (se *rwSession) PipelineRead(ctx context.Context, keys []string, values []int64, found []bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	se.futures = se.futures[:0]
	for _, k := range keys {
		req := gotarantool.NewSelectRequest(se.sp.id).Index(0).Iterator(gotarantool.IterEq).Key([]any{k}).Limit(1)
		se.futures = append(se.futures, se.sp.s.conn.Do(req))
	}
	var first error
	for i, f := range se.futures {
		var ts []rwTuple
		if err := f.GetTyped(&ts); err != nil {
			if first == nil {
				first = fmt.Errorf("tarantool: select: %w", err)
			}
			continue
		}
		values[i], found[i] = 0, len(ts) > 0
		if found[i] {
			values[i] = ts[0].V
		}
	}
	return first
}

func (se *rwSession) Close() error { return nil }
