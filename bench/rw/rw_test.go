package rw_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"allot/bench"
	"allot/bench/rw"
	"allot/inventory"
	"allot/store"
)

// fakeStore is an in-memory record store. Its unlocked modify yields
// between the read and the write, so that concurrent modifies lose
// updates as a real datastore's do; broken makes the locked modify take
// that path too: the deliberately wrong variant the checker must catch.
type fakeSpace struct {
	mu      sync.Mutex
	values  map[string]int64
	broken  bool
	queue   bool
	dropped int // a queue drops every dropped-th publish (0: none)
	sent    int
	msgs    []store.RWRecord
}

// fakeStore is the store.Store around a fakeSpace.
type fakeStore struct{ sp *fakeSpace }

func (f fakeStore) Load(context.Context, []inventory.Row) error { return nil }
func (f fakeStore) Session(context.Context) (store.Session, error) {
	return nil, errors.New("no inventory")
}
func (f fakeStore) Rows(context.Context) ([]inventory.Row, error) { return nil, nil }
func (f fakeStore) Close() error                                  { return nil }

func (f fakeStore) RWOpen(_ context.Context, opts store.RWOptions) (store.RWSpace, error) {
	f.sp.values = map[string]int64{}
	return f.sp, nil
}
func (f *fakeSpace) Info() store.RWInfo { return store.RWInfo{Setting: "fake", Queue: f.queue} }
func (f *fakeSpace) Load(_ context.Context, recs []store.RWRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		if f.queue {
			f.msgs = append(f.msgs, r)
		} else {
			f.values[r.Key] = r.Value
		}
	}
	return nil
}
func (f *fakeSpace) Session(context.Context) (store.RWSession, error) { return f, nil }
func (f *fakeSpace) Close() error                                     { return nil }
func (f *fakeSpace) Records(context.Context) ([]store.RWRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queue {
		out := f.msgs
		f.msgs = nil
		return out, nil
	}
	var out []store.RWRecord
	for k, v := range f.values {
		out = append(out, store.RWRecord{Key: k, Value: v})
	}
	return out, nil
}
func (f *fakeSpace) Read(_ context.Context, key string) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queue {
		if len(f.msgs) == 0 {
			return 0, false, nil
		}
		m := f.msgs[0]
		f.msgs = f.msgs[1:]
		return m.Value, true, nil
	}
	v, ok := f.values[key]
	return v, ok, nil
}
func (f *fakeSpace) Write(_ context.Context, recs []store.RWRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		if f.queue {
			f.sent++
			if f.dropped > 0 && f.sent%f.dropped == 0 {
				continue
			}
			f.msgs = append(f.msgs, r)
			continue
		}
		if _, ok := f.values[r.Key]; ok {
			return fmt.Errorf("%s exists", r.Key)
		}
		f.values[r.Key] = r.Value
	}
	return nil
}
func (f *fakeSpace) Modify(_ context.Context, keys []string, delta int64, mode store.RWModify) (int, error) {
	for _, k := range keys {
		if mode == store.RWLocked && !f.broken {
			f.mu.Lock()
			f.values[k] += delta
			f.mu.Unlock()
			continue
		}
		f.mu.Lock()
		v := f.values[k]
		f.mu.Unlock()
		runtime.Gosched()
		f.mu.Lock()
		f.values[k] = v + delta
		f.mu.Unlock()
	}
	return 0, nil
}

