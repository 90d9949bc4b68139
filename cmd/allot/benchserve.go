package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"allot/bench"
	"allot/benchsvc"
	"allot/internal/sysinfo"
	"allot/store"
)

const benchServeAbout = `Serves the bench over HTTP: POST /v1/runs with the bench's flags as JSON
fields ({"stores":["embedded"],"preset":"hot","ops":50000,"workers":8})
queues a run (one at a time per store) and answers 202 {"id"};
GET /v1/runs/{id} shows it, GET /v1/runs/{id}/events streams one sample a
second (server-sent events), DELETE /v1/runs/{id} cancels it, GET /v1/runs
lists the history, GET /v1/runs/{id}/report draws its HTML report, and
GET / is a web page doing all of that. POST /test/gen-load/{store} answers
the seed load-test bench's requests. See docs/bench-serve.md.`

// benchServeDefaultListen is loopback: the service runs whatever bench a
// request asks for.
const benchServeDefaultListen = "127.0.0.1:7390"

func runBenchServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench serve", "[flags]", benchServeAbout, stderr)
	listen := fs.String("listen", benchServeDefaultListen, "address to listen on; an address other than loopback needs --token")
	token := fs.String("token", os.Getenv("ALLOT_BENCH_TOKEN"), "bearer token every API request must carry (Authorization: Bearer <token>); also $ALLOT_BENCH_TOKEN")
	dataDir := fs.String("data", "", "directory keeping the run history across restarts (default: in memory only)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := benchsvc.CheckListen(*listen, *token); err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc, err := newBenchService(ctx, benchsvc.Config{DataDir: *dataDir, Token: *token, Log: stderr})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		svc.Close()
		return fmt.Errorf("bench serve: %w", err)
	}
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(stderr, "allot bench serve: listening on http://%s/\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	// Runs first: their event streams then end, and Shutdown need not
	// wait for them.
	svc.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("bench serve: %w", err)
	}
	return nil
}

// newBenchService makes the service with this command's bench parser and
// the lists the page's form offers.
func newBenchService(ctx context.Context, cfg benchsvc.Config) (*benchsvc.Service, error) {
	cfg.Parse = parseServedBench
	cfg.GenLoadOps = genLoadOps
	cfg.Resource = storeResource
	for _, r := range store.Registered() {
		cfg.Stores = append(cfg.Stores, r.Name)
	}
	cfg.Workloads = []string{bench.WorkloadDefault}
	for _, k := range bench.Kinds() {
		cfg.Workloads = append(cfg.Workloads, k.Name)
	}
	if env, err := json.Marshal(sysinfo.Collect(ctx)); err == nil {
		cfg.Environment = env
	}
	return benchsvc.New(cfg)
}

// parseServedBench parses a run's argument list with the command line's
// own parser: a run over HTTP is the very same job.
func parseServedBench(args []string) (benchsvc.Job, error) {
	var msgs bytes.Buffer
	j, err := parseBench(args, io.Discard, &msgs)
	if err == nil {
		if n := j.opsMax(); n > servedOpsMax {
			return nil, fmt.Errorf("%w: ops: a run over HTTP makes at most %d ops per store run, this one %d (a workload is built in memory before it runs); run it with allot bench", benchsvc.ErrBadRequest, servedOpsMax, n)
		}
		return &servedJob{j: j}, nil
	}
	var ee *exitError
	switch {
	case errors.Is(err, store.ErrUnknown):
		return nil, fmt.Errorf("%w: %v", benchsvc.ErrUnknownStore, err)
	case errors.Is(err, flag.ErrHelp):
		return nil, fmt.Errorf("%w: help is not a parameter", benchsvc.ErrBadRequest)
	case errors.As(err, &ee) && ee.msg == "":
		// The flag package printed what was wrong, then the usage.
		line, _, _ := strings.Cut(msgs.String(), "\n")
		line = strings.Replace(line, "flag provided but not defined: -", "no such parameter: ", 1)
		return nil, fmt.Errorf("%w: %s", benchsvc.ErrBadRequest, line)
	}
	return nil, fmt.Errorf("%w: %v", benchsvc.ErrBadRequest, err)
}

