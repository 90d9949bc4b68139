package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"allot/bench"
	"allot/internal/sysinfo"
)

// paletteSize is the number of series colours the stylesheet and script
// define (classes c0..c9); stores beyond it reuse colours in order.
const paletteSize = 10

// page is everything the template draws.
type page struct {
	Title       string
	Started     string
	Command     string
	RunCount    int
	FailedCount int
	CSP         string
	Runs        []runView
	HasOpenLoop bool
	// HasServer is set when some run measured its server's CPU and memory.
	HasServer bool
	// HasPipeline is set when some run kept more than one op in flight
	// per worker: the table then has a Pipeline column.
	HasPipeline bool
	// CommonWorkload is set when every run replayed the same workload: the
	// table then names it once instead of in a column.
	CommonWorkload string
	HasSweep       bool
	// OtherWorkloads is set when some run is not of the reservation
	// workload: its ops, latency and check are its workload's own.
	OtherWorkloads bool
	Published      publishedView
	// Bounds are the durable runs beside the disk's bound measured
	// before them (bench.Bound), when the file has one.
	Bounds          []boundRow
	Env             []keyValue
	EnvSummary      string
	Servers         []serverView
	ThroughputCount int
	SpectrumCount   int
	SweepCount      int
	Notes           []string
	UPlotVersion    string
	UPlotLicense    string
}

type keyValue struct{ Key, Value string }

// runView is one row of the comparison table and one entry of the checks.
type runView struct {
	Number         int
	Label          string
	Color          int
	Store          string
	Workload       string
	WorkloadDetail string
	Mode           string
	Workers        int
	Pipeline       int
	Durability     string
	// Disk is the file system of the store's data ("ext4 (rw,relatime)"),
	// DiskDetail its paths and mounts, DiskMemory set on tmpfs or ramfs.
	Disk            string
	DiskDetail      string
	DiskMemory      bool
	Sweep           string
	Status          string
	StatusOK        bool
	Error           string
	ErrorSamples    []string
	Ops             string
	Seconds         string
	OpsPerSec       string
	P50, P99, P999  string
	Max             string
	ServiceP99      string
	LateOps         string
	Retries         string
	ConflictRetries string
	Errors          string
	// CheckOK: the check passed and no op failed. OpsFailed: the check
	// passed on the ops that succeeded, but some failed, and the bench
	// counts the run failed (bench.Result.Failed).
	CheckOK   bool
	OpsFailed bool
	// NotRun: the run never happened (failed or server_down), so it was
	// never checked and has no verdict.
	NotRun bool
	// Notes are the figures of its kind a pass must not hide
	// (bench.ExtraNotes).
	Notes          []string
	Violations     []string
	ViolationCount int
	ViolationsMore int
	// CPUPerOp, ServerCPU and ServerMB are the server's resource cost
	// ("–" when not measured); ServerNote says what they cover.
	CPUPerOp, ServerCPU, ServerMB string
	ServerNote                    string
}

type serverView struct {
	Store       string
	Description string
}

// newPage builds the view of f. Problems that spoil one chart (a histogram
// that does not decode) become notes on the page rather than errors, so one
// bad run does not hide the others.
func newPage(f *bench.ResultsFile) (*page, *chartSet) {
	p := &page{
		Title:        "allot bench report",
		RunCount:     len(f.Runs),
		CSP:          contentSecurityPolicy(),
		UPlotVersion: uPlotVersion,
		UPlotLicense: uPlotLicense,
	}
	if !f.Started.IsZero() {
		p.Started = f.Started.UTC().Format(time.RFC3339)
	}
	p.Command = strings.Join(f.Command, " ")
	labels := runLabels(f.Runs, "")
	colors := storeColors(f.Runs)
	for i := range f.Runs {
		r := &f.Runs[i]
		v := newRunView(i, r, labels[i], colors[r.Store])
		if !v.StatusOK {
			p.FailedCount++
		}
		if r.OpenLoop != nil {
			p.HasOpenLoop = true
		}
		if r.Server != nil {
			p.HasServer = true
		}
		if r.Pipeline > 1 {
			p.HasPipeline = true
		}
		if r.Sweep != nil {
			p.HasSweep = true
		}
		if !reservationRun(r) {
			p.OtherWorkloads = true
		}
		p.Runs = append(p.Runs, v)
	}
	p.CommonWorkload = p.Runs[0].Workload + " (" + p.Runs[0].WorkloadDetail + ")"
	for _, r := range p.Runs[1:] {
		if r.Workload != p.Runs[0].Workload || r.WorkloadDetail != p.Runs[0].WorkloadDetail {
			p.CommonWorkload = ""
			break
		}
	}
	p.Published = newPublishedView(f.Runs, labels)
	p.Bounds = newBoundRows(f.Runs, p.Runs)
	p.Env, p.EnvSummary = envRows(f.Environment)
	p.Servers = servers(f.Runs)
	charts := newChartSet(f, colors)
	p.Notes = charts.Notes
	p.ThroughputCount = len(charts.Throughput)
	p.SpectrumCount = len(charts.Spectrum)
	p.SweepCount = len(charts.Sweeps)
	return p, charts
}

