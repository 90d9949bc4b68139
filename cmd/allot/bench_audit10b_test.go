package main

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"allot/bench"
	"allot/server/servertest"
	"allot/store"
)

// `--stores all` ran every registered store whatever the workload, so
// that `allot bench --stores all --preset hot` always failed on dtm
// (order workload only) and rabbitmq (rw only): all is every store that
// runs the chosen workload, but the naive-* controls and the stores that
// need --addr.
func TestAudit10bStoresAllRunsOnlyStoresOfTheWorkload(t *testing.T) {
	// What each store runs, as the runs on the shared servers showed:
	// memory has no records, catalog or checkout; MyISAM has no
	// transactions for holds and orders; dtm runs orders only; rabbitmq
	// holds messages, not rows.
	every := []string{"allot", "allot-mux", "embedded", "mysql", "postgres", "redis", "tarantool", "tarantool-vinyl"}
	want := map[string][]string{
		bench.WorkloadDefault: append(slices.Clone(every), "memory", "mysql-myisam"),
		"search":              append(slices.Clone(every), "mysql-myisam"),
		"checkout":            slices.Clone(every),
		"order":               append(slices.Clone(every), "dtm"),
		"rw":                  append(slices.Clone(every), "mysql-myisam", "rabbitmq"),
		"kv":                  append(slices.Clone(every), "mysql-myisam"),
	}
	kinds := []string{bench.WorkloadDefault}
	for _, k := range bench.Kinds() {
		kinds = append(kinds, k.Name)
	}
	for _, w := range kinds {
		if _, ok := want[w]; !ok {
			t.Errorf("workload %s: no expectation in this test; add one", w)
			continue
		}
		j, err := parseBench([]string{"--workload", w, "--stores", "all", "--ops", "200"}, io.Discard, io.Discard)
		if err != nil {
			t.Errorf("--workload %s --stores all: %v", w, err)
			continue
		}
		got := slices.Clone(j.stores)
		slices.Sort(got)
		exp := want[w]
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			t.Errorf("--workload %s --stores all runs %v, want %v", w, got, exp)
		}
	}
}

// A store named explicitly runs whatever it declares: the run then fails
// saying why, as before (checked on the servers in the test below).
func TestAudit10bStoresNamedExplicitlyAreKept(t *testing.T) {
	for _, tc := range [][]string{
		{"--stores", "dtm,rabbitmq", "--preset", "hot"},
		{"--workload", "search", "--stores", "memory"},
		{"--workload", "kv", "--stores", "rabbitmq"},
	} {
		j, err := parseBench(tc, io.Discard, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tc, err)
			continue
		}
		if want := strings.Split(tc[slices.Index(tc, "--stores")+1], ","); !slices.Equal(j.stores, want) {
			t.Errorf("%v: stores %v, want %v", tc, j.stores, want)
		}
	}
}

// Every workload a registration names exists: a misspelt name would
// silently leave the store out of --stores all.
func TestAudit10bRegisteredWorkloadsExist(t *testing.T) {
	for _, r := range store.Registered() {
		for _, w := range r.Workloads {
			if w == bench.WorkloadDefault {
				continue
			}
			if _, err := bench.LookupKind(w); err != nil {
				t.Errorf("store %s declares workload %q: %v", r.Name, w, err)
			}
		}
	}
}

// runOnServers runs the bench and skips the test when the store's server
// is not reachable (outside CI).
func runOnServers(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	code, out, errOut := runCLI(append([]string{"bench"}, args...)...)
	if strings.Contains(out+errOut, "not reachable") || strings.Contains(out+errOut, "SERVER DOWN") {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a server is down: %s%s", out, errOut)
		}
		t.Skipf("a server is down (allot services up): %s", errOut)
	}
	return code, out, errOut
}

// The durable bound: a server store with no PING said "no round trip
// (in-process)"; rabbitmq, whose sessions hold no inventory, printed
// "measuring the bound: ... a queue holds messages" because the round
// trip was timed on inventory sessions it cannot open.
func TestAudit10bBoundOnServerStoresWithoutPing(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the peer servers")
	}
	// WRITE: a read-only run has no bound (TestAudit11BoundOnlyForDurableMutationsOnStoresThatSync).
	code, out, errOut := runOnServers(t, "--workload", "rw", "--request-type", "WRITE", "--stores", "rabbitmq,postgres", "--ops", "50", "--workers", "2", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if strings.Contains(errOut, "measuring the bound") {
		t.Errorf("stderr: %s", errOut)
	}
	for _, name := range []string{"rabbitmq", "postgres"} {
		line := lineOf(out, "  "+name+", rw/WRITE, fsync")
		if line == "" || strings.Contains(line, "in-process") || !strings.Contains(line, "round trip not measured") {
			t.Errorf("%s's bound line %q; want the round trip not measured (no PING), not in-process\n%s", name, line, out)
		}
	}
}

// Explicitly named, a store that cannot run the workload still fails
// clearly, and --stores all runs the reservation workload on every store
// that can.
func TestAudit10bStoresAllOnServers(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the peer servers")
	}
	if os.Getenv("ALLOT_BIN") == "" {
		t.Setenv("ALLOT_BIN", servertest.BuildAllot(t))
	}
	code, out, errOut := runOnServers(t, "--stores", "all", "--ops", "200", "--preset", "hot", "--workers", "4", "--quiet")
	if code != 0 {
		t.Fatalf("--stores all --preset hot: exit %d: %s%s", code, out, errOut)
	}
	if strings.Contains(out, "dtm") || strings.Contains(out, "rabbitmq") {
		t.Errorf("--stores all ran dtm or rabbitmq:\n%s", out)
	}
	if l := lineOf(out, "  embedded, hot, fsync"); !strings.Contains(l, "no round trip (in-process)") {
		t.Errorf("embedded's bound line %q, want in-process", l)
	}
	code, out, errOut = runOnServers(t, "--stores", "rabbitmq", "--ops", "50", "--preset", "hot", "--quiet")
	if code != 1 || !strings.Contains(out, "a queue holds messages, not inventory rows") || strings.Contains(errOut, "measuring the bound") {
		t.Errorf("--stores rabbitmq (ims): exit %d, want 1 naming why once:\n%s%s", code, out, errOut)
	}
}

// lineOf returns the bound line of text that starts with prefix.
func lineOf(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, "fdatasync p50") {
			return l
		}
	}
	return ""
}

// The in-process stores' declarations match what they implement: memory
// (ims only) has no records, catalog, holds or orders; embedded (every
// workload) has them all.
func TestAudit10bInProcessDeclarationsMatchCapabilities(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"memory", "embedded"} {
		reg, err := store.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		st, err := store.Open(ctx, name, store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		se, err := st.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, rw := st.(store.RWStore)
		_, search := st.(store.Searcher)
		_, searchSession := se.(store.SearchSession)
		_, checkout := se.(store.Checkouter)
		_, order := se.(store.Orderer)
		for w, has := range map[string]bool{
			"rw": rw, "kv": rw, "search": search && searchSession, "checkout": checkout, "order": order,
		} {
			if reg.Runs(w) != has {
				t.Errorf("%s: declared to run %s: %v; implements it: %v", name, w, reg.Runs(w), has)
			}
		}
		se.Close()
		st.Close()
	}
}