func run(t *testing.T, st store.Store, args ...string) *bench.Result {
	t.Helper()
	reg, err := bench.LookupKind("rw")
	if err != nil {
		t.Fatal(err)
	}
	k := reg.New()
	fs := flag.NewFlagSet("rw", flag.ContinueOnError)
	k.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 8, Store: "fake", Durability: store.DurabilityFsync}, Ops: 20000, Seed: 1}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	res, err := k.Run(context.Background(), cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestModifyWithoutLockCountsLostUpdatesAndLockedLosesNone(t *testing.T) {
	res := run(t, fakeStore{&fakeSpace{}}, "--request-type", "MODIFY", "--records", "4")
	if !res.Check.OK {
		t.Fatalf("MODIFY: lost updates are counted, not violations: %v", res.Check.Violations)
	}
	if res.Extra["lost_updates"].(int64) == 0 {
		t.Errorf("MODIFY without a lock on 8 workers and 4 records lost no update: the fake or the tally is wrong")
	}
	res = run(t, fakeStore{&fakeSpace{}}, "--request-type", "MODIFY_LOCKED", "--records", "4")
	if !res.Check.OK || res.Extra["lost_updates"].(int64) != 0 {
		t.Fatalf("MODIFY_LOCKED: check %v, lost %v", res.Check, res.Extra["lost_updates"])
	}
	if res.Ops != 20000 || res.Extra["updates_acknowledged"].(int64) != 20000 {
		t.Errorf("ops %d, acknowledged %v, want 20000 each", res.Ops, res.Extra["updates_acknowledged"])
	}
}

func TestCheckerCatchesALockThatDoesNotLock(t *testing.T) {
	res := run(t, fakeStore{&fakeSpace{broken: true}}, "--request-type", "MODIFY_LOCKED", "--records", "4")
	if res.Check.OK || res.Status != bench.StatusCheckFailed {
		t.Fatalf("a locked modify that loses updates passed the check: %+v", res.Check)
	}
	if !strings.Contains(res.Check.Violations[0], "acknowledged updates lost") {
		t.Errorf("violation %q does not name the lost updates", res.Check.Violations[0])
	}
}

func TestMixedReportsReadsAndWritesApart(t *testing.T) {
	res := run(t, fakeStore{&fakeSpace{}}, "--request-type", "MIXED", "--read-ratio", "0.8", "--records", "50", "--transactional", "--batch", "3")
	if !res.Check.OK {
		t.Fatal(res.Check.Violations)
	}
	if _, ok := res.Extra["read_ops_per_sec"]; !ok {
		t.Errorf("no read rate in %v", res.Extra)
	}
	if _, ok := res.Extra["write_calls_per_sec"]; !ok {
		t.Errorf("no write rate in %v", res.Extra)
	}
	if res.Extra["readers"] != 6 || res.Extra["writers"] != 2 {
		t.Errorf("8 workers at read ratio 0.8: %v readers, %v writers, want 6 and 2", res.Extra["readers"], res.Extra["writers"])
	}
}

func TestWriteChecksEveryInsert(t *testing.T) {
	res := run(t, fakeStore{&fakeSpace{}}, "--request-type", "WRITE", "--transactional")
	if !res.Check.OK || res.Extra["inserts_acknowledged"].(int64) != 20000 {
		t.Fatalf("check %v, extra %v", res.Check, res.Extra)
	}
}

func TestQueueCountsConfirmedAndConsumed(t *testing.T) {
	res := run(t, fakeStore{&fakeSpace{queue: true}}, "--request-type", "READ")
	if !res.Check.OK || res.Extra["consumed"].(int64) != 20000 {
		t.Fatalf("READ: check %v, extra %v", res.Check, res.Extra)
	}
	res = run(t, fakeStore{&fakeSpace{queue: true}}, "--request-type", "WRITE")
	if !res.Check.OK || res.Extra["published"].(int64) != 20000 {
		t.Fatalf("WRITE: check %v, extra %v", res.Check, res.Extra)
	}
	// A broker that drops confirmed messages fails the check...
	res = run(t, fakeStore{&fakeSpace{queue: true, dropped: 100}}, "--request-type", "WRITE")
	if res.Check.OK || res.Check.ViolationCount != 200 {
		t.Fatalf("dropped confirmed messages: check %+v", res.Check)
	}
	// ...but fire-and-forget promised nothing: counted, not a violation.
	res = run(t, fakeStore{&fakeSpace{queue: true, dropped: 100}}, "--request-type", "WRITE", "--confirm=false")
	if !res.Check.OK || res.Extra["unconfirmed_missing"].(int64) != 200 {
		t.Fatalf("fire-and-forget: check %+v, extra %v", res.Check, res.Extra)
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	reg, _ := bench.LookupKind("rw")
	for _, args := range [][]string{
		{"--request-type", "UPSERT"},
		{"--lock", "medium"},
		{"--versioned", "--request-type", "READ"},
		{"--read-ratio", "1.5"},
		{"--records", "0"},
	} {
		k := reg.New()
		fs := flag.NewFlagSet("rw", flag.ContinueOnError)
		k.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		err := k.Validate(bench.KindConfig{})
		if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: error %v does not name the flag", args, err)
		}
	}
}

func TestKeyString(t *testing.T) {
	if got := rw.RecordKey(42); got != "r0000042" {
		t.Errorf("RecordKey(42) = %q", got)
	}
}