// failed is the page's verdict on a run: bench.Result.Failed (its status
// is not ok, or some of its ops failed), or a check that did not pass
// whatever the status says. The bench never writes "ok" beside a failed
// check, but a results file is input: a hand-edited or broken one must
// not get a green banner over a checks entry that lists violations.
func failed(r *bench.Result) bool { return r.Failed() || !r.Check.OK }

// checkPassed says whether r's check passed: the checker's verdict, unless
// the status says the check failed. The bench never writes one beside
// the other, but a results file is input: a check that passed beside the
// status check_failed is a check that failed, never "check passed".
func checkPassed(r *bench.Result) bool {
	return r.Check.OK && r.Status != bench.StatusCheckFailed
}

func newRunView(i int, r *bench.Result, label string, color int) runView {
	v := runView{
		Number:          i + 1,
		Label:           label,
		Color:           color,
		Store:           r.Store,
		Workload:        workloadText(r.Workload),
		WorkloadDetail:  workloadDetail(r.Workload),
		Mode:            modeText(r),
		Workers:         r.Workers,
		Pipeline:        r.Pipeline,
		Durability:      r.Durability,
		Status:          r.Status,
		StatusOK:        !failed(r),
		Error:           r.Error,
		ErrorSamples:    r.ErrorSamples,
		Ops:             intText(r.Ops),
		Seconds:         strconv.FormatFloat(r.Seconds, 'f', 2, 64),
		OpsPerSec:       intText(int64(math.Round(r.OpsPerSec))),
		P50:             msText(r.LatencyMS.P50),
		P99:             msText(r.LatencyMS.P99),
		P999:            msText(r.LatencyMS.P999),
		Max:             msText(r.LatencyMS.Max),
		Retries:         intText(r.Retries),
		ConflictRetries: intText(r.ConflictRetries),
		Errors:          intText(r.Errors),
		CheckOK:         checkPassed(r) && r.Errors == 0,
		OpsFailed:       checkPassed(r) && r.Errors > 0,
		Notes:           bench.ExtraNotes(r),
		Violations:      r.Check.Violations,
		ViolationCount:  r.Check.ViolationCount,
	}
	switch {
	case v.Status == "":
		v.Status = "unknown"
	case v.Status == bench.StatusOK && !r.Check.OK:
		// A file that says ok beside a check that did not pass: the
		// check's verdict stands (failed).
		v.Status = bench.StatusCheckFailed
	case v.Status == bench.StatusOK && !v.StatusOK:
		// The check passed on the ops that succeeded, but some failed: the
		// bench counts the run failed (r.Failed), and so does the page.
		v.Status = "ops_failed"
	}
	if r.Status == bench.StatusFailed || r.Status == bench.StatusServerDown {
		// The run never happened: no figure is 0, none is known, and no
		// check ran.
		v.NotRun = true
		v.CheckOK, v.OpsFailed = false, false
		for _, f := range []*string{&v.Ops, &v.Seconds, &v.OpsPerSec, &v.P50, &v.P99, &v.P999, &v.Max, &v.Retries, &v.ConflictRetries, &v.Errors} {
			*f = "–"
		}
	}
	v.CPUPerOp, v.ServerCPU, v.ServerMB = "–", "–", "–"
	if u := r.Server; u != nil {
		v.CPUPerOp = strconv.FormatFloat(u.CPUMicrosPerOp, 'f', 1, 64)
		v.ServerCPU = strconv.FormatFloat(u.CPUSeconds, 'f', 2, 64)
		v.ServerMB = strconv.FormatFloat(float64(u.RSSPeakBytes)/(1<<20), 'f', 0, 64)
		v.ServerNote = fmt.Sprintf("pid %d, %d processes", u.PID, u.Processes)
		if u.Span == bench.SpanRun {
			v.ServerNote += "; the whole store run, loading and checking included"
		}
		if u.InProcess {
			v.ServerNote += "; in the bench's process: its CPU includes the bench's own"
		}
	}
	if r.Sweep != nil {
		v.Sweep = r.Sweep.Label
	}
	if v.ViolationCount < len(v.Violations) {
		v.ViolationCount = len(v.Violations)
	}
	v.ViolationsMore = v.ViolationCount - len(v.Violations)
	if ol := r.OpenLoop; ol != nil {
		v.ServiceP99 = msText(ol.ServiceMS.P99)
		v.LateOps = intText(ol.LateOps)
		if ol.LateOps > 0 {
			v.LateOps += " (≤ " + msText(ol.LatenessMaxMS) + " ms)"
		}
	}
	v.Disk, v.DiskDetail, v.DiskMemory = diskText(r.DataDirs)
	return v
}

