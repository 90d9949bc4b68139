package services

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/redis/go-redis/v9"

	"allot/store"
)

// redisServer runs Redis from Debian's redis-server package (redis-tools
// brings redis-cli and redis-benchmark). All settings are on the command
// line, so a restart picks up the durability Up asks for; a running server
// is switched with CONFIG SET.
type redisServer struct{}

func (redisServer) name() string                { return Redis }
func (redisServer) basePort() int               { return 16379 }
func (redisServer) packages() []string          { return []string{"redis-server", "redis-tools"} }
func (redisServer) runAs() string               { return "" }
func (redisServer) exeNames() []string          { return []string{"redis-server", "redis-check-rdb"} }
func (redisServer) pidFile(in *instance) string { return filepath.Join(in.dir, "redis.pid") }
func (redisServer) logFile(in *instance) string { return filepath.Join(in.dir, "redis.log") }
func (redisServer) stopSignal() syscall.Signal  { return syscall.SIGTERM }
func (redisServer) installed() bool {
	return findBinary("redis-server") != "" && findBinary("redis-cli") != ""
}

func (s redisServer) start(ctx context.Context, in *instance) (int, error) {
	appendonly, appendfsync := store.RedisAOF(in.durability)
	// --daemonize: the server forks, writes its pid file, and the command
	// returns; a bad option fails before the fork, with the reason.
	_, err := run(ctx, in.user, in.dir, findBinary("redis-server"),
		"--port", strconv.Itoa(in.port), "--bind", "127.0.0.1", "--protected-mode", "yes",
		"--dir", in.dir, "--save", "", "--appendonly", appendonly, "--appendfsync", appendfsync,
		"--daemonize", "yes", "--pidfile", s.pidFile(in), "--logfile", s.logFile(in))
	return 0, err
}

func redisClient(in *instance) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: in.addr(), DialTimeout: probeTimeout, MaxRetries: -1})
}

func (redisServer) probe(ctx context.Context, in *instance) (probeResult, error) {
	c := redisClient(in)
	defer c.Close()
	info, err := c.InfoMap(ctx, "server", "persistence").Result()
	if err != nil {
		return probeResult{}, err
	}
	// Redis answers INFO and CONFIG while it loads its data set, and
	// refuses everything else with -LOADING: not ready yet.
	if p := info["Persistence"]; p["loading"] == "1" || p["async_loading"] == "1" {
		return probeResult{}, errors.New("still loading its data set (INFO persistence: loading:1)")
	}
	conf, err := c.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return probeResult{}, err
	}
	d := store.DurabilityNone
	if conf["appendonly"] == "yes" {
		d = store.DurabilityWrite
		if conf["appendfsync"] == "always" {
			d = store.DurabilityFsync
		}
	}
	return probeResult{version: "Redis " + info["Server"]["redis_version"], durability: d}, nil
}

func (redisServer) setDurability(ctx context.Context, in *instance, d store.Durability) (bool, error) {
	appendonly, appendfsync := store.RedisAOF(d)
	c := redisClient(in)
	defer c.Close()
	if err := c.ConfigSet(ctx, "appendfsync", appendfsync).Err(); err != nil {
		return false, err
	}
	return false, c.ConfigSet(ctx, "appendonly", appendonly).Err()
}