// servedOpsMax bounds the reservation ops a run over HTTP generates for
// one store run: 2^25, about 2.7 GB. The command line's bound,
// workload.OpsMax (2^28, about 21 GB), is for a user who sees the machine
// it runs on; anyone who can reach the service could otherwise take the
// machine's memory with one request, and the generation cannot be
// cancelled midway. The other workload kinds keep their own bounds (rw on
// records allocates nothing per op, and gen-load sizes its ops by time).
const servedOpsMax = 1 << 25

// opsMax returns the most reservation ops one store run of the job
// generates (0 for a workload read from a file or of another kind).
func (j *benchJob) opsMax() int {
	if j.f.kind != nil {
		return 0
	}
	saved := j.params
	defer func() { j.params = saved }()
	most := 0
	for _, p := range j.allParams {
		j.params = p
		for i := range j.points() {
			most = max(most, j.pointParams(i).Ops)
		}
	}
	return most
}

// servedJob is a bench job run by the service.
type servedJob struct{ j *benchJob }

func (s *servedJob) Stores() []string { return s.j.stores }

func (s *servedJob) StoreRuns() int {
	n := s.j.points() * len(s.j.stores) * len(s.j.durabilities)
	if s.j.f.kind != nil {
		return n
	}
	workloads := len(s.j.allParams)
	if s.j.fileWorkload != nil {
		workloads++
	}
	return n * workloads
}

func (s *servedJob) Run(ctx context.Context, progress func(int, bench.Progress), result func(bench.Result)) (string, error) {
	var table, log bytes.Buffer
	j := s.j
	j.stdout, j.stderr = &table, &log
	// A store run's index is the number of results before it: a store
	// that could not be opened gives a result but no progress.
	finished := 0
	j.progressFor = func(bench.RunConfig) func(bench.Progress) {
		i := finished
		return func(p bench.Progress) { progress(i, p) }
	}
	j.onResult = func(r *bench.Result) {
		finished++
		result(*r)
	}
	err := j.run(ctx)
	if log.Len() > 0 {
		table.WriteString("\n")
		table.Write(log.Bytes())
	}
	var ee *exitError
	if errors.As(err, &ee) {
		err = errors.New(ee.msg)
	}
	return table.String(), err
}

// genLoadQueueOpsPerThreadMs sizes a gen-load READ on a queue: rw
// publishes one message per op before the run, which the run consumes, so
// a bound sized for records (millions) would spend minutes publishing.
// Three messages per thread per millisecond is several times what a
// durable queue here consumes (about 1.3 per thread per ms); a run that
// drains them ends early and says so in timeMs.
const genLoadQueueOpsPerThreadMs = 3

// genLoadOps sizes --ops of a gen-load request (benchsvc.Config.GenLoadOps).
func genLoadOps(storeName string, g benchsvc.GenLoad) int64 {
	if reg, err := store.Lookup(storeName); err == nil && reg.Server == "rabbitmq" && g.RequestType == "READ" {
		return int64(g.Threads) * g.TimeInMilis * genLoadQueueOpsPerThreadMs
	}
	return benchsvc.GenLoadOps(g)
}

// storeResource is what a store's runs must not share with another run
// (benchsvc.Config.Resource): its server, so that mysql and mysql-myisam,
// or tarantool and tarantool-vinyl (whose runs may restart the server in
// another mode), never run at once; for in-process stores, the bench's
// process, whose CPU their resource figures read.
func storeResource(name string) string {
	reg, err := store.Lookup(name)
	switch {
	case err != nil:
		return name
	case reg.Server != "":
		return "server " + reg.Server
	}
	return "the bench process"
}
