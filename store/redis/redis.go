package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"allot/inventory"
	"allot/store"
)

// AddrDefault is where the project's own Redis listens.
const AddrDefault = store.RedisAddr

// Bounds on the work of one request to the server.
const (
	// loadChunkRows is how many rows one pipelined round trip of Load sends.
	loadChunkRows = 1000
	// scanCount is the COUNT hint of each SCAN step of Rows and Load.
	scanCount = 1000
	// storePoolSize is the pool of the Store's own client, which only Load,
	// Rows and Describe use, one at a time.
	storePoolSize = 2
)

var (
	//go:embed capture.lua
	captureSource string
	//go:embed release.lua
	releaseSource string
)

func init() {
	store.Register(store.Registration{
		Name:   "redis",
		About:  "Redis 7: rows in hashes, a sorted-set index per group, capture and release as Lua scripts",
		Open:   Open,
		Server: store.ServerRedis,
		// Sessions are SearchPipeliner and CheckoutPipeliner; captures
		// and releases are one script call at a time.
		Pipelines: []string{"search", "checkout"},
	})
}

// Store is a Redis server holding the inventory. Its own small client serves
// Load, Rows and Describe; each Session has a client of its own with a
// single connection. One pool shared by the sessions, sized to
// cfg.Workers, was the first design: a caller that opened more sessions
// than it announced then waited on the pool and failed, for no reason the
// server had.
type Store struct {
	client  *goredis.Client
	capture *goredis.Script
	release *goredis.Script
	cfg     store.Config
	catalog catalogState // LoadCatalog's (search.go)
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Describer = (*Store)(nil)
)

// Open connects to the server at cfg.Addr (AddrDefault if empty), sets its
// durability per cfg.Durability, and loads the scripts.
func Open(ctx context.Context, cfg store.Config) (store.Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Addr == "" {
		cfg.Addr = AddrDefault
	}
	client := goredis.NewClient(clientOptions(cfg, storePoolSize))
	s := &Store{
		client:  client,
		capture: goredis.NewScript(captureSource),
		release: goredis.NewScript(releaseSource),
		cfg:     cfg,
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis: %w: %s: %v", store.ErrServerDown, cfg.Addr, err)
	}
	if err := s.setDurability(ctx); err != nil {
		client.Close()
		return nil, err
	}
	// Loading the scripts once here means sessions call them by SHA from
	// the first op; Script.Run still falls back to EVAL (which caches the
	// script again) if the server answers NOSCRIPT after a restart.
	for _, sc := range []*goredis.Script{s.capture, s.release} {
		if err := sc.Load(ctx, client).Err(); err != nil {
			client.Close()
			return nil, fmt.Errorf("redis: loading a script: %w", err)
		}
	}
	return s, nil
}

// setDurability maps the mode onto Redis's append-only file as DESIGN.md's
// table says, then waits for the AOF rewrite that turning it on starts, so
// that the bench does not measure it.
func (s *Store) setDurability(ctx context.Context) error {
	if _, err := store.ParseDurability(string(s.cfg.Durability)); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	appendonly, appendfsync := store.RedisAOF(s.cfg.Durability)
	settings := [][2]string{{"appendfsync", appendfsync}, {"appendonly", appendonly}}
	for _, kv := range settings {
		if err := s.client.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return fmt.Errorf("redis: CONFIG SET %s %s: %w", kv[0], kv[1], err)
		}
	}
	return s.waitRewrite(ctx)
}

