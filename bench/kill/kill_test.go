package kill

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
)

// crash is how the fake server's crash treats its log of row writes.
type crash int

const (
	// crashKeepAll: every acknowledged write survives (a correct store).
	crashKeepAll crash = iota
	// crashDropTail: the last ops, acknowledged, are lost (a store that
	// acks before its log is durable).
	crashDropTail
	// crashTear: the last multi-row capture keeps its first row write only
	// (a store without atomic multi-row writes).
	crashTear
	// crashReplayTwice: recovery applies the last capture twice.
	crashReplayTwice
)

// write is one row change; op numbers the op it belongs to.
type write struct {
	key   inventory.RowKey
	delta int64
	op    int
}

// fakeServer is a store and its server in one: ops change rows and append
// to a log; a kill throws away state and rebuilds it from the loaded rows
// and what the crash mode keeps of the log.
type fakeServer struct {
	mode crash
	mu   sync.Mutex
	up   bool
	base map[inventory.RowKey]int64
	rows map[inventory.RowKey]int64
	// groups lists each group's rows in warehouse order.
	groups map[inventory.GroupKey][]inventory.RowKey
	log    []write
	ops    int
	calls  atomic.Int64
}

// pace sleeps a millisecond on one call in ten, outside the lock: it sets
// a least length to a round whatever the machine's speed, so a kill 30 to
// 60 ms in lands under load (a fake store with no pause ran a round's
// 10,000 ops per worker in tens of milliseconds here, and a machine twice
// as fast finished every round before its kill).
func (f *fakeServer) pace() {
	if f.calls.Add(1)%10 == 0 {
		time.Sleep(time.Millisecond)
	}
}

var errDown = errors.New("fake: server is down")

func newFakeServer(mode crash) *fakeServer {
	return &fakeServer{mode: mode, up: true, base: map[inventory.RowKey]int64{}, rows: map[inventory.RowKey]int64{}}
}

func (f *fakeServer) Kill(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up = false
	switch f.mode {
	case crashDropTail:
		cut := len(f.log)
		for lost := 0; cut > 0 && lost < 5; lost++ {
			op := f.log[cut-1].op
			for cut > 0 && f.log[cut-1].op == op {
				cut--
			}
		}
		f.log = f.log[:cut]
	case crashTear:
		for i := len(f.log) - 1; i > 0; i-- {
			if f.log[i].op == f.log[i-1].op {
				first := i - 1
				for first > 0 && f.log[first-1].op == f.log[i].op {
					first--
				}
				f.log = f.log[:first+1]
				break
			}
		}
	case crashReplayTwice:
		for i := len(f.log) - 1; i >= 0; i-- {
			if f.log[i].delta < 0 {
				f.log = append(f.log, f.log[i])
				break
			}
		}
	}
	return nil
}

func (f *fakeServer) Start(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows = map[inventory.RowKey]int64{}
	for k, v := range f.base {
		f.rows[k] = v
	}
	for _, w := range f.log {
		f.rows[w.key] += w.delta
	}
	f.up = true
	return nil
}

func (f *fakeServer) open(context.Context) (store.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.up {
		return nil, errDown
	}
	return fakeStore{f}, nil
}

type fakeStore struct{ f *fakeServer }

func (s fakeStore) Load(_ context.Context, rows []inventory.Row) error {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.base, f.rows, f.log = map[inventory.RowKey]int64{}, map[inventory.RowKey]int64{}, nil
	f.groups = map[inventory.GroupKey][]inventory.RowKey{}
	for _, r := range rows {
		f.base[r.Key], f.rows[r.Key] = r.Count, r.Count
		f.groups[r.Key.Group()] = append(f.groups[r.Key.Group()], r.Key)
	}
	for _, keys := range f.groups {
		slices.SortFunc(keys, func(a, b inventory.RowKey) int { return strings.Compare(a.Warehouse, b.Warehouse) })
	}
	return nil
}

func (s fakeStore) Rows(context.Context) ([]inventory.Row, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.up {
		return nil, errDown
	}
	var out []inventory.Row
	for k, c := range f.rows {
		out = append(out, inventory.Row{Key: k, Count: c})
	}
	return out, nil
}

func (s fakeStore) Session(context.Context) (store.Session, error) { return s, nil }
func (s fakeStore) Close() error                                   { return nil }

