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
	"slices"
	"strings"
	"syscall"
	"time"

	"allot/bench"
	"allot/bench/rw"
	"allot/bench/search"
	"allot/benchsvc"
	"allot/internal/sysinfo"
	"allot/store"
	"allot/workload"
)

const benchServeAbout = `Serves the bench over HTTP: POST /v1/runs with the bench's flags as JSON
fields ({"stores":["embedded"],"preset":"hot","ops":50000,"workers":8})
queues a run (one at a time per store) and answers 202 {"id"};
GET /v1/runs/{id} shows it, GET /v1/runs/{id}/events streams one sample a
second (server-sent events; Last-Event-ID resumes), DELETE /v1/runs/{id}
cancels it, GET /v1/runs lists the history, GET /v1/runs/{id}/report draws
its HTML report, and GET / is a web page doing all of that.
POST /test/gen-load/{store} answers the seed load-test bench's requests.
A run over HTTP is bounded (ops, workers, pipeline) so that one request
cannot take the machine's memory. Ctrl-C stops gracefully; a second one
exits at once. See docs/bench-serve.md.`

// benchServeDefaultListen is loopback: the service runs whatever bench a
// request asks for.
const benchServeDefaultListen = "127.0.0.1:7390"

func runBenchServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench serve", "[flags]", benchServeAbout, stderr)
	listen := fs.String("listen", benchServeDefaultListen, "address to listen on; an address other than loopback needs --token")
	// The token is read from the environment after parsing, so that
	// --help does not print it as the flag's default.
	ef := &envFlags{fs: fs}
	token := new(string)
	ef.secret(token, "token", "ALLOT_BENCH_TOKEN", "bearer token every API request must carry (Authorization: Bearer <token>)")
	dataDir := fs.String("data", "", "directory keeping the run history across restarts (default: in memory only); one service per directory, a second is refused")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	for _, apply := range ef.secrets {
		apply()
	}
	if err := benchsvc.CheckListen(*listen, *token); err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	// Listen first: an address that cannot be had (in use, a port out of
	// range) leaves no --data directory made and locked behind.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return &exitError{code: 2, msg: fmt.Sprintf("--listen %s: %v", *listen, err)}
		}
		return fmt.Errorf("--listen %s: %w", *listen, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc, err := newBenchService(ctx, benchsvc.Config{DataDir: *dataDir, Token: *token, Log: stderr})
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(stderr, "allot bench serve: listening on http://%s/\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		// The first signal stops gracefully, which can take a while (a
		// run finishing its op, a request finishing its body); from now
		// on a second one ends the process at once, by the signal's
		// default action (a shell shows 130 for SIGINT). The history on
		// disk then still has the runs in flight as running, and the
		// next start marks them failed.
		stop()
		fmt.Fprintln(stderr, "allot bench serve: stopping (interrupt again to exit at once)")
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
		return err
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
		if err := j.servedBound(); err != nil {
			return nil, fmt.Errorf("%w: %v; run it with allot bench", benchsvc.ErrBadRequest, err)
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

// Bounds of a run over HTTP. The command line's bounds (workload.OpsMax,
// 2^28 reservation ops, about 21 GB; bench.WorkersMax; the kinds' own)
// are for a user who sees the machine it runs on; anyone who can reach
// the service could otherwise take the machine's memory with one
// request, and a workload's generation cannot be cancelled midway. Each
// bound keeps what one store run holds in memory for the field it bounds
// to about 2.7 GB at most (bytes per op measured with the generators, or
// counted from the types); a request past one is refused (servedBound),
// never cut down. Only gen-load, whose --ops the service sizes itself,
// sizes a WRITE within its bound (benchsvc.GenLoadOps).
const (
	// servedOpsMax bounds the reservation ops ("ims") of one store run:
	// 80 bytes each.
	servedOpsMax = 1 << 25
	// servedRowsMax bounds the rows of a reservation workload: generating
	// 2^21 rows took 0.4 GB and 1.5 s, and 10.5 s when they are every key
	// the SKUs, warehouses, conditions and sources make (rows are drawn
	// again until distinct, and a generation cannot be cancelled); the
	// command line's bound, 2^24, is eight times that, minutes and GBs.
	servedRowsMax = 1 << 21
	// servedRecordOpsMax bounds the ops of a rw run that keeps a record
	// per op (benchsvc.RecordOpsMax).
	servedRecordOpsMax = benchsvc.RecordOpsMax
	// servedCartOpsMax bounds the carts (orders) of checkout and order:
	// about 520 bytes each (the cart, its outcome, its hold lines).
	servedCartOpsMax = 1 << 22
	// servedQueryOpsMax bounds search's queries: 58 bytes each.
	servedQueryOpsMax = 1 << 25
	// servedKVOpsMax bounds kv's ops: its overwrite check times every
	// batch issued, 16 bytes each at --pipeline 1.
	servedKVOpsMax = 1 << 26
	// servedUnheldOpsMax bounds the ops of a rw run that holds nothing
	// per op (READ on records, the modifies): only the time they take,
	// so the bound is gen-load's, which sizes them by time.
	servedUnheldOpsMax = 1 << 30
	// servedUnmeasuredOpsMax bounds a workload kind not measured here
	// yet: the strictest bound until someone measures it.
	servedUnmeasuredOpsMax = 1 << 20
	// servedCheckSampleMax bounds search's --check-sample: each sampled
	// query keeps its answer (up to 20 results) for the check.
	servedCheckSampleMax = 1 << 16
	// servedWorkersMax bounds the workers (gen-load's threads bound):
	// each holds a connection and a latency histogram of 270 KB.
	servedWorkersMax = 1024
	// servedPipelineMax bounds the ops in flight per worker: each worker
	// holds buffers for as many.
	servedPipelineMax = 1024
)

// servedBound checks the job against the bounds of a run over HTTP; the
// error names the field, the bound and the value.
func (j *benchJob) servedBound() error {
	for i := range j.points() {
		if w := j.runConfig(i, "", "").Workers; w > servedWorkersMax {
			field := "workers"
			if j.sweep != nil && j.sweep.Param == "workers" {
				field = "sweep"
			}
			return fmt.Errorf("%s: a run over HTTP has at most %d workers (each holds a connection and a 270 KB latency histogram), this one %d", field, servedWorkersMax, w)
		}
	}
	if j.f.pipeline > servedPipelineMax {
		return fmt.Errorf("pipeline: a run over HTTP keeps at most %d ops in flight per worker, this one %d", servedPipelineMax, j.f.pipeline)
	}
	if j.f.kind == nil {
		if n := j.opsMax(); n > servedOpsMax {
			return fmt.Errorf("ops: a run over HTTP makes at most %d ops per store run, this one %d (a workload is built in memory before it runs)", servedOpsMax, n)
		}
		if n := j.rowsMax(); n > servedRowsMax {
			return fmt.Errorf("rows: a run over HTTP loads at most %d rows, this one %d (the rows are generated in memory before the run, which cannot be cancelled midway)", servedRowsMax, n)
		}
		return nil
	}
	if limit, why := j.servedKindOpsMax(); j.f.workload.ops > limit {
		return fmt.Errorf("ops: a run of workload %s over HTTP makes at most %d ops per store run, this one %d (%s)", j.f.kindName, limit, j.f.workload.ops, why)
	}
	if k, ok := j.f.kind.(*search.Kind); ok {
		if n := k.CheckSample(); n > servedCheckSampleMax {
			return fmt.Errorf("check-sample: a run over HTTP samples at most %d queries (each keeps its answer for the check), this one %d", servedCheckSampleMax, n)
		}
	}
	return nil
}

// servedKindOpsMax returns the bound on the ops of the job's workload
// kind over HTTP, and what an op holds in memory.
func (j *benchJob) servedKindOpsMax() (int, string) {
	switch j.f.kindName {
	case "checkout", "order":
		return servedCartOpsMax, "each cart is generated before the run, about 520 bytes with its outcome"
	case "search":
		return servedQueryOpsMax, "each query is generated before the run"
	case "kv":
		return servedKVOpsMax, "the check times every batch issued"
	case "rw":
		k, _ := j.f.kind.(*rw.Kind)
		switch {
		case k == nil:
		case k.RequestType == rw.RequestWrite:
			return servedRecordOpsMax, "a WRITE keeps every record it writes, and reads them all back, for the check"
		case k.RequestType == rw.RequestRead && slices.ContainsFunc(j.stores, queueStore):
			return servedRecordOpsMax, "a READ on a queue publishes and keeps a message per op before the run; a gen-load request makes threads x timeInMilis x 3"
		}
		return servedUnheldOpsMax, "a READ on records or a modify holds nothing per op; the bound is gen-load's, which sizes such runs by time"
	}
	return servedUnmeasuredOpsMax, "a workload whose memory per op is not measured for the service yet"
}

// queueStore reports whether the store is a queue (rw's READ consumes
// messages published before the run, one per op).
func queueStore(name string) bool {
	reg, err := store.Lookup(name)
	return err == nil && reg.Server == store.ServerRabbitMQ
}

// opsMax and rowsMax return the most reservation ops, and rows, one store
// run of the job generates (0 for a workload read from a file or of
// another kind).
func (j *benchJob) opsMax() int  { return j.paramsMax(func(p workload.Params) int { return p.Ops }) }
func (j *benchJob) rowsMax() int { return j.paramsMax(func(p workload.Params) int { return p.Rows }) }

// paramsMax returns the most of field over the reservation workloads of
// every store run of the job.
func (j *benchJob) paramsMax(field func(workload.Params) int) int {
	if j.f.kind != nil {
		return 0
	}
	saved := j.params
	defer func() { j.params = saved }()
	most := 0
	for _, p := range j.allParams {
		j.params = p
		for i := range j.points() {
			most = max(most, field(j.pointParams(i)))
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
// A READ on a queue past servedRecordOpsMax is sized as asked, and the
// parser refuses it (servedBound): cutting it down would publish minutes
// of messages the run does not consume.
func genLoadOps(storeName string, g benchsvc.GenLoad) int64 {
	if queueStore(storeName) && g.RequestType == "READ" {
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
