package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"allot/bench"
	"allot/internal/sysinfo"
	"allot/report"
	"allot/services"
	"allot/store"
	"allot/store/remote"
	"allot/workload"
)

func init() {
	register(command{
		name:    "bench",
		summary: "run the reservation workload against one or more stores, check it, report",
		run:     runBench,
	})
}

const benchAbout = `Loads the workload's rows into each store, replays its captures and
releases with --workers sessions at once, then reads the rows back and
checks that nothing was oversold (per group: final = initial + releases -
captures; no row below zero; every capture's lines sum to its n). Prints a
table, 'check: OK' or 'check: FAILED (n violations)' per run, and exits
non-zero when a check fails, ops fail or a store cannot be reached.

Closed loop by default (each worker sends its next op when the previous one
returns; latency is per store call). With --rate, open loop: ops are sent on
a fixed schedule and latency counts from each op's intended start, so a
stalled store cannot hide its queueing delay.

Lists run every combination: --stores a,b, --durability write,fsync and
--preset seed,hot (each store runs each workload, one workload after the
other, on the same generated ops).

'allot bench serve' runs the bench as a service: runs started over HTTP
with these flags as JSON fields, a live web page, the run history (see
'allot bench serve --help' and docs/bench-serve.md).`

// benchFlags holds the parsed flags.
type benchFlags struct {
	workload    workloadFlags
	kindName    string     // --workload
	kind        bench.Kind // nil for the reservation workload "ims"
	storeName   string
	stores      string
	workers     int
	durability  string
	dataDir     string
	opsFile     string
	jsonOut     bool
	retryDelay  time.Duration
	retryMax    int
	addr        string
	httpAddr    string
	pipeline    int
	rate        float64
	arrival     string
	duration    time.Duration
	sweep       string
	quiet       bool
	out         string
	reportFile  string
	cpuProfile  string
	breakdown   bool
	openTimeout time.Duration
	kill        int    // --kill: rounds of the SIGKILL audit (kill.go)
	faults      string // --faults: what the allot-cluster audit kills (kill_cluster.go)

	set map[string]bool // flags given on the command line
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	f.workload.register(fs)
	fs.StringVar(&f.kindName, "workload", bench.WorkloadDefault, "the workload: "+kindsHelp()+"; a kind's own flags show with --workload NAME --help")
	if f.kind != nil {
		f.kind.RegisterFlags(fs)
	}
	fs.StringVar(&f.storeName, "store", "embedded", "the store to run (see Stores above)")
	fs.StringVar(&f.stores, "stores", "", "comma-separated stores to run one after another on the same ops, or 'all' (every registered store that runs the --workload, but the deliberately wrong naive-* controls, allot-cluster, which needs --addr, and the stores that refuse the flags given, each named on a line with the reason: --pipeline where their sessions make one call at a time, rw's MODIFY on a queue, --transactional on MyISAM...); overrides --store")
	fs.IntVar(&f.workers, "workers", bench.WorkersDefault, "number of sessions issuing ops at once (open loop: the most ops in flight)")
	fs.StringVar(&f.durability, "durability", "fsync", "fsync, write or none (README's durability table says what each means per store); a comma list runs each")
	fs.StringVar(&f.dataDir, "data", "", "data directory of the embedded store (default: a temporary one, removed after the run)")
	fs.StringVar(&f.opsFile, "ops-file", "", "replay this op file (from 'allot gen') instead of generating; excludes --preset, --rows, --ops, --skus, --seed")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON object per store run on standard output instead of the table")
	fs.DurationVar(&f.retryDelay, "retry-delay", bench.RetryDelayDefault, "sleep before retrying a capture that found too little stock (concurrency reordered it after a release)")
	fs.IntVar(&f.retryMax, "retry-max", bench.RetryMaxDefault, "stock retries of one capture before it counts as an error")
	fs.StringVar(&f.addr, "addr", "", "server address (host:port) for stores that connect to one (default: the store's own)")
	fs.StringVar(&f.httpAddr, "http-addr", "", "with --addr and --breakdown: the allot server's HTTP address (host:port), where its /metrics is")
	fs.IntVar(&f.pipeline, "pipeline", 1, "ops a session may keep in flight, for stores that support pipelining")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: ops per second to issue (0: closed loop)")
	fs.StringVar(&f.arrival, "arrival", bench.ArrivalConstant, "open loop arrivals: constant or poisson")
	fs.DurationVar(&f.duration, "duration", 0, "stop each run (each sweep point) after this long; with --rate and no --ops, the op count is sized to fill it")
	fs.StringVar(&f.sweep, "sweep", "", "run each point of one parameter: workers=1,4,16,64 or rows=20,200,2000 or rate=1000,5000")
	fs.BoolVar(&f.quiet, "quiet", false, "no live progress line (it is shown only when standard output is a terminal)")
	fs.StringVar(&f.out, "out", "", "write every run's parameters, environment, throughput series and encoded histograms to this JSON results file")
	fs.StringVar(&f.reportFile, "report", "", "write a self-contained HTML report of the runs to this file")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole bench process (runner and in-process stores) to this file, for 'go tool pprof'")
	fs.DurationVar(&f.openTimeout, "timeout", 30*time.Second, "bound on connecting to a store and loading its rows")
	fs.IntVar(&f.kill, "kill", 0, "instead of a timed run, the crash audit: SIGKILL each store's server process N times under load, restart it on the same data and count acknowledged ops lost, ops applied unacknowledged, half-applied captures and oversell (every durability mode unless --durability is given; --ops sets the ops of a round)")
	fs.StringVar(&f.faults, "faults", faultKillPrimary, "with --kill on allot-cluster: what the rounds kill, in turn, at a random moment each: a comma list of "+strings.Join(clusterFaults, ", "))
	fs.BoolVar(&f.breakdown, "breakdown", false, "for stores whose server times its stages (allot, allot-mux): print where an op's time went inside the server (socket read, parse, queue wait, batch wait, journal write, fdatasync, wake, reply written)")
}

