package kv_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"sync"
	"testing"

	"allot/bench"
	"allot/bench/kv"
	"allot/inventory"
	"allot/store"
)

// memStore is an in-memory record store whose sessions pipeline; drop
// makes it lose every drop-th write it acknowledges: the broken variant
// the checker must catch.
type memStore struct {
	mu     sync.Mutex
	values map[string]int64
	drop   int
	writes int
}

func (m *memStore) Load(context.Context, []inventory.Row) error { return nil }
func (m *memStore) Session(context.Context) (store.Session, error) {
	return nil, errors.New("no inventory")
}
func (m *memStore) Rows(context.Context) ([]inventory.Row, error) { return nil, nil }
func (m *memStore) Close() error                                  { return nil }
func (m *memStore) RWOpen(context.Context, store.RWOptions) (store.RWSpace, error) {
	m.values = map[string]int64{}
	return &memSpace{m}, nil
}

type memSpace struct{ m *memStore }

func (s *memSpace) Info() store.RWInfo { return store.RWInfo{Setting: "memory"} }
func (s *memSpace) Load(ctx context.Context, recs []store.RWRecord) error {
	return (&memSession{s.m}).PipelineWrite(ctx, recs)
}
func (s *memSpace) Session(context.Context) (store.RWSession, error) { return &memSession{s.m}, nil }
func (s *memSpace) Records(context.Context) ([]store.RWRecord, error) {
	var out []store.RWRecord
	for k, v := range s.m.values {
		out = append(out, store.RWRecord{Key: k, Value: v})
	}
	return out, nil
}
func (s *memSpace) Close() error { return nil }

type memSession struct{ m *memStore }

func (s *memSession) Read(context.Context, string) (int64, bool, error) { return 0, false, nil }
func (s *memSession) Write(context.Context, []store.RWRecord) error     { return nil }
func (s *memSession) Modify(context.Context, []string, int64, store.RWModify) (int, error) {
	return 0, nil
}
func (s *memSession) Close() error { return nil }
func (s *memSession) PipelineWrite(_ context.Context, recs []store.RWRecord) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	for _, r := range recs {
		s.m.writes++
		if s.m.drop > 0 && s.m.writes%s.m.drop == 0 {
			continue
		}
		s.m.values[r.Key] = r.Value
	}
	return nil
}
func (s *memSession) PipelineRead(_ context.Context, keys []string, values []int64, found []bool) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	for i, k := range keys {
		values[i], found[i] = s.m.values[k]
	}
	return nil
}

func run(t *testing.T, st store.Store, out *bytes.Buffer, args ...string) *bench.Result {
	t.Helper()
	return runWith(t, st, out, 4, 50000, 32, args...)
}

// runWith runs kv on st from a command line's flags, with workers
// sessions, ops ops and pipeline in flight each.
func runWith(t *testing.T, st store.Store, out *bytes.Buffer, workers, ops, pipeline int, args ...string) *bench.Result {
	t.Helper()
	reg, err := bench.LookupKind("kv")
	if err != nil {
		t.Fatal(err)
	}
	k := reg.New().(*kv.Kind)
	k.Out = out
	fs := flag.NewFlagSet("kv", flag.ContinueOnError)
	k.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: workers, Pipeline: pipeline, Store: "mem"}, Ops: ops, Seed: 1}
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

func TestWritesAndReadsCheck(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{{"--request-type", "WRITE", "--keys", "100000"}, {"--request-type", "WRITE", "--keys", "1000"}, {"--request-type", "READ", "--keys", "1000"}} {
		res := run(t, &memStore{}, &out, args...)
		if !res.Check.OK || res.Ops != 50000 || res.Pipeline != 32 {
			t.Fatalf("%v: check %+v, ops %d, pipeline %d", args, res.Check, res.Ops, res.Pipeline)
		}
	}
}

func TestCheckerCatchesLostWrites(t *testing.T) {
	res := run(t, &memStore{drop: 1000}, &bytes.Buffer{}, "--request-type", "WRITE", "--keys", "100000")
	if res.Check.OK || res.Check.ViolationCount != 50 {
		t.Fatalf("a store that lost 50 acknowledged writes: check %+v", res.Check)
	}
	if !strings.Contains(res.Check.Violations[0], "missing") {
		t.Errorf("violation %q does not say the write is missing", res.Check.Violations[0])
	}
}

func TestLineFormat(t *testing.T) {
	var out bytes.Buffer
	reg, _ := bench.LookupKind("kv")
	k := reg.New().(*kv.Kind)
	k.Out = &out
	fs := flag.NewFlagSet("kv", flag.ContinueOnError)
	k.RegisterFlags(fs)
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 2, Pipeline: 8, Store: "mem", Duration: 1500 * 1e6}, Ops: 1 << 40, Seed: 1}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := k.Run(context.Background(), cfg, &memStore{})
	if err != nil {
		t.Fatal(err)
	}
	lines := res.Extra["per_second"].([]string)
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Requests per second: ") || !strings.Contains(lines[0], ", Responses per second: ") ||
		!strings.Contains(lines[0], ", Pending requests: ") || !strings.HasSuffix(lines[0], " ms") {
		t.Fatalf("lines %q", lines)
	}
	if !strings.Contains(out.String(), "kv mem: Requests per second: ") {
		t.Errorf("printed %q", out.String())
	}
}

func TestKey(t *testing.T) {
	if kv.Key(7) != "k00000007" {
		t.Errorf("Key(7) = %q", kv.Key(7))
	}
}
