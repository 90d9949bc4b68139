package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"allot/store"
)

// rwPrefix starts every record's key, followed by the space's
// store.RWSpaceID and a colon. It is outside "allot:*", which the
// inventory's Load clears: a reservation run beside a records run must not
// delete its records.
const rwPrefix = "allotrw:"

// rwRetriesMax bounds the optimistic retries of one versioned modify.
const rwRetriesMax = 1000

var (
	//go:embed rw_insert.lua
	rwInsertSource string
	//go:embed rw_modify.lua
	rwModifySource string
)

var _ store.RWStore = (*Store)(nil)

// rwSpace keeps records as plain string keys (prefix + key = value), the
// way a Redis user stores counters:
//   - Read: GET. Redis runs one command at a time and has no lock a read
//     could wait on: hard and soft are the same path, and the setting says
//     so.
//   - Write: SET NX per record; --transactional: one Lua script that checks
//     every key is absent, then sets them all (all or nothing).
//   - Modify without a lock: GET, then SET in a second round trip: lost
//     updates. Locked: one Lua script reads and writes (Redis runs it
//     alone). Versioned: WATCH, GET, MULTI, SET, EXEC, retried when EXEC
//     aborts because the key changed — Redis's own compare-and-set.
//   - --durable: appendfsync always (AOF on), else appendfsync no (AOF
//     on), or no AOF when the store runs in durability none; put back on
//     Close.
//   - kv: pipelined SET and GET on the session's one connection.
type rwSpace struct {
	s       *Store
	prefix  string // rwPrefix + the space's id + ":"
	mu      sync.Mutex
	written map[string]struct{} // full keys loaded or written: what Records reads
	opts    store.RWOptions
	setting string // the AOF settings RWOpen made, for Info
	insert  *goredis.Script
	modify  *goredis.Script
}

// RWOpen sets the AOF policy; the space's keys carry a prefix of their own.
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	// Durable: AOF fsynced on every write. Not durable: AOF written and
	// left to the OS (durability write), or no AOF at all when the store
	// runs in durability none, as allot's engine (no journal) and
	// Tarantool (wal_mode none) then do: AOF on there handicapped Redis.
	appendonly, fsync := "yes", "no"
	switch {
	case opts.Durable:
		fsync = "always"
	case s.cfg.Durability == store.DurabilityNone:
		appendonly = "no"
	}
	for _, kv := range [][2]string{{"appendfsync", fsync}, {"appendonly", appendonly}} {
		if err := s.client.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return nil, fmt.Errorf("redis: CONFIG SET %s %s: %w", kv[0], kv[1], err)
		}
	}
	if err := s.waitRewrite(ctx); err != nil {
		return nil, err
	}
	sp := &rwSpace{s: s, prefix: rwPrefix + store.RWSpaceID() + ":", written: map[string]struct{}{}, opts: opts,
		setting: "appendonly " + appendonly + ", appendfsync " + fsync,
		insert:  goredis.NewScript(rwInsertSource), modify: goredis.NewScript(rwModifySource)}
	for _, sc := range []*goredis.Script{sp.insert, sp.modify} {
		if err := sc.Load(ctx, s.client).Err(); err != nil {
			return nil, fmt.Errorf("redis: loading a records script: %w", err)
		}
	}
	return sp, nil
}

// keys returns the full keys of every record loaded or written through
// the space. They are tracked here rather than found with SCAN, which
// walks the whole keyspace: on a server shared with a million-record
// catalog that is a thousand round trips per read-back.
func (sp *rwSpace) keys(context.Context) ([]string, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	keys := make([]string, 0, len(sp.written))
	for k := range sp.written {
		keys = append(keys, k)
	}
	return keys, nil
}

// remember notes full keys written through the space.
func (sp *rwSpace) remember(keys ...string) {
	sp.mu.Lock()
	for _, k := range keys {
		sp.written[k] = struct{}{}
	}
	sp.mu.Unlock()
}

func (sp *rwSpace) Info() store.RWInfo {
	return store.RWInfo{Setting: sp.setting + "; reads never wait (one command at a time: hard = soft); modify locked = one Lua script"}
}

func (sp *rwSpace) Load(ctx context.Context, recs []store.RWRecord) error {
	for i := 0; i < len(recs); i += loadChunkRows {
		pipe := sp.s.client.Pipeline()
		for _, r := range recs[i:min(i+loadChunkRows, len(recs))] {
			pipe.Set(ctx, sp.prefix+r.Key, r.Value, 0)
			sp.remember(sp.prefix + r.Key)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("redis: loading records: %w", err)
		}
	}
	return nil
}

func (sp *rwSpace) Records(ctx context.Context) ([]store.RWRecord, error) {
	keys, err := sp.keys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]store.RWRecord, 0, len(keys))
	for i := 0; i < len(keys); i += loadChunkRows {
		part := keys[i:min(i+loadChunkRows, len(keys))]
		vals, err := sp.s.client.MGet(ctx, part...).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: reading records: %w", err)
		}
		for j, v := range vals {
			if v == nil {
				continue // deleted between SCAN and MGET: not ours to do
			}
			n, err := strconv.ParseInt(v.(string), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("redis: record %s holds %q", part[j], v)
			}
			out = append(out, store.RWRecord{Key: strings.TrimPrefix(part[j], sp.prefix), Value: n})
		}
	}
	return out, nil
}

// Close deletes the space's keys and puts the store's own durability back.
func (sp *rwSpace) Close() error {
	ctx := context.Background()
	keys, err := sp.keys(ctx)
	for i := 0; err == nil && i < len(keys); i += loadChunkRows {
		err = sp.s.client.Unlink(ctx, keys[i:min(i+loadChunkRows, len(keys))]...).Err()
	}
	return errors.Join(err, sp.s.setDurability(ctx))
}