func storesHelp() string {
	var b strings.Builder
	b.WriteString("\n\nStores:")
	for _, r := range store.Registered() {
		fmt.Fprintf(&b, "\n  %-16s %s", r.Name, r.About)
	}
	return b.String()
}

func kindsHelp() string {
	names := []string{bench.WorkloadDefault + " (captures and releases, the published runs)"}
	for _, k := range bench.Kinds() {
		names = append(names, k.Name+" ("+k.About+")")
	}
	return strings.Join(names, ", ")
}

// scanWorkload finds the --workload value in args before they are parsed,
// so that the kind's own flags can be registered first.
func scanWorkload(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, p := range []string{"-workload", "--workload"} {
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
			if strings.HasPrefix(a, p+"=") {
				return a[len(p)+1:]
			}
		}
	}
	return bench.WorkloadDefault
}

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "serve" {
		// Its errors are printed as "allot bench serve: ..." (run would
		// print "allot bench: ...").
		err := runBenchServe(args[1:], stdout, stderr)
		var ee *exitError
		switch {
		case err == nil || errors.Is(err, flag.ErrHelp):
			return err
		case errors.As(err, &ee):
			if ee.msg != "" {
				fmt.Fprintf(stderr, "allot bench serve: %s\n", ee.msg)
			}
			return &exitError{code: ee.code}
		}
		fmt.Fprintf(stderr, "allot bench serve: %v\n", strings.TrimPrefix(err.Error(), "allot: "))
		return &exitError{code: 1}
	}
	job, err := parseBench(args, stdout, stderr)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) || errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{code: 2, msg: err.Error()}
	}
	f := job.f
	if err := checkBenchFiles(f); err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return &exitError{code: 2, msg: fmt.Sprintf("--cpuprofile: %v", err)}
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	job.stdout, job.stderr = stdout, stderr
	job.progress = !f.quiet && isTerminal(stdout) && isTerminal(stderr)
	return job.run(ctx)
}

// checkBenchFiles checks, before any store runs, that the files the bench
// writes can be written and are not one another or the op file it reads:
// the results file and the report used to be written only after the runs
// (a whole sweep's worth of them), which a missing directory then lost.
func checkBenchFiles(f *benchFlags) error {
	outputs := []struct{ flag, path string }{{"out", f.out}, {"report", f.reportFile}, {"cpuprofile", f.cpuProfile}}
	for i, o := range outputs {
		if o.path == "" {
			continue
		}
		if err := checkWritable(o.path); err != nil {
			return fmt.Errorf("--%s %s: %w", o.flag, o.path, err)
		}
		if !regularOrNew(o.path) {
			continue // a device (/dev/null, /dev/stdout) takes any number of writers
		}
		if f.opsFile != "" && samePath(o.path, f.opsFile) {
			return fmt.Errorf("--%s %s is the --ops-file: writing there would destroy the ops", o.flag, o.path)
		}
		for _, p := range outputs[:i] {
			if p.path != "" && samePath(o.path, p.path) {
				return fmt.Errorf("--%s and --%s are both %s: give each its own file", p.flag, o.flag, o.path)
			}
		}
	}
	return nil
}

