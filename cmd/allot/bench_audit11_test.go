package main

import (
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"allot/server/servertest"
)

// `--stores all` ran every store that runs the workload, also those that
// fail for the flags given: --pipeline > 1 where their sessions take one
// call at a time, rw's MODIFY on a queue, --transactional on MyISAM (or
// on allot's records, which have no multi-record transaction). Such a
// store is left out of all; named explicitly it still runs and fails.
func TestAudit11StoresAllLeavesOutStoresRefusingTheFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		// store.Pipeliner: the allot engine, in-process or over RESP.
		// (allot-mux's sessions share a connection and pipeline nothing).
		{[]string{"--pipeline", "4"}, []string{"allot", "embedded"}},
		// store.SearchPipeliner.
		{[]string{"--workload", "search", "--pipeline", "4"}, []string{"allot", "redis"}},
		// store.CheckoutPipeliner.
		{[]string{"--workload", "checkout", "--pipeline", "4"}, []string{"allot", "embedded", "redis", "tarantool", "tarantool-vinyl"}},
		// A queue has no record to modify.
		{[]string{"--workload", "rw", "--request-type", "MODIFY"}, []string{"allot", "allot-mux", "embedded", "mysql", "mysql-myisam", "postgres", "redis", "tarantool", "tarantool-vinyl"}},
		{[]string{"--workload", "rw", "--request-type", "mixed"}, []string{"allot", "allot-mux", "embedded", "mysql", "mysql-myisam", "postgres", "redis", "tarantool", "tarantool-vinyl"}},
		// MyISAM has no transactions, allot's records no multi-record one;
		// a queue's is a tx channel.
		{[]string{"--workload", "rw", "--transactional"}, []string{"mysql", "postgres", "rabbitmq", "redis", "tarantool", "tarantool-vinyl"}},
		// Flags every store takes leave all as it was.
		{[]string{"--workload", "rw", "--request-type", "WRITE"}, []string{"allot", "allot-mux", "embedded", "mysql", "mysql-myisam", "postgres", "rabbitmq", "redis", "tarantool", "tarantool-vinyl"}},
		{[]string{"--workload", "kv", "--pipeline", "8"}, []string{"allot", "allot-mux", "embedded", "mysql", "mysql-myisam", "postgres", "redis", "tarantool", "tarantool-vinyl"}},
	} {
		args := append(slices.Clone(tc.args), "--stores", "all", "--ops", "200")
		j, err := parseBench(args, io.Discard, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		got := slices.Clone(j.stores)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v runs %v, want %v", args, got, tc.want)
		}
	}
}

// skipReason returns the reason of the "skipping NAME: reason" line of
// text, "" when there is none.
func skipReason(text, name string) string {
	for _, l := range strings.Split(text, "\n") {
		if r, ok := strings.CutPrefix(l, "skipping "+name+": "); ok {
			return r
		}
	}
	return ""
}

// tableRow reports whether the results table in text has a row of store
// name.
func tableRow(text, name string) bool {
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == name {
			return true
		}
	}
	return false
}

// Left out of all, a store gets one line saying why; named explicitly, it
// runs and fails with that very reason (one check decides both).
func TestAudit11SkippedStoreSaysWhyAndExplicitRunAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the peer servers")
	}
	if os.Getenv("ALLOT_BIN") == "" {
		t.Setenv("ALLOT_BIN", servertest.BuildAllot(t))
	}
	for _, tc := range []struct {
		flags []string
		store string
		want  string // in the reason
	}{
		{[]string{"--workload", "rw", "--request-type", "MODIFY", "--ops", "50", "--workers", "2"}, "rabbitmq", "no MODIFY in workload rw"},
		{[]string{"--pipeline", "4", "--ops", "200", "--preset", "hot", "--workers", "2"}, "memory", "--pipeline"},
	} {
		code, out, errOut := runOnServers(t, append(slices.Clone(tc.flags), "--stores", "all", "--quiet")...)
		if code != 0 {
			t.Errorf("%v --stores all: exit %d:\n%s%s", tc.flags, code, out, errOut)
		}
		reason := skipReason(errOut, tc.store)
		if !strings.Contains(reason, tc.want) {
			t.Errorf("%v --stores all: skip line of %s has reason %q, want %q in it:\n%s", tc.flags, tc.store, reason, tc.want, errOut)
			continue
		}
		if strings.Count(errOut, "skipping "+tc.store+":") != 1 {
			t.Errorf("%v --stores all: not one skip line for %s:\n%s", tc.flags, tc.store, errOut)
		}
		if tableRow(out, tc.store) {
			t.Errorf("%v --stores all ran %s:\n%s", tc.flags, tc.store, out)
		}
		code, out, errOut = runOnServers(t, append(slices.Clone(tc.flags), "--stores", tc.store, "--quiet")...)
		if code != 1 || !strings.Contains(out, reason) {
			t.Errorf("%v --stores %s: exit %d, want 1 and the reason %q:\n%s%s", tc.flags, tc.store, code, reason, out, errOut)
		}
	}
}

// The closed-loop bound (fdatasync, round trip) is what a durable
// mutation waits for: it was printed, and put in the JSON, for the
// memory store, which syncs nothing, and for read-only runs.
func TestAudit11BoundOnlyForDurableMutationsOnStoresThatSync(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		bound bool
	}{
		{[]string{"--stores", "memory", "--preset", "hot", "--ops", "200"}, false},
		{[]string{"--stores", "embedded", "--preset", "hot", "--ops", "200"}, true},
		{[]string{"--stores", "embedded", "--workload", "search", "--ops", "50", "--records", "2000"}, false},
		{[]string{"--stores", "embedded", "--workload", "rw", "--request-type", "READ", "--ops", "50"}, false},
		{[]string{"--stores", "embedded", "--workload", "kv", "--request-type", "READ", "--ops", "50", "--lines=false"}, false},
		{[]string{"--stores", "embedded", "--workload", "rw", "--request-type", "WRITE", "--ops", "50"}, true},
		{[]string{"--stores", "embedded", "--workload", "checkout", "--ops", "50"}, true},
	} {
		args := append([]string{"bench", "--workers", "2", "--quiet"}, tc.args...)
		code, out, errOut := runCLI(append(args, "--json")...)
		if code != 0 {
			t.Errorf("%v: exit %d:\n%s%s", args, code, out, errOut)
			continue
		}
		var res map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Errorf("%v: %v\n%s", args, err, out)
			continue
		}
		if _, ok := res["bound"]; ok != tc.bound {
			t.Errorf("%v: JSON has a bound: %v, want %v: %s", args, ok, tc.bound, res["bound"])
		}
		code, out, errOut = runCLI(args...)
		if code != 0 {
			t.Errorf("%v: exit %d:\n%s%s", args, code, out, errOut)
			continue
		}
		if got := strings.Contains(out, "bound (closed loop"); got != tc.bound {
			t.Errorf("%v: bound lines printed: %v, want %v:\n%s", args, got, tc.bound, out)
		}
	}
}
