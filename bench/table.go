package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the terminal table: one row per run (a pipeline
// column when some run kept more than one op in flight per worker), then
// one check line per run ("check: OK" or "check: FAILED (n violations)"
// with the violations, and a note for each figure of its kind a pass must
// not hide, ExtraNotes), the open-loop figures, and the errors of runs
// that did not happen.
func WriteTable(w io.Writer, runs []Result) error {
	sweep, open, workloads, server, pipeline := false, false, false, false, false
	for i := range runs {
		server = server || runs[i].Server != nil
		pipeline = pipeline || runs[i].Pipeline > 1
		sweep = sweep || runs[i].Sweep != nil
		open = open || runs[i].OpenLoop != nil
		workloads = workloads || runs[i].Workload.Name != runs[0].Workload.Name
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"store"}
	if workloads {
		head = append(head, "workload")
	}
	if sweep {
		head = append(head, "point")
	}
	head = append(head, "durability", "workers")
	if pipeline {
		head = append(head, "pipeline")
	}
	head = append(head, "ops", "seconds", "ops/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "retries", "conflict retries", "errors", "check")
	if server {
		head = append(head, "cpu µs/op", "server cpu s", "server MB")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for i := range runs {
		r := &runs[i]
		row := []string{r.Store}
		if workloads {
			row = append(row, r.Workload.Name)
		}
		if sweep {
			row = append(row, sweepLabel(r))
		}
		row = append(row, r.Durability, strconv.Itoa(r.Workers))
		if pipeline {
			row = append(row, strconv.Itoa(max(r.Pipeline, 1)))
		}
		if r.Status == StatusServerDown || r.Status == StatusFailed {
			row = append(row, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", statusWord(r))
		} else {
			l := r.LatencyMS
			row = append(row, strconv.FormatInt(r.Ops, 10), fmt.Sprintf("%.2f", r.Seconds), fmt.Sprintf("%.0f", r.OpsPerSec),
				ms(l.P50), ms(l.P99), ms(l.P999), ms(l.Max),
				strconv.FormatInt(r.Retries, 10), strconv.FormatInt(r.ConflictRetries, 10), strconv.FormatInt(r.Errors, 10), statusWord(r))
		}
		if server {
			row = append(row, serverCells(r)...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if open {
		fmt.Fprintln(w, "\nopen loop: latency above is response time, from each op's intended start")
		for i := range runs {
			if ol := runs[i].OpenLoop; ol != nil {
				fmt.Fprintf(w, "  %s: rate %.0f/s %s; response p99 %s ms, max %s; service p99 %s ms, max %s; %d ops late by more than %s ms (max %s ms)\n",
					runLabel(&runs[i]), ol.Rate, ol.Arrival, ms(ol.ResponseMS.P99), ms(ol.ResponseMS.Max), ms(ol.ServiceMS.P99), ms(ol.ServiceMS.Max),
					ol.LateOps, ms(ol.LateThresholdMS), ms(ol.LatenessMaxMS))
			}
		}
	}
	header := false
	for i := range runs {
		unit, key := opsUnit(&runs[i])
		if unit == "" {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nops, ops/s and latency count each workload's own ops:")
			header = true
		}
		fmt.Fprintf(w, "  %s: ops are %s (extra.%s)\n", runLabel(&runs[i]), unit, key)
	}
	if server {
		fmt.Fprintln(w, "\ncpu µs/op: the server's CPU time (user + system, all its processes) per op during the timed run (*: the whole store run, loading and checking included); server MB: its peak resident memory (Pss)")
		for i := range runs {
			if u := runs[i].Server; u != nil && u.InProcess {
				fmt.Fprintf(w, "  %s: the store runs in the bench's process, so its CPU includes the bench's own\n", runLabel(&runs[i]))
			}
		}
	}
	fmt.Fprintln(w)
	for i := range runs {
		writeCheck(w, &runs[i], len(runs) > 1)
	}
	return nil
}

// opsUnit returns what a workload kind's run counts as its ops, as the
// kind states it: the Extra figure "<unit>_per_sec" that equals ops/s
// ("carts_per_sec" for checkout, "queries_per_sec" for search), and that
// figure's key; "" for a reservation run (captures and releases).
func opsUnit(r *Result) (unit, key string) {
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		u, ok := strings.CutSuffix(k, "_per_sec")
		if v, isFloat := r.Extra[k].(float64); ok && u != "" && isFloat && v == r.OpsPerSec {
			return strings.ReplaceAll(u, "_", " "), k
		}
	}
	return "", ""
}

// serverCells are the resource columns of a run: "-" where not measured.
func serverCells(r *Result) []string {
	u := r.Server
	if u == nil {
		return []string{"-", "-", "-"}
	}
	mark := ""
	if u.Span == SpanRun {
		mark = "*"
	}
	return []string{fmt.Sprintf("%.1f%s", u.CPUMicrosPerOp, mark), fmt.Sprintf("%.2f%s", u.CPUSeconds, mark), fmt.Sprintf("%.0f", float64(u.RSSPeakBytes)/(1<<20))}
}

// writeCheck writes a run's check line and what went wrong.
func writeCheck(w io.Writer, r *Result, label bool) {
	suffix := ""
	if label {
		suffix = "  (" + runLabel(r) + ")"
	}
	switch r.Status {
	case StatusServerDown:
		fmt.Fprintf(w, "check: NOT RUN, server down%s: %s\n", suffix, r.Error)
		return
	case StatusFailed:
		fmt.Fprintf(w, "check: NOT RUN%s: %s\n", suffix, r.Error)
		return
	}
	switch {
	case r.Check.OK && r.Errors > 0:
		// The check allows any outcome for an op that failed: with many
		// failed it proves little, so the line must not read as a pass.
		fmt.Fprintf(w, "check: FAILED (%d ops failed; the check passed on the others)%s\n", r.Errors, suffix)
	case r.Check.OK:
		fmt.Fprintf(w, "check: OK%s\n", suffix)
	default:
		fmt.Fprintf(w, "check: FAILED (%d violations)%s\n", r.Check.ViolationCount, suffix)
		for _, v := range r.Check.Violations {
			fmt.Fprintf(w, "  violation: %s\n", v)
		}
		if more := r.Check.ViolationCount - len(r.Check.Violations); more > 0 {
			fmt.Fprintf(w, "  ... and %d more\n", more)
		}
	}
	for _, n := range ExtraNotes(r) {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if r.Errors > 0 {
		fmt.Fprintf(w, "  %d ops failed%s, for example:\n", r.Errors, suffix)
		for _, e := range r.ErrorSamples {
			fmt.Fprintf(w, "  error: %s\n", e)
		}
	}
}

func runLabel(r *Result) string {
	parts := []string{r.Store}
	if r.Workload.Name != "" {
		parts = append(parts, r.Workload.Name)
	}
	parts = append(parts, r.Durability, strconv.Itoa(r.Workers)+" workers")
	if r.Pipeline > 1 {
		parts = append(parts, "pipeline "+strconv.Itoa(r.Pipeline))
	}
	if r.Sweep != nil {
		parts = append(parts, r.Sweep.Label)
	}
	return strings.Join(parts, ", ")
}

func sweepLabel(r *Result) string {
	if r.Sweep == nil {
		return "-"
	}
	return r.Sweep.Label
}

func statusWord(r *Result) string {
	switch r.Status {
	case StatusOK:
		if r.Errors > 0 {
			return "FAILED (errors)"
		}
		return "OK"
	case StatusCheckFailed:
		return fmt.Sprintf("FAILED (%d)", r.Check.ViolationCount)
	case StatusServerDown:
		return "SERVER DOWN"
	}
	return "NOT RUN"
}

// ms formats milliseconds with about three significant digits, in fixed
// notation at every scale: an in-process store's calls take a few hundred
// nanoseconds, and a fixed four decimals would show 0.000234 as 0.0002.
func ms(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		decimals := max(3, 2-int(math.Floor(math.Log10(v))))
		return strconv.FormatFloat(v, 'f', decimals, 64)
	case v < 10:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// Failed reports whether a run should make `allot bench` exit non-zero: it
// did not run, its check failed, or some of its ops failed.
func (r *Result) Failed() bool { return r.Status != StatusOK || r.Errors > 0 }