func (s fakeStore) Capture(_ context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	f := s.f
	f.pace()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.up {
		return inventory.Result{}, errDown
	}
	keys := f.groups[g]
	var total int64
	for _, k := range keys {
		total += f.rows[k]
	}
	if total < n {
		return inventory.Result{Code: inventory.CodeInsufficient}, nil
	}
	f.ops++
	for _, k := range keys {
		if n == 0 {
			break
		}
		take := min(f.rows[k], n)
		if take == 0 {
			continue
		}
		f.rows[k] -= take
		f.log = append(f.log, write{key: k, delta: -take, op: f.ops})
		lines = append(lines, inventory.Line{Warehouse: k.Warehouse, Count: take})
		n -= take
	}
	return inventory.Result{Code: inventory.CodeOK, Lines: lines}, nil
}

func (s fakeStore) Release(_ context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	f := s.f
	f.pace()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.up {
		return inventory.Result{}, errDown
	}
	if _, ok := f.rows[k]; !ok {
		return inventory.Result{Code: inventory.CodeNotFound}, nil
	}
	f.ops++
	f.rows[k] += n
	f.log = append(f.log, write{key: k, delta: n, op: f.ops})
	return inventory.Result{Code: inventory.CodeOK, Count: f.rows[k]}, nil
}

func audit(t *testing.T, mode crash, d store.Durability) *Result {
	t.Helper()
	f := newFakeServer(mode)
	res := Run(context.Background(), Config{
		Store: "fake", Durability: d, Kills: 3, Workers: 4, Seed: 7, OpsMax: 40_000,
		KillAfterMin: 30 * time.Millisecond, KillAfterMax: 60 * time.Millisecond,
		Open: f.open, Server: f,
	})
	if res.Error != "" {
		t.Fatalf("audit: %s", res.Error)
	}
	if res.Kills != 3 || res.Acked == 0 || res.KilledEarly != 0 {
		t.Fatalf("audit ran %d kills (%d of them after every op was sent), %d acked ops", res.Kills, res.KilledEarly, res.Acked)
	}
	return res
}

func TestAuditOfACorrectStoreFindsNothing(t *testing.T) {
	res := audit(t, crashKeepAll, store.DurabilityFsync)
	if res.LostAcked != 0 || res.NeverFine() != 0 || res.RowsMissing != 0 || res.Failed() {
		t.Fatalf("a correct store: %+v", res)
	}
}

// The audit's power: each broken store is caught.
func TestAuditCatchesLostAckedOps(t *testing.T) {
	res := audit(t, crashDropTail, store.DurabilityFsync)
	// Five ops dropped per kill; an op in flight at the kill may be one
	// of them, so at least 4 acked per round.
	if res.LostAcked < 12 || res.LostAcked > 15 || !res.Failed() {
		t.Fatalf("dropping 5 ops per kill: %+v", res)
	}
	if res := audit(t, crashDropTail, store.DurabilityNone); res.Failed() || res.LostAcked == 0 || res.Verdict() != "loses acked ops (as the mode allows)" {
		t.Fatalf("none mode may lose acked ops: %+v", res)
	}
}

func TestAuditCatchesHalfAppliedCaptures(t *testing.T) {
	res := audit(t, crashTear, store.DurabilityWrite)
	if res.HalfApplied != 3 || !res.Failed() {
		t.Fatalf("tearing the last multi-row capture per kill: %+v", res)
	}
}

func TestAuditCatchesADoubleReplay(t *testing.T) {
	res := audit(t, crashReplayTwice, store.DurabilityWrite)
	if res.Corrupt+res.Oversold+res.HalfApplied == 0 || !res.Failed() {
		t.Fatalf("replaying a capture twice: %+v", res)
	}
}

func TestAllocationAndCounts(t *testing.T) {
	got := allocation(7, 3)
	want := []inventory.Line{{Warehouse: "w00", Count: 1}, {Warehouse: "w01", Count: 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("allocation(7, 3) = %v, want %v", got, want)
	}
	c := groupCounts(9)
	if c[0] != 0 || c[1] != 7 || c[2] != 8 {
		t.Fatalf("groupCounts(9) = %v", c)
	}
	for _, tt := range []struct {
		v       int64
		k       int
		between bool
	}{{0, 0, false}, {3, 1, false}, {4, 1, true}, {9, 3, false}, {10, -1, false}, {-1, -1, false}} {
		k, between := prefix([]int64{0, 3, 5, 9}, tt.v)
		if k != tt.k || between != tt.between {
			t.Errorf("prefix(%d) = %d %v, want %d %v", tt.v, k, between, tt.k, tt.between)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Kills: 0}, {Kills: 1, Workers: -1}, {Kills: 1, KillAfterMin: time.Second, KillAfterMax: time.Millisecond}, {Kills: 1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
