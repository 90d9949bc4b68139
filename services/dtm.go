package services

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"allot/store"
)

// DTM is the name of the dtm transaction manager (sagas), the peer of the
// order workload.
const DTM = store.ServerDTM

// DTMVersion is the dtm release Up builds. Its module downloads at this
// pinned version but `go install` refuses it (the proxy does not list its
// versions), so Up builds it from the downloaded module.
const DTMVersion = "v1.17.3"

// DTMURL is the HTTP API of the dtm server Up starts with the default
// Config (its gRPC port is the next one, its JSON-RPC port the one after).
const DTMURL = store.DTMURL

// dtmServer runs dtm built from source, its transactions stored on the
// project's Redis (started first if needed) under the key prefix
// {allot-dtm}, all ports on loopback. Its binary is built once per
// version into the user's cache directory ($XDG_CACHE_HOME or ~/.cache,
// allot/dtm/<version>-loopback/dtm), outside the checkout, so that a second run (CI
// on the same machine, a colleague's tests) does not build it again; a
// build takes a few minutes.
//
// dtm has no durability of its own: its state is Redis's, so the
// durability it reports and switches is Redis's.
type dtmServer struct{}

func (dtmServer) name() string                { return DTM }
func (dtmServer) basePort() int               { return 16789 }
func (dtmServer) packages() []string          { return nil }
func (dtmServer) runAs() string               { return "" }
func (dtmServer) exeNames() []string          { return []string{"dtm"} }
func (dtmServer) pidFile(in *instance) string { return filepath.Join(in.dir, "dtm.pid") }
func (dtmServer) logFile(in *instance) string { return filepath.Join(in.dir, "dtm.log") }
func (dtmServer) stopSignal() syscall.Signal  { return syscall.SIGTERM }

// installed: dtm is built, not installed from Debian, and start builds it
// when the cache lacks it.
func (dtmServer) installed() bool { return true }

// DTMBinary is where the dtm binary of DTMVersion is kept.
func DTMBinary() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("services: dtm: no cache directory: %w", err)
	}
	// Named apart from a build without patchDTMLoopback, which listens on
	// every interface.
	return filepath.Join(dir, "allot", "dtm", DTMVersion+"-loopback", "dtm"), nil
}

// buildDTM builds dtm into DTMBinary unless it is there.
func buildDTM(ctx context.Context, log io.Writer) (string, error) {
	bin, err := DTMBinary()
	if err != nil {
		return "", err
	}
	return buildGoModule(ctx, log, "dtm", "github.com/dtm-labs/dtm", DTMVersion, bin, patchDTMLoopback)
}

// dtmListens are the listen calls of dtm's server (dtmsvr/svr.go at
// DTMVersion): both bind every interface (":port"), and no setting names
// an address.
var dtmListens = []string{`fmt.Sprintf(":%d", conf.HTTPPort)`, `fmt.Sprintf(":%d", conf.GrpcPort)`}

// patchDTMLoopback makes dtm's HTTP and gRPC servers listen on 127.0.0.1
// only. A source that lacks the expected calls is an error, not a build
// that would listen everywhere.
func patchDTMLoopback(src string) error {
	path := filepath.Join(src, "dtmsvr", "svr.go")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(b)
	for _, call := range dtmListens {
		if strings.Count(text, call) != 1 {
			return fmt.Errorf("%s: expected one %s to make it listen on loopback only", path, call)
		}
		text = strings.Replace(text, call, strings.Replace(call, `":%d"`, `"127.0.0.1:%d"`, 1), 1)
	}
	return writeShared(path, []byte(text))
}

// redisInstance is the Redis dtm stores on: the one Up starts from the
// same Config.
func (dtmServer) redisInstance(in *instance) (*instance, error) {
	return newInstance(in.cfg, redisServer{})
}

func (s dtmServer) start(ctx context.Context, in *instance) (int, error) {
	bin, err := buildDTM(ctx, in.cfg.Log)
	if err != nil {
		return 0, err
	}
	rcfg := *in.cfg
	rcfg.Durability = ""
	if err := Up(ctx, rcfg, Redis); err != nil {
		return 0, fmt.Errorf("dtm stores on Redis: %w", err)
	}
	rin, err := s.redisInstance(in)
	if err != nil {
		return 0, err
	}
	conf := filepath.Join(in.dir, "dtm.yml")
	text := fmt.Sprintf(`# Written by allot services; rewritten on every start.
Store:
  Driver: redis
  Host: 127.0.0.1
  Port: %d
  RedisPrefix: '{allot-dtm}'
HttpPort: %d
GrpcPort: %d
JsonRpcPort: %d
LogLevel: warn
`, rin.port, in.port, in.port+1, in.port+2)
	if err := writeShared(conf, []byte(text)); err != nil {
		return 0, err
	}
	for _, p := range []int{in.port + 1, in.port + 2} {
		if err := portFree(p); err != nil {
			return 0, fmt.Errorf("port %d (dtm's gRPC or JSON-RPC) is taken: %w", p, err)
		}
	}
	pid, err := startBackground(ctx, in.user, in.dir, s.logFile(in), bin, "-c", conf)
	if err != nil {
		return 0, err
	}
	if err := writeShared(s.pidFile(in), []byte(strconv.Itoa(pid)+"\n")); err != nil {
		return pid, err
	}
	return pid, nil
}

// probe asks dtm for a new global transaction id, as a client would, and
// reads the durability of the Redis it stores on.
func (s dtmServer) probe(ctx context.Context, in *instance) (probeResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+in.addr()+"/api/dtmsvr/newGid", nil)
	if err != nil {
		return probeResult{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return probeResult{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var reply struct {
		Gid string `json:"gid"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &reply) != nil || reply.Gid == "" {
		return probeResult{}, fmt.Errorf("newGid answered %s: %s", resp.Status, body)
	}
	rin, err := s.redisInstance(in)
	if err != nil {
		return probeResult{}, err
	}
	rp, err := redisServer{}.probe(ctx, rin)
	if err != nil {
		return probeResult{}, fmt.Errorf("dtm answers, but its Redis does not: %w", err)
	}
	return probeResult{version: "dtm " + DTMVersion + " on " + rp.version, durability: rp.durability}, nil
}

// setDurability switches the Redis dtm stores on.
func (s dtmServer) setDurability(ctx context.Context, in *instance, d store.Durability) (bool, error) {
	rin, err := s.redisInstance(in)
	if err != nil {
		return false, err
	}
	return redisServer{}.setDurability(ctx, rin, d)
}
