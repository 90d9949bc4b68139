package rw_test

import (
	"context"
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

	"allot/bench"
	"allot/bench/rw"
	"allot/bench/rw/rwtest"
	"allot/store"
)

// slowWriteSpace is the fake record space whose modifies each take
// modifyDelay while its reads answer at once: MIXED's readers finish
// their share of the work long before the writers finish theirs.
type slowWriteSpace struct {
	*fakeSpace
	modifyDelay time.Duration
}

type slowWriteStore struct {
	fakeStore
	sw *slowWriteSpace
}

func (s slowWriteStore) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	if _, err := s.fakeStore.RWOpen(ctx, opts); err != nil {
		return nil, err
	}
	return s.sw, nil
}

func (s *slowWriteSpace) Session(context.Context) (store.RWSession, error) { return s, nil }

func (s *slowWriteSpace) Modify(ctx context.Context, keys []string, delta int64, mode store.RWModify) (int, error) {
	time.Sleep(s.modifyDelay)
	return s.fakeSpace.Modify(ctx, keys, delta, mode)
}

// runWith runs rw on st with workers sessions and ops units of work.
func runWith(t *testing.T, st store.Store, workers, ops int, args ...string) *bench.Result {
	t.Helper()
	return rwtest.Run(t, st, store.DurabilityFsync, workers, ops, args...)
}

// MIXED reports a read rate and a write rate so that a lock's cost to
// readers shows. Each must be over the time its own workers worked: with
// readers that answer at once and writers that take 2 ms a call, 200
// reads take a few milliseconds, and a read rate computed over the
// writers' 200 ms would put it at the writers' rate, hiding exactly the
// difference MIXED exists to show (--lock soft against --lock hard).
func TestMixedRatesAreOverEachRolesOwnTime(t *testing.T) {
	st := slowWriteStore{sw: &slowWriteSpace{fakeSpace: &fakeSpace{}, modifyDelay: 2 * time.Millisecond}}
	st.fakeStore = fakeStore{st.sw.fakeSpace}
	res := runWith(t, st, 4, 400, "--request-type", "MIXED", "--read-ratio", "0.5", "--records", "50")
	if !res.Check.OK {
		t.Fatal(res.Check.Violations)
	}
	reads, writes := res.Extra["read_ops_per_sec"].(float64), res.Extra["write_calls_per_sec"].(float64)
	if reads < 10*writes {
		t.Errorf("instant reads beside 2 ms writes: read rate %.0f/s, write rate %.0f/s: the read rate is not over the readers' own time", reads, writes)
	}
	// Two writers of 100 calls of at least 2 ms each: at most 1,000 calls
	// a second.
	if writes > 1100 {
		t.Errorf("write rate %.0f/s, more than two writers of 2 ms calls can make", writes)
	}
}

// offByOneSpace reads record i+1 when asked for record i (the last one
// reads itself): a store that answers from the wrong record.
type offByOneSpace struct{ *fakeSpace }

type offByOneStore struct {
	fakeStore
	ws *offByOneSpace
}

func (s offByOneStore) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	if _, err := s.fakeStore.RWOpen(ctx, opts); err != nil {
		return nil, err
	}
	return s.ws, nil
}

func (s *offByOneSpace) Session(context.Context) (store.RWSession, error) { return s, nil }

func (s *offByOneSpace) Read(ctx context.Context, key string) (int64, bool, error) {
	i, err := strconv.Atoi(strings.TrimPrefix(key, "r"))
	if err != nil {
		return 0, false, err
	}
	if v, found, err := s.fakeSpace.Read(ctx, rw.RecordKey(i+1)); found || err != nil {
		return v, found, err
	}
	return s.fakeSpace.Read(ctx, key)
}

// A MIXED read must be held to the record it names from above too: a
// value beyond the record's loaded value plus every modify issued to it
// so far is no write's. Reading the next record's value (loaded one
// higher, with few modifies on 1000 records) must fail the check.
func TestMixedReadsOfAnotherRecordFail(t *testing.T) {
	ok := runWith(t, fakeStore{&fakeSpace{}}, 4, 2000, "--request-type", "MIXED", "--records", "1000")
	if !ok.Check.OK {
		t.Fatalf("a store that reads the right record: %v", ok.Check.Violations)
	}
	st := offByOneStore{ws: &offByOneSpace{&fakeSpace{}}}
	st.fakeStore = fakeStore{st.ws.fakeSpace}
	res := runWith(t, st, 4, 2000, "--request-type", "MIXED", "--records", "1000")
	if res.Check.OK {
		t.Fatalf("MIXED: a store whose reads answer from the next record passed the check (reads %v)", res.Extra["reads"])
	}
	if !strings.Contains(strings.Join(res.Check.Violations, "\n"), "reads returned a value no write made") {
		t.Errorf("violations do not name the wrong reads: %q", res.Check.Violations)
	}
}

// rw runs one call at a time per worker: a --pipeline it would ignore
// (the result and a sweep's points would name a depth never run) is
// refused, naming the flag.
func TestValidateRefusesPipeline(t *testing.T) {
	reg, _ := bench.LookupKind("rw")
	k := reg.New()
	fs := flag.NewFlagSet("rw", flag.ContinueOnError)
	k.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := k.Validate(bench.KindConfig{RunConfig: bench.RunConfig{Pipeline: 1}}); err != nil {
		t.Fatalf("--pipeline 1: %v", err)
	}
	err := k.Validate(bench.KindConfig{RunConfig: bench.RunConfig{Pipeline: 8}})
	if err == nil || !strings.Contains(err.Error(), "pipeline") {
		t.Fatalf("--pipeline 8: error %v, want one naming --pipeline", err)
	}
}
