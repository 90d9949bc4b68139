package kv_test

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"

	"allot/bench"
	"allot/bench/kv"
	"allot/store"
)

// wrongSession is memStore's session with one wrong behaviour.
type wrongSession struct {
	memSession
	// badRead: every badRead-th key read comes back with the value of
	// the next key, as a store mixing up two keys would.
	badRead int
	reads   int
	// keepFirst: a write to a key that exists is acknowledged and
	// dropped, as an insert-if-absent posing as a set would.
	keepFirst bool
}

type wrongStore struct {
	*memStore
	s *wrongSession
}

func (w wrongStore) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	if _, err := w.memStore.RWOpen(ctx, opts); err != nil {
		return nil, err
	}
	return &wrongSpace{memSpace{w.memStore}, w.s}, nil
}

type wrongSpace struct {
	memSpace
	s *wrongSession
}

func (w *wrongSpace) Session(context.Context) (store.RWSession, error) { return w.s, nil }

func (s *wrongSession) PipelineRead(ctx context.Context, keys []string, values []int64, found []bool) error {
	if err := s.memSession.PipelineRead(ctx, keys, values, found); err != nil {
		return err
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	for i := range keys {
		if s.reads++; s.badRead > 0 && s.reads%s.badRead == 0 {
			values[i]++
		}
	}
	return nil
}

func (s *wrongSession) PipelineWrite(ctx context.Context, recs []store.RWRecord) error {
	if !s.keepFirst {
		return s.memSession.PipelineWrite(ctx, recs)
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	for _, r := range recs {
		if _, ok := s.m.values[r.Key]; !ok {
			s.m.values[r.Key] = r.Value
		}
	}
	return nil
}

func newWrong(s wrongSession) wrongStore {
	m := &memStore{}
	s.memSession = memSession{m}
	return wrongStore{m, &s}
}

// Reads that return another key's value are caught.
func TestPowerReadsOfTheWrongKey(t *testing.T) {
	res := run(t, newWrong(wrongSession{badRead: 100}), &bytes.Buffer{}, "--request-type", "READ", "--keys", "1000")
	if res.Check.OK || res.Check.ViolationCount == 0 || !strings.Contains(res.Check.Violations[0], "reads did not return the loaded value") {
		t.Fatalf("a store answering every 100th read with another key's value: check %+v", res.Check)
	}
}

// Writes cycle over the keys, so each key is written many times; a store
// that keeps the first value and drops every later acknowledged write
// leaves each key a value that was written to it, only long ago. The
// check must see that a later acknowledged write is missing.
func TestPowerOverwritesDropped(t *testing.T) {
	for _, depth := range []int{1, 32} {
		res := runDepth(t, newWrong(wrongSession{}), depth, "--request-type", "WRITE", "--keys", "1000")
		if !res.Check.OK {
			t.Fatalf("pipeline %d: a correct store failed: %+v", depth, res.Check)
		}
		res = runDepth(t, newWrong(wrongSession{keepFirst: true}), depth, "--request-type", "WRITE", "--keys", "1000")
		if res.Check.OK || res.Check.ViolationCount == 0 {
			t.Fatalf("pipeline %d: a store that drops every overwrite passed the check: %+v", depth, res.Check)
		}
		if !strings.Contains(res.Check.Violations[0], "overwritten by") {
			t.Fatalf("pipeline %d: violation %q does not name the lost overwrite", depth, res.Check.Violations[0])
		}
	}
}

// runDepth is run with depth requests in flight per worker.
func runDepth(t *testing.T, st store.Store, depth int, args ...string) *bench.Result {
	t.Helper()
	reg, err := bench.LookupKind("kv")
	if err != nil {
		t.Fatal(err)
	}
	k := reg.New().(*kv.Kind)
	k.Out = &bytes.Buffer{}
	fs := flag.NewFlagSet("kv", flag.ContinueOnError)
	k.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 4, Pipeline: depth, Store: "mem"}, Ops: 50000, Seed: 1}
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
