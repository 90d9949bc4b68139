package rw_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"allot/bench"
	"allot/bench/rw/rwtest"
	"allot/store"
	"allot/store/embedded"
)

// An rw run whose every op is one durable call (durable writes, one
// record a call) got no "% of bound", as if each of its ops were
// several calls: the kind declared nothing, and its op mix decides it
// run by run. The share is shown exactly for such runs: not for MIXED's
// reads, a --transactional --batch of several records, or a queue's
// publish without a confirm (TestAudit13OneDurableCallPerOp has every
// combination of the flags).
func TestAudit13BoundShareForRunsOfOneDurableCallPerOp(t *testing.T) {
	st, err := embedded.Open(context.Background(), store.Config{Durability: store.DurabilityFsync, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fake := func() store.Store { return fakeStore{&fakeSpace{}} }
	queue := func() store.Store { return fakeStore{&fakeSpace{queue: true}} }
	for _, c := range []struct {
		name  string
		st    store.Store
		share bool
		args  []string
	}{
		{"WRITE", st, true, []string{"--request-type", "WRITE"}},
		{"MODIFY_LOCKED", st, true, []string{"--request-type", "MODIFY_LOCKED", "--records", "10"}},
		{"MODIFY", st, true, []string{"--request-type", "MODIFY", "--records", "10"}},
		{"MIXED", st, false, []string{"--request-type", "MIXED", "--records", "10"}},
		{"READ", st, false, []string{"--request-type", "READ", "--records", "10"}},
		{"WRITE --transactional --batch 10", fake(), false, []string{"--request-type", "WRITE", "--transactional", "--batch", "10"}},
		{"WRITE --transactional --batch 1", fake(), true, []string{"--request-type", "WRITE", "--transactional", "--batch", "1"}},
		{"queue WRITE --confirm=false", queue(), false, []string{"--request-type", "WRITE", "--confirm=false"}},
		{"queue WRITE", queue(), true, []string{"--request-type", "WRITE"}},
	} {
		res := rwtest.Run(t, c.st, store.DurabilityFsync, 2, 200, c.args...)
		if !res.Check.OK || res.Errors != 0 {
			t.Fatalf("%s: check %+v, errors %v", c.name, res.Check, res.ErrorSamples)
		}
		// The bound the bench measures before a durable run: 2 in flight
		// over a 1 ms fdatasync.
		res.Bound = &bench.Bound{FsyncP50MS: 1, FsyncSamples: 300, InProcess: true, Workers: 2, InFlight: 2, OpsPerSecFsync: 2000, OpsPerSecFsyncRTT: 2000}
		res.OpsPerSec = 1000
		var out bytes.Buffer
		bench.WriteBounds(&out, []bench.Result{*res})
		s := out.String()
		if got := strings.Contains(s, "measured 1000 = 50% / 50%"); got != c.share {
			t.Errorf("%s: share shown %v, want %v:\n%s", c.name, got, c.share, s)
		}
		if !c.share && !strings.Contains(s, "no share: an rw run's ops are one durable call each only for") {
			t.Errorf("%s: no share, and no reason why:\n%s", c.name, s)
		}
	}
}
