package store

import (
	"fmt"
	"slices"
)

// Use is one bench run as a store's registration sees it before the store
// is opened: the workload, and the flags that not every store running
// that workload can honour (Registration.Refusal), and what the run's
// timed part does to the data (whether a closed-loop fdatasync bound
// means anything for it).
type Use struct {
	// Workload is the bench workload: "ims" (the reservation workload),
	// "search", "checkout", "order", "rw" or "kv".
	Workload string
	// Durability is the mode the store is opened in.
	Durability Durability
	// Pipeline is how many calls a session keeps in flight (1: one at a
	// time).
	Pipeline int
	// ReadOnly: the timed part only reads (search; rw and kv READ).
	ReadOnly bool
	// Durable: the run's writes are to be durable when acknowledged
	// (Durability fsync, or rw's --durable).
	Durable bool
	// RW is, for workloads rw and kv, the options the record space is
	// opened with; RWRequest is rw's --request-type (READ, WRITE, MODIFY,
	// MODIFY_LOCKED or MIXED; the last three modify records in place).
	RW        RWOptions
	RWRequest string
}

// RWModifies reports whether the run modifies records in place (rw's
// MODIFY, MODIFY_LOCKED and MIXED).
func (u Use) RWModifies() bool {
	return u.Workload == "rw" && u.RWRequest != "" && u.RWRequest != "READ" && u.RWRequest != "WRITE"
}

// pipelineOptional names the workloads in which keeping several calls in
// flight is a capability of a store's sessions (store.Pipeliner,
// SearchPipeliner, CheckoutPipeliner), declared by
// Registration.Pipelines. Workload kv needs it of every store that runs
// kv (RWPipeliner); rw and order run one call at a time on every store
// (the bench refuses --pipeline for them).
var pipelineOptional = []string{"ims", "search", "checkout"}

// Refusal says why the store cannot run use although it runs
// use.Workload ("" when it can): a --pipeline its sessions cannot keep in
// flight (Pipelines), or what Refuses says. It does not look at
// Workloads: a store that does not run the workload at all is the
// caller's to leave out (Runs).
//
// The bench asks it both to leave a store out of `--stores all` (printing
// the reason) and to fail the run of a store named explicitly (with the
// reason), so that the two never disagree. The adapters refuse the same
// things again when they are opened or run, for callers other than the
// bench.
func (r Registration) Refusal(u Use) string {
	if u.Pipeline > 1 && slices.Contains(pipelineOptional, u.Workload) && !slices.Contains(r.Pipelines, u.Workload) {
		return fmt.Sprintf("no --pipeline %d in workload %s: its sessions make one call at a time (run it with --pipeline 1)", u.Pipeline, u.Workload)
	}
	if r.Refuses != nil {
		return r.Refuses(u)
	}
	return ""
}