func workloadText(w bench.WorkloadInfo) string {
	name := w.Name
	if name == "" {
		name = "workload"
	}
	return fmt.Sprintf("%s, %s rows, %s ops", name, intText(int64(w.Rows)), intText(int64(w.Ops)))
}

// workloadDetail is the rest of what identifies a workload, for a tooltip.
func workloadDetail(w bench.WorkloadInfo) string {
	s := fmt.Sprintf("seed %d", w.Seed)
	if w.SKUs > 0 {
		s += fmt.Sprintf(", %s SKUs", intText(int64(w.SKUs)))
	}
	if w.File != "" {
		s += ", op file " + w.File
	}
	return s
}

func modeText(r *bench.Result) string {
	if r.OpenLoop != nil {
		return fmt.Sprintf("open %s/s %s", intText(int64(math.Round(r.OpenLoop.Rate))), r.OpenLoop.Arrival)
	}
	if r.Mode == "" {
		return "closed"
	}
	return r.Mode
}

// intText formats n with thousands separators.
func intText(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// msText formats a latency in ms with three significant digits, enough to
// compare stores without pretending to a precision HDR buckets do not have.
func msText(ms float64) string {
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return "—"
	case ms == 0:
		return "0"
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 0, 64)
	}
	// Three significant digits, written out in full: an in-process
	// store's calls take tens to hundreds of nanoseconds, and 'g' alone
	// would write them as 4.5e-05.
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(ms, 'g', 3, 64), 64)
	return strconv.FormatFloat(rounded, 'f', -1, 64)
}

// runAttribute is something that can tell two runs apart.
type runAttribute struct {
	name string
	of   func(r *bench.Result) string
}

// runAttributes lists them in the order labels name them. Store comes first
// and is always named.
func runAttributes() []runAttribute {
	return []runAttribute{
		{"store", func(r *bench.Result) string { return r.Store }},
		{"workload", func(r *bench.Result) string { return r.Workload.Name }},
		{"durability", func(r *bench.Result) string { return r.Durability }},
		{"mode", func(r *bench.Result) string { return modeText(r) }},
		{"workers", func(r *bench.Result) string { return "workers=" + strconv.Itoa(r.Workers) }},
		{"pipeline", func(r *bench.Result) string { return "pipeline=" + strconv.Itoa(r.Pipeline) }},
		{"sweep", func(r *bench.Result) string {
			if r.Sweep == nil {
				return ""
			}
			return r.Sweep.Label + " (sweep)"
		}},
	}
}

// runLabels names each run by its store plus whatever attributes differ
// among runs, leaving out except (the attribute a chart's axis already
// shows). Runs alike in every attribute get "#n".
func runLabels(runs []bench.Result, except string) []string {
	labels := baseLabels(runs, except)
	count := map[string]int{}
	for _, l := range labels {
		count[l]++
	}
	nth := map[string]int{}
	for i, l := range labels {
		if count[l] > 1 {
			nth[l]++
			labels[i] = l + " #" + strconv.Itoa(nth[l])
		}
	}
	return labels
}

// baseLabels is runLabels without the numbering of runs alike.
func baseLabels(runs []bench.Result, except string) []string {
	attrs := runAttributes()
	varies := map[string]bool{}
	for _, a := range attrs {
		seen := map[string]bool{}
		for i := range runs {
			seen[a.of(&runs[i])] = true
		}
		varies[a.name] = len(seen) > 1
	}
	labels := make([]string, len(runs))
	for i := range runs {
		parts := []string{runs[i].Store}
		for _, a := range attrs[1:] {
			// The attribute a sweep varies is named by the sweep label, or
			// by the chart's axis when except is "sweep".
			swept := a.name == sweepAttribute(&runs[i]) && (except == "sweep" || varies["sweep"])
			if varies[a.name] && a.name != except && !swept {
				if v := a.of(&runs[i]); v != "" {
					parts = append(parts, v)
				}
			}
		}
		labels[i] = strings.Join(parts, " · ")
	}
	return labels
}