func (sp *rwSpace) Session(ctx context.Context) (store.RWSession, error) {
	c := goredis.NewClient(clientOptions(sp.s.cfg, 1))
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis: %w", err)
	}
	return &rwSession{sp: sp, c: c}, nil
}

type rwSession struct {
	sp *rwSpace
	c  *goredis.Client
}

var _ store.RWPipeliner = (*rwSession)(nil)

func (se *rwSession) Read(ctx context.Context, key string) (int64, bool, error) {
	v, err := se.c.Get(ctx, se.sp.prefix+key).Int64()
	if errors.Is(err, goredis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("redis: GET %s: %w", key, err)
	}
	return v, true, nil
}

func (se *rwSession) Write(ctx context.Context, recs []store.RWRecord) error {
	if se.sp.opts.Transactional {
		keys := make([]string, len(recs))
		args := make([]any, len(recs))
		for i, r := range recs {
			keys[i], args[i] = se.sp.prefix+r.Key, r.Value
		}
		se.sp.remember(keys...)
		if err := se.sp.insert.Run(ctx, se.c, keys, args...).Err(); err != nil {
			return fmt.Errorf("redis: insert of %d records: %w", len(recs), err)
		}
		return nil
	}
	for _, r := range recs {
		se.sp.remember(se.sp.prefix + r.Key)
		ok, err := se.c.SetNX(ctx, se.sp.prefix+r.Key, r.Value, 0).Result()
		if err != nil {
			return fmt.Errorf("redis: SET NX %s: %w", r.Key, err)
		}
		if !ok {
			return fmt.Errorf("redis: insert %s: the key exists", r.Key)
		}
	}
	return nil
}

func (se *rwSession) Modify(ctx context.Context, keys []string, delta int64, mode store.RWModify) (int, error) {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = se.sp.prefix + k
	}
	switch mode {
	case store.RWLocked:
		if se.sp.opts.Transactional {
			return 0, se.modifyLocked(ctx, full, delta)
		}
		for _, k := range full {
			if err := se.modifyLocked(ctx, []string{k}, delta); err != nil {
				return 0, err
			}
		}
		return 0, nil
	case store.RWUnlocked:
		values := make([]int64, len(full))
		for i, k := range full {
			v, err := se.c.Get(ctx, k).Int64()
			if err != nil {
				return 0, fmt.Errorf("redis: modify %s: GET: %w", k, err)
			}
			values[i] = v + delta
		}
		if se.sp.opts.Transactional {
			_, err := se.c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				for i, k := range full {
					p.Set(ctx, k, values[i], 0)
				}
				return nil
			})
			return 0, err
		}
		for i, k := range full {
			if err := se.c.Set(ctx, k, values[i], 0).Err(); err != nil {
				return 0, fmt.Errorf("redis: modify %s: SET: %w", k, err)
			}
		}
		return 0, nil
	case store.RWVersioned:
		if se.sp.opts.Transactional {
			return se.modifyWatched(ctx, full, delta)
		}
		total := 0
		for _, k := range full {
			n, err := se.modifyWatched(ctx, []string{k}, delta)
			total += n
			if err != nil {
				return total, err
			}
		}
		return total, nil
	}
	return 0, fmt.Errorf("%w: %s modify", store.ErrRWUnsupported, mode)
}

func (se *rwSession) modifyLocked(ctx context.Context, keys []string, delta int64) error {
	if err := se.sp.modify.Run(ctx, se.c, keys, delta).Err(); err != nil {
		return fmt.Errorf("redis: modify %v: %w", keys, err)
	}
	return nil
}

// modifyWatched is the optimistic modify: WATCH the keys, read them, and
// write them in MULTI/EXEC, which Redis aborts if a watched key changed.
func (se *rwSession) modifyWatched(ctx context.Context, keys []string, delta int64) (int, error) {
	for retries := 0; retries <= rwRetriesMax; retries++ {
		err := se.c.Watch(ctx, func(tx *goredis.Tx) error {
			values := make([]int64, len(keys))
			for i, k := range keys {
				v, err := tx.Get(ctx, k).Int64()
				if err != nil {
					return fmt.Errorf("redis: modify %s: GET: %w", k, err)
				}
				values[i] = v + delta
			}
			_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				for i, k := range keys {
					p.Set(ctx, k, values[i], 0)
				}
				return nil
			})
			return err
		}, keys...)
		if errors.Is(err, goredis.TxFailedErr) {
			continue
		}
		return retries, err
	}
	return rwRetriesMax, fmt.Errorf("redis: modify %v: %d optimistic conflicts in a row", keys, rwRetriesMax)
}

// PipelineWrite sends one SET per record, all before the first reply.
func (se *rwSession) PipelineWrite(ctx context.Context, recs []store.RWRecord) error {
	pipe := se.c.Pipeline()
	for _, r := range recs {
		pipe.Set(ctx, se.sp.prefix+r.Key, r.Value, 0)
		se.sp.remember(se.sp.prefix + r.Key)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// PipelineRead sends one GET per key, all before the first reply.
func (se *rwSession) PipelineRead(ctx context.Context, keys []string, values []int64, found []bool) error {
	pipe := se.c.Pipeline()
	cmds := make([]*goredis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, se.sp.prefix+k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return err
	}
	for i, c := range cmds {
		v, err := c.Int64()
		switch {
		case errors.Is(err, goredis.Nil):
			values[i], found[i] = 0, false
		case err != nil:
			return err
		default:
			values[i], found[i] = v, true
		}
	}
	return nil
}

func (se *rwSession) Close() error { return se.c.Close() }