// checkWritable says why path cannot be written as writeFileAtomic writes
// it (a directory, a missing or read-only directory), nil when it can. A
// path that is no regular file (a device, a FIFO) is written directly and
// not checked.
func checkWritable(path string) error {
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return errors.New("is a directory")
		}
		if !st.Mode().IsRegular() {
			return nil
		}
	}
	target, ok := followLinks(path)
	if !ok {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write in %s: %w", filepath.Dir(target), err)
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return nil
}

// regularOrNew reports whether path is a regular file or names nothing
// yet: what the bench's outputs replace whole (writeFileAtomic), where two
// outputs naming one file would lose one of them.
func regularOrNew(path string) bool {
	st, err := os.Stat(path)
	return err != nil || st.Mode().IsRegular()
}

// samePath reports whether a and b name one file: the same existing file,
// or the same path once cleaned.
func samePath(a, b string) bool {
	if sameFile(a, b) {
		return true
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// parseBench parses a bench command line into a validated job; the
// service (benchserve.go) builds its runs with it too, so that a run
// started over HTTP is the very same job as one started from the shell.
// Errors from validation are returned as they are (not as exitError).
func parseBench(args []string, stdout, stderr io.Writer) (*benchJob, error) {
	fs := newFlagSet("bench", "[flags]", benchAbout+storesHelp(), stderr)
	var f benchFlags
	if name := scanWorkload(args); name != bench.WorkloadDefault {
		reg, err := bench.LookupKind(name)
		if err != nil {
			return nil, err
		}
		f.kind = reg.New()
	}
	f.register(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return nil, err
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	// An explicit --ops 0 (--rows, --skus) is a bad value, not "the
	// preset's" (or the workload's default).
	f.workload.set = f.set
	j, err := f.job()
	if err != nil {
		return nil, err
	}
	if err := j.leaveOutRefused(); err != nil {
		return nil, err
	}
	return j, nil
}

// use is what the run of store name in durability d asks of the store
// (bench.StoreUse).
func (j *benchJob) use(name string, d store.Durability) store.Use {
	return bench.StoreUse(j.f.kindName, j.f.kind, j.runConfig(0, name, d))
}

// refusal says why store name cannot run the job in durability d, ""
// when it can (store.Registration.Refusal). A store that does not run the
// workload at all is not refused here: named explicitly, it fails saying
// what it lacks, as its adapter says it.
func (j *benchJob) refusal(name string, d store.Durability) string {
	reg, err := store.Lookup(name)
	if err != nil || !reg.Runs(j.f.kindName) {
		return ""
	}
	return reg.Refusal(j.use(name, d))
}

// leaveOutRefused takes out of `--stores all` every store that refuses
// the job's flags in one of its durabilities, keeping a line saying why
// for the run to print. A store named explicitly stays, and its run fails
// with the same reason (runStore).
func (j *benchJob) leaveOutRefused() error {
	if j.f.stores != "all" || j.f.kill > 0 {
		return nil
	}
	kept := j.stores[:0]
	for _, name := range j.stores {
		reason := ""
		for _, d := range j.durabilities {
			if reason = j.refusal(name, d); reason != "" {
				if len(j.durabilities) > 1 {
					reason += " (--durability " + string(d) + ")"
				}
				break
			}
		}
		if reason != "" {
			j.skipped = append(j.skipped, "skipping "+name+": "+reason)
			continue
		}
		kept = append(kept, name)
	}
	j.stores = kept
	if len(j.stores) == 0 {
		return fmt.Errorf("no store to run: every store that runs workload %s refuses these flags:\n%s", j.f.kindName, strings.Join(j.skipped, "\n"))
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// benchJob is a validated bench invocation.
type benchJob struct {
	f            *benchFlags
	stores       []string
	durabilities []store.Durability
	sweep        *bench.Sweep
	fileWorkload *workload.Workload // --ops-file, else nil
	allParams    []workload.Params  // one per --preset in the list
	params       workload.Params    // the current one, before sweep changes
	// skipped says, a line each, which stores `--stores all` left out
	// for refusing the flags, and why (leaveOutRefused).
	skipped []string

	stdout, stderr io.Writer
	progress       bool
	results        bench.ResultsFile

	// progressFor, when set, gives each store run its progress callback
	// (the service's live feed) instead of the terminal line; onResult is
	// called with each run's result as it is recorded.
	progressFor func(bench.RunConfig) func(bench.Progress)
	onResult    func(*bench.Result)
}

// job validates the flags into a job. Every error here is bad input.
func (f *benchFlags) job() (*benchJob, error) {
	j := &benchJob{f: f}
	switch {
	case f.workers < 1 || f.workers > bench.WorkersMax:
		return nil, fmt.Errorf("--workers must be from 1 to %d, got %d", bench.WorkersMax, f.workers)
	case f.pipeline < 1:
		return nil, fmt.Errorf("--pipeline must be at least 1, got %d", f.pipeline)
	case f.retryMax < 0:
		return nil, fmt.Errorf("--retry-max must not be negative, got %d", f.retryMax)
	case f.retryDelay < 0:
		return nil, fmt.Errorf("--retry-delay must not be negative, got %v", f.retryDelay)
	case f.rate < 0 || math.IsNaN(f.rate) || math.IsInf(f.rate, 0):
		return nil, fmt.Errorf("--rate must be a positive number of ops per second, got %g", f.rate)
	case f.duration < 0:
		return nil, fmt.Errorf("--duration must not be negative, got %v", f.duration)
	case f.openTimeout <= 0:
		return nil, fmt.Errorf("--timeout must be positive, got %v", f.openTimeout)
	case f.kill < 0:
		return nil, fmt.Errorf("--kill must not be negative, got %d", f.kill)
	case f.kill > 0 && (f.rate > 0 || f.sweep != "" || f.kind != nil || f.opsFile != ""):
		return nil, errors.New("--kill runs its own ops with --workers sessions: --rate, --sweep, --workload and --ops-file do not apply")
	case f.kill > 0 && killIgnored(f.set) != "":
		// The audit prints its own table and writes no results file or
		// report: a flag it would ignore is refused rather than dropped.
		return nil, fmt.Errorf("--kill runs its own ops and prints its own table: --%s does not apply", killIgnored(f.set))
	case f.httpAddr != "" && (f.addr == "" || !f.breakdown):
		return nil, errors.New("--http-addr is where --breakdown reads a running server's stage times: give --addr and --breakdown")
	case f.set["faults"] && f.kill == 0:
		return nil, errors.New("--faults chooses what the kill audit kills: give --kill N")
	case f.set["arrival"] && f.rate == 0 && !strings.HasPrefix(f.sweep, "rate="):
		return nil, errors.New("--arrival applies to the open loop: give --rate or --sweep rate=...")
	}
	if _, err := parseFaults(f.faults); err != nil {
		return nil, err
	}
	if f.arrival != bench.ArrivalConstant && f.arrival != bench.ArrivalPoisson {
		return nil, fmt.Errorf("--arrival must be %s or %s, got %q", bench.ArrivalConstant, bench.ArrivalPoisson, f.arrival)
	}

	// Stores.
	names := []string{f.storeName}
	if f.stores == "all" {
		// Every store that runs the workload (what its registration
		// declares), but the controls and the stores that need --addr.
		names = nil
		for _, r := range store.Registered() {
			if !strings.HasPrefix(r.Name, "naive") && !r.AddrRequired && r.Runs(f.kindName) {
				names = append(names, r.Name)
			}
		}
	} else if f.stores != "" {
		names = strings.Split(f.stores, ",")
	}
	for _, n := range names {
		n = strings.TrimSpace(n)
		reg, err := store.Lookup(n)
		if err != nil {
			return nil, err
		}
		if f.kill > 0 && f.stores != "all" && !killable(reg) {
			return nil, fmt.Errorf("--kill kills a store's server process: %s runs in the bench's own process (give --store allot, allot-mux, allot-cluster or a peer's)", n)
		}
		if !slices.Contains(j.stores, n) {
			j.stores = append(j.stores, n)
		}
	}
	if len(j.stores) == 0 {
		return nil, errors.New("no store to run")
	}

	for _, d := range strings.Split(f.durability, ",") {
		dur, err := store.ParseDurability(strings.TrimSpace(d))
		if err != nil {
			return nil, err
		}
		if !slices.Contains(j.durabilities, dur) {
			j.durabilities = append(j.durabilities, dur)
		}
	}

	if f.sweep != "" {
		sw, err := bench.ParseSweep(f.sweep)
		if err != nil {
			return nil, err
		}
		j.sweep = &sw
		if f.set[sw.Param] {
			return nil, fmt.Errorf("--sweep %s=... and --%s both set the %s: give one", sw.Param, sw.Param, sw.Param)
		}
	}

	if f.kind != nil {
		return j, f.kindJob(j)
	}

	if f.opsFile != "" {
		for _, name := range []string{"preset", "rows", "ops", "skus", "seed"} {
			if f.set[name] {
				return nil, fmt.Errorf("--ops-file replays a file: --%s does not apply", name)
			}
		}
		if j.sweep != nil && j.sweep.Param != "workers" {
			return nil, fmt.Errorf("--ops-file replays one workload: only a workers sweep applies, not %s", j.sweep.Param)
		}
		w, err := workload.ReadFile(f.opsFile)
		if err != nil {
			return nil, err
		}
		if _, err := workload.Verify(w); err != nil {
			return nil, fmt.Errorf("%s: the ops do not all succeed when run in order, so the bench could not tell a store's fault from the file's: %w", f.opsFile, err)
		}
		j.fileWorkload = w
	} else {
		// --preset seed,hot runs every store on each workload in turn.
		for _, name := range strings.Split(f.workload.preset, ",") {
			wf := f.workload
			wf.preset = strings.TrimSpace(name)
			p, err := wf.params()
			if err != nil {
				return nil, err
			}
			j.params = p
			// Check every point's params now, so that a bad one fails
			// before any store runs.
			for i := range j.points() {
				p := j.pointParams(i)
				if err := p.Validate(); err != nil {
					return nil, err
				}
			}
			j.allParams = append(j.allParams, p)
		}
	}

	// The run config, checked once for every point.
	for i := range j.points() {
		cfg := j.runConfig(i, "", "")
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// killIgnoredFlags are the bench flags the kill audit does not use.
var killIgnoredFlags = []string{"out", "report", "duration", "pipeline", "preset", "rows", "skus", "data", "retry-delay", "retry-max", "breakdown"}

// killIgnored returns the first flag of set the kill audit would ignore,
// "" when there is none.
func killIgnored(set map[string]bool) string {
	for _, name := range killIgnoredFlags {
		if set[name] {
			return name
		}
	}
	return ""
}

// killable reports whether --kill can audit the store: one with a server
// process of its own (killOne).
func killable(reg store.Registration) bool {
	switch reg.Name {
	case remote.ClusterStore, "allot", "allot-mux":
		return true
	}
	return reg.Server != ""
}

// kindJob finishes validating a job of a workload kind (not "ims").
func (f *benchFlags) kindJob(j *benchJob) error {
	// retry-delay and retry-max pace the ims workload's retries of a
	// capture that found too little stock; no other workload retries so.
	for _, name := range []string{"ops-file", "rows", "skus", "retry-delay", "retry-max"} {
		if f.set[name] {
			return fmt.Errorf("--%s belongs to the ims workload, not --workload %s", name, f.kindName)
		}
	}
	if j.sweep != nil && j.sweep.Param == "rows" {
		return fmt.Errorf("--sweep rows= belongs to the ims workload, not --workload %s", f.kindName)
	}
	if f.workload.ops < 0 || (f.workload.ops == 0 && f.set["ops"]) {
		return fmt.Errorf("--ops must be positive, got %d", f.workload.ops)
	}
	for i := range j.points() {
		cfg := j.kindConfig(i, "", "")
		if err := cfg.Validate(); err != nil {
			return err
		}
		if err := f.kind.Validate(cfg); err != nil {
			return err
		}
	}
	return nil
}

// kindConfig is the config of sweep point i of a workload kind.
func (j *benchJob) kindConfig(i int, storeName string, d store.Durability) bench.KindConfig {
	cfg := bench.KindConfig{RunConfig: j.runConfig(i, storeName, d), Ops: j.f.workload.ops, Seed: j.f.workload.seed}
	if j.f.set["preset"] {
		cfg.Preset = j.f.workload.preset
	}
	return cfg
}

// points returns the number of sweep points (1 without a sweep).
func (j *benchJob) points() int {
	if j.sweep == nil {
		return 1
	}
	return len(j.sweep.Values)
}

// point returns sweep point i's label, nil without a sweep.
func (j *benchJob) point(i int) *bench.SweepPoint {
	if j.sweep == nil {
		return nil
	}
	return j.sweep.Point(i)
}

// rate returns the open-loop rate of point i (0: closed loop).
func (j *benchJob) rate(i int) float64 {
	if j.sweep != nil && j.sweep.Param == "rate" {
		return j.sweep.Values[i]
	}
	return j.f.rate
}

// pointParams returns the generator params of point i.
func (j *benchJob) pointParams(i int) workload.Params {
	p := j.params
	if j.sweep != nil && j.sweep.Param == "rows" {
		p.Rows = int(j.sweep.Values[i])
	}
	// An open loop bounded by a duration needs rate x duration ops; a
	// tenth more covers Poisson arrivals running ahead of the mean.
	if r := j.rate(i); r > 0 && j.f.duration > 0 && !j.f.set["ops"] {
		p.Ops = int(math.Ceil(r*j.f.duration.Seconds()*1.1)) + 100
	}
	return p
}

func (j *benchJob) runConfig(i int, storeName string, d store.Durability) bench.RunConfig {
	workers := j.f.workers
	if j.sweep != nil && j.sweep.Param == "workers" {
		workers = int(j.sweep.Values[i])
	}
	retryMax := j.f.retryMax
	if retryMax == 0 {
		retryMax = -1 // RunConfig: negative means none, zero means default
	}
	return bench.RunConfig{
		Workers:      workers,
		RetryDelay:   j.f.retryDelay,
		RetryMax:     retryMax,
		Duration:     j.f.duration,
		Rate:         j.rate(i),
		Arrival:      j.f.arrival,
		ArrivalSeed:  j.params.Seed,
		Store:        storeName,
		Durability:   d,
		Pipeline:     j.f.pipeline,
		Sweep:        j.point(i),
		WorkloadFile: j.f.opsFile,
	}
}

// run runs every point, store and durability, prints as it goes and
// returns an exit error when any run failed.
func (j *benchJob) run(ctx context.Context) error {
	if j.f.kill > 0 {
		return j.runKill(ctx)
	}
	for _, line := range j.skipped {
		fmt.Fprintln(j.stderr, line)
	}
	j.results = bench.ResultsFile{Version: bench.ResultsVersion, Started: time.Now().UTC(), Command: os.Args}
	if j.f.out != "" || j.f.reportFile != "" {
		env, err := json.Marshal(sysinfo.Collect(ctx))
		if err != nil {
			return fmt.Errorf("describing the machine: %w", err)
		}
		j.results.Environment = env
	}
	if j.f.kind != nil {
		if err := j.runKind(ctx); err != nil {
			return err
		}
		return j.finish()
	}
	if j.fileWorkload != nil {
		if err := j.runWorkload(ctx); err != nil {
			return err
		}
	}
	for _, p := range j.allParams {
		j.params = p
		if err := j.runWorkload(ctx); err != nil {
			return err
		}
	}
	return j.finish()
}

// runWorkload runs every point, store and durability of one workload.
func (j *benchJob) runWorkload(ctx context.Context) error {
	var plan *bench.Plan
	var planParams workload.Params
	for i := range j.points() {
		if j.fileWorkload != nil {
			if plan == nil {
				p, err := bench.NewPlan(j.fileWorkload)
				if err != nil {
					return &exitError{code: 2, msg: fmt.Sprintf("%s: %v", j.f.opsFile, err)}
				}
				plan = p
			}
		} else if p := j.pointParams(i); plan == nil || p != planParams {
			w, err := workload.Generate(p)
			if err != nil {
				return &exitError{code: 2, msg: err.Error()}
			}
			if plan, err = bench.NewPlan(w); err != nil {
				return err
			}
			planParams = p
		}
		for _, name := range j.stores {
			for _, d := range j.durabilities {
				res, err := j.runOne(ctx, plan, j.runConfig(i, name, d))
				if err != nil {
					return err
				}
				if err := j.emit(res); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// runKind runs every point, store and durability of a workload kind.
func (j *benchJob) runKind(ctx context.Context) error {
	for i := range j.points() {
		for _, name := range j.stores {
			for _, d := range j.durabilities {
				cfg := j.kindConfig(i, name, d)
				info := bench.WorkloadInfo{Name: j.f.kindName, Ops: cfg.Ops, Seed: cfg.Seed}
				if cfg.Preset != "" {
					info.Name += "/" + cfg.Preset
				}
				res, err := j.runStore(ctx, cfg.RunConfig, info, func(st store.Store, rc bench.RunConfig) (*bench.Result, error) {
					cfg.RunConfig = rc
					// A kind that does not meter its timed part itself
					// gets the whole store run's figures, labelled so.
					meter := bench.StartServerMeter(ctx, st)
					res, err := j.f.kind.Run(ctx, cfg, st)
					if err == nil && res != nil && res.Server == nil {
						res.Server = meter.Stop(res.Ops, bench.SpanRun)
					} else {
						meter.Stop(0, bench.SpanRun)
					}
					return res, err
				})
				if err != nil {
					return err
				}
				if err := j.emit(res); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// runOne opens one store, runs the plan on it and closes it. A store that
// cannot be opened or loaded gives a Result saying so; only a cancelled
// run is an error.
func (j *benchJob) runOne(ctx context.Context, plan *bench.Plan, cfg bench.RunConfig) (*bench.Result, error) {
	w := plan.Workload()
	info := bench.WorkloadInfo{Name: w.Params.Name, Rows: len(w.Initial), Ops: len(w.Ops), Seed: w.Params.Seed, SKUs: w.Params.SKUs, File: cfg.WorkloadFile}
	res, err := j.runStore(ctx, cfg, info, func(st store.Store, cfg bench.RunConfig) (*bench.Result, error) {
		return plan.Run(ctx, cfg, st)
	})
	if err == nil && res.Status != bench.StatusFailed && res.Status != bench.StatusServerDown &&
		cfg.Duration > 0 && res.Ops == int64(len(w.Ops)) && res.Seconds < cfg.Duration.Seconds()*0.99 {
		fmt.Fprintf(j.stderr, "allot bench: %s ran out of ops after %.1fs, before --duration %v: raise --ops\n", cfg.Store, res.Seconds, cfg.Duration)
	}
	return res, err
}

// runStore opens one store, calls run on it and closes it. A store that
// cannot be opened, loaded or run gives a Result saying so; only a
// cancelled run is an error.
func (j *benchJob) runStore(ctx context.Context, cfg bench.RunConfig, info bench.WorkloadInfo, run func(store.Store, bench.RunConfig) (*bench.Result, error)) (*bench.Result, error) {
	notRun := func(status string, err error) *bench.Result {
		return &bench.Result{
			Store: cfg.Store, Durability: string(cfg.Durability), Workers: cfg.Workers, Pipeline: cfg.Pipeline,
			Workload: info,
			Mode:     map[bool]string{false: "closed", true: "open"}[cfg.Rate > 0],
			Sweep:    cfg.Sweep, Started: time.Now().UTC(), Status: status, Error: err.Error(),
			Check: bench.CheckResult{Violations: []string{}},
		}
	}
	if reason := j.refusal(cfg.Store, cfg.Durability); reason != "" {
		return notRun(bench.StatusFailed, fmt.Errorf("bench: store %s: %s", cfg.Store, reason)), nil
	}
	st, err := j.openStore(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, store.ErrServerDown) {
			return notRun(bench.StatusServerDown, err), nil
		}
		return notRun(bench.StatusFailed, err), nil
	}
	defer func() {
		if err := st.Close(); err != nil {
			fmt.Fprintf(j.stderr, "allot bench: closing %s: %v\n", cfg.Store, err)
		}
	}()
	if j.progressFor != nil {
		cfg.Progress = j.progressFor(cfg)
	} else if j.progress {
		cfg.Progress = newProgressLine(j.stderr, cfg)
	}
	probe := j.startProbe(ctx, st, cfg)
	cfg.Timed = probe.timed
	res, err := run(st, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		if errors.Is(err, store.ErrServerDown) {
			return notRun(bench.StatusServerDown, err), nil
		}
		return notRun(bench.StatusFailed, err), nil
	}
	probe.finish(ctx, res)
	if j.f.addr == "" || cfg.Store == "embedded" {
		res.DataDirs = dataDirs(ctx, st, cfg.Store, cfg.Durability, j.stderr)
	}
	return res, nil
}

// openStore opens a store; a server running in another durability mode
// than asked, that the store cannot switch itself (Tarantool's wal_mode;
// PostgreSQL's fsync on a project server an older services started,
// without the allot.managed mark, or where ALTER SYSTEM failed), is switched
// through services (a reload, or a restart where the setting needs one)
// and the store opened again, unless --addr named the server.
func (j *benchJob) openStore(ctx context.Context, cfg bench.RunConfig) (store.Store, error) {
	scfg := store.Config{
		Durability: cfg.Durability, DataDir: j.f.dataDir, Addr: j.f.addr, HTTPAddr: j.f.httpAddr,
		Workers: cfg.Workers, Pipeline: cfg.Pipeline, Timeout: j.f.openTimeout,
	}
	reg, err := store.Lookup(cfg.Store)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.Store, scfg)
	if err != nil && errors.Is(err, store.ErrDurabilityMismatch) && reg.Server != "" && j.f.addr == "" {
		// Only the project's own server, at its own address: one --addr
		// names is someone's, and its mismatch is for them to settle (the
		// error names how).
		log := io.Discard
		if !j.f.quiet {
			log = j.stderr
			fmt.Fprintf(log, "allot bench: %s: %v; switching %s to %s mode (allot services up: a reload where the setting allows, else a restart)\n", cfg.Store, err, reg.Server, cfg.Durability)
		}
		if uerr := services.Up(ctx, services.Config{Durability: cfg.Durability, Log: log}, reg.Server); uerr != nil {
			return nil, fmt.Errorf("%w; switching %s to %s mode failed: %v", err, reg.Server, cfg.Durability, uerr)
		}
		st, err = store.Open(ctx, cfg.Store, scfg)
	}
	return st, err
}

// emit records a run: a JSON line at once with --json, and the results
// file rewritten so that a long sweep interrupted keeps what it measured.
func (j *benchJob) emit(res *bench.Result) error {
	j.results.Runs = append(j.results.Runs, *res)
	if j.onResult != nil {
		j.onResult(res)
	}
	if j.f.jsonOut {
		if err := json.NewEncoder(j.stdout).Encode(res); err != nil {
			return err
		}
	}
	if j.f.out != "" {
		data, err := json.MarshalIndent(&j.results, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFileAtomic(j.f.out, append(data, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// finish prints the table (or, with --json, the failures on stderr),
// writes the report and turns failed runs into the exit code.
func (j *benchJob) finish() error {
	runs := j.results.Runs
	if j.f.jsonOut {
		var failed []bench.Result
		for _, r := range runs {
			if r.Failed() {
				failed = append(failed, r)
			}
		}
		if len(failed) > 0 {
			if err := bench.WriteTable(j.stderr, failed); err != nil {
				return err
			}
		}
	} else if err := bench.WriteTable(j.stdout, runs); err != nil {
		return err
	} else {
		bench.WriteBounds(j.stdout, runs)
		if err := bench.WriteBreakdowns(j.stdout, runs); err != nil {
			return err
		}
	}
	if j.f.reportFile != "" {
		var page bytes.Buffer
		if err := report.WriteHTML(&page, &j.results); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		if err := writeFileAtomic(j.f.reportFile, page.Bytes()); err != nil {
			return err
		}
		if !j.f.quiet {
			fmt.Fprintf(j.stderr, "wrote %s\n", j.f.reportFile)
		}
	}
	failed := 0
	for _, r := range runs {
		if r.Failed() {
			failed++
		}
	}
	if failed > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d of %d runs failed (see above)", failed, len(runs))}
	}
	return nil
}

// newProgressLine returns a Progress callback drawing one live line for
// the run on w (a terminal), cleared when the run ends.
func newProgressLine(w io.Writer, cfg bench.RunConfig) func(bench.Progress) {
	label := fmt.Sprintf("%s %s %dw", cfg.Store, cfg.Durability, cfg.Workers)
	if cfg.Sweep != nil {
		label += " " + cfg.Sweep.Label
	}
	var bar *progressbar.ProgressBar
	return func(p bench.Progress) {
		if bar == nil {
			bar = progressbar.NewOptions64(p.Total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(label),
				progressbar.OptionSetWidth(24),
				progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(false),
				progressbar.OptionThrottle(200*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
		}
		if p.Final {
			bar.Finish()
			return
		}
		desc := fmt.Sprintf("%s  %8.0f ops/s  p99 %v", label, p.OpsPerSec, p.P99.Round(time.Microsecond))
		if p.ETA > 0 {
			desc += fmt.Sprintf("  eta %v", p.ETA.Round(time.Second))
		}
		bar.Describe(desc)
		bar.Set64(p.Done)
	}
}