// waitRewrite polls INFO persistence until no AOF rewrite is running.
func (s *Store) waitRewrite(ctx context.Context) error {
	for {
		info, err := s.client.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("redis: INFO persistence: %w", err)
		}
		if infoField(info, "aof_rewrite_in_progress") != "1" && infoField(info, "aof_rewrite_scheduled") != "1" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis: waiting for the AOF rewrite to finish: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// infoField returns the value of name in an INFO reply, "" if absent.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Load replaces the inventory with rows. It deletes only the adapter's own
// keys (SCAN + UNLINK over "allot:*") rather than FLUSHDB, so it cannot
// destroy anything else on the server; then it writes the rows in
// pipelined chunks.
func (s *Store) Load(ctx context.Context, rows []inventory.Row) error {
	if err := store.CheckRows(rows); err != nil {
		return fmt.Errorf("redis: load: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.clear(ctx); err != nil {
		return err
	}
	for start := 0; start < len(rows); start += loadChunkRows {
		chunk := rows[start:min(start+loadChunkRows, len(rows))]
		pipe := s.client.Pipeline()
		for i := range chunk {
			r := &chunk[i]
			pipe.HSet(ctx, rowKey(r.Key), fieldCount, r.Count, fieldPrice, r.Price)
			pipe.ZAdd(ctx, groupKey(r.Key.Group()), goredis.Z{Score: 0, Member: r.Key.Warehouse})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("redis: load: rows %d..%d: %w", start, start+len(chunk)-1, err)
		}
	}
	return nil
}

// clear removes every key of the adapter.
func (s *Store) clear(ctx context.Context) error {
	var cursor uint64
	for {
		keys, next, err := s.client.Scan(ctx, cursor, keyPrefix+"*", scanCount).Result()
		if err != nil {
			return fmt.Errorf("redis: clearing old keys: %w", err)
		}
		if len(keys) > 0 {
			if err := s.client.Unlink(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("redis: clearing old keys: %w", err)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// Rows reads every row back by scanning the row keys and reading each
// batch's hashes in one pipeline. SCAN may return a key more than once
// (while the keyspace's hash table is being resized), so keys already read
// are skipped.
func (s *Store) Rows(ctx context.Context) ([]inventory.Row, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var out []inventory.Row
	seen := make(map[string]struct{})
	var cursor uint64
	for {
		keys, next, err := s.client.Scan(ctx, cursor, rowPrefix+"*", scanCount).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: rows: %w", err)
		}
		keys = slices.DeleteFunc(keys, func(k string) bool {
			_, dup := seen[k]
			seen[k] = struct{}{}
			return dup
		})
		if len(keys) > 0 {
			pipe := s.client.Pipeline()
			cmds := make([]*goredis.SliceCmd, len(keys))
			for i, key := range keys {
				cmds[i] = pipe.HMGet(ctx, key, fieldCount, fieldPrice)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return nil, fmt.Errorf("redis: rows: %w", err)
			}
			for i, key := range keys {
				row, err := decodeRow(key, cmds[i].Val())
				if err != nil {
					return nil, err
				}
				out = append(out, row)
			}
		}
		if next == 0 {
			return out, nil
		}
		cursor = next
	}
}

// decodeRow builds a row from its key and its HMGET c p reply.
func decodeRow(key string, vals []any) (inventory.Row, error) {
	k, ok := parseRowKey(key)
	if !ok {
		return inventory.Row{}, fmt.Errorf("redis: rows: key %q is not a row key", key)
	}
	row := inventory.Row{Key: k}
	for i, dst := range []*int64{&row.Count, &row.Price} {
		str, ok := vals[i].(string)
		if !ok {
			return inventory.Row{}, fmt.Errorf("redis: rows: row %v has no field %s", k, []string{fieldCount, fieldPrice}[i])
		}
		v, err := strconv.ParseInt(str, 10, 64)
		if err != nil {
			return inventory.Row{}, fmt.Errorf("redis: rows: row %v: %w", k, err)
		}
		*dst = v
	}
	return row, nil
}

// Session opens one connection for a worker.
func (s *Store) Session(ctx context.Context) (store.Session, error) {
	client := goredis.NewClient(clientOptions(s.cfg, 1))
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis: %w: %s: %v", store.ErrServerDown, s.cfg.Addr, err)
	}
	return &session{client: client, store: s}, nil
}

// clientOptions are the options of a client with a pool of poolSize
// connections.
//
// MaxRetries -1: go-redis otherwise sends a command again (three times)
// after its connection broke (io.EOF), even when the server had already
// run it. A capture, a release or a keyless order is not idempotent: its
// repeat takes or gives the units twice while the caller hears of one.
// A lost connection is an error whose outcome is unknown (store.Session),
// and the caller decides whether to repeat.
func clientOptions(cfg store.Config, poolSize int) *goredis.Options {
	return &goredis.Options{
		Addr:         cfg.Addr,
		MaxRetries:   -1,
		PoolSize:     poolSize,
		DialTimeout:  cfg.Timeout,
		ReadTimeout:  cfg.Timeout,
		WriteTimeout: cfg.Timeout,
		PoolTimeout:  cfg.Timeout,
	}
}

// Describe names the server version and the persistence settings read back
// from the server.
func (s *Store) Describe(ctx context.Context) (string, error) {
	info, err := s.client.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("redis: INFO server: %w", err)
	}
	conf, err := s.client.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return "", fmt.Errorf("redis: CONFIG GET: %w", err)
	}
	return fmt.Sprintf("redis %s, appendonly %s, appendfsync %s",
		infoField(info, "redis_version"), conf["appendonly"], conf["appendfsync"]), nil
}

// Close closes the client and every connection of its pool.
func (s *Store) Close() error {
	catalogErr := s.dropCatalog(context.Background())
	if err := s.client.Close(); err != nil && !errors.Is(err, goredis.ErrClosed) {
		return fmt.Errorf("redis: close: %w", err)
	}
	return catalogErr
}