// sweepAttribute is the run attribute a sweep varies ("workers" for
// --sweep workers=...), so that sweep curves do not repeat it in labels.
// A rows sweep varies none of them: the row count is not an attribute,
// and the workload's name stays what it was (--preset seed,hot runs both
// at every point), so it must still tell those runs apart.
func sweepAttribute(r *bench.Result) string {
	if r.Sweep == nil {
		return ""
	}
	switch r.Sweep.Param {
	case "workers":
		return "workers"
	case "rate":
		return "mode"
	}
	return ""
}

// storeColors gives each store a palette index in order of first
// appearance, so a store has the same colour in every chart and table.
func storeColors(runs []bench.Result) map[string]int {
	colors := map[string]int{}
	for i := range runs {
		if _, ok := colors[runs[i].Store]; !ok {
			colors[runs[i].Store] = len(colors) % paletteSize
		}
	}
	return colors
}

func servers(runs []bench.Result) []serverView {
	seen := map[serverView]bool{}
	var out []serverView
	for i := range runs {
		s := serverView{Store: runs[i].Store, Description: runs[i].Description}
		if s.Description == "" {
			s.Description = "(in process, or the store did not describe itself)"
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// envRows lists the environment: the fields sysinfo defines, by name, then
// any other field the file holds (a newer allot may record more).
func envRows(raw json.RawMessage) ([]keyValue, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "environment not recorded"
	}
	var env sysinfo.Env
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return []keyValue{{"environment", "unreadable: " + err.Error()}}, "environment unreadable"
	}
	_ = json.Unmarshal(raw, &env) // fields of the wrong type stay zero; all shows them raw below
	rows := []keyValue{
		{"CPU", env.CPUModel},
		{"Logical CPUs", strconv.Itoa(env.Cores)},
		{"GOMAXPROCS", strconv.Itoa(env.GOMAXPROCS)},
		{"Memory", memoryText(env.MemoryBytes)},
		{"OS", env.OS},
		{"Architecture", env.Arch},
		{"Kernel", env.Kernel},
		{"Go", env.GoVersion},
		{"allot commit", commitText(env)},
		{"Load average when the bench started (1, 5, 15 min)", loadText(env)},
		{"Host", env.Hostname},
	}
	known := map[string]bool{"cpu_model": true, "cores": true, "gomaxprocs": true, "memory_bytes": true, "os": true,
		"arch": true, "kernel": true, "go_version": true, "allot_commit": true, "allot_modified": true, "load_average": true, "hostname": true}
	var extra []string
	for k := range all {
		if !known[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		rows = append(rows, keyValue{k, strings.Trim(string(all[k]), `"`)})
	}
	out := rows[:0]
	for _, r := range rows {
		if r.Value != "" && r.Value != "0" {
			out = append(out, r)
		}
	}
	return out, env.String()
}

func loadText(env sysinfo.Env) string {
	l := env.LoadAverage
	if l == [3]float64{} {
		return ""
	}
	s := fmt.Sprintf("%.2f, %.2f, %.2f", l[0], l[1], l[2])
	if env.Cores > 0 && l[0] >= float64(env.Cores)/2 {
		s += fmt.Sprintf(" — the machine was busy with other work (%d CPUs): figures may be lower and noisier than on an idle machine", env.Cores)
	}
	return s
}

func memoryText(b int64) string {
	if b <= 0 {
		return ""
	}
	return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB"
}

func commitText(env sysinfo.Env) string {
	if env.AllotCommit == "" {
		return ""
	}
	if env.AllotModified {
		return env.AllotCommit + " (with uncommitted changes)"
	}
	return env.AllotCommit
}

// diskText summarises the file systems of a run's data directories: the
// distinct types and options, the paths and mount points for a tooltip,
// and whether any is in memory (where fsync proves nothing).
func diskText(dirs []bench.DataDir) (short, detail string, memory bool) {
	var shorts, details []string
	for _, d := range dirs {
		if s := d.String(); !slices.Contains(shorts, s) {
			shorts = append(shorts, s)
		}
		details = append(details, d.Path+" on "+d.MountPoint+": "+d.FSType+" ("+d.MountOptions+")")
		memory = memory || d.Memory
	}
	return strings.Join(shorts, "; "), strings.Join(details, "\n"), memory
}
