package rw_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"allot/bench"
	"allot/bench/rw"
	"allot/store"
)

// brokenSpace is the fake record space (fakeSpace: a correct store, whose
// locked modify locks) with one wrong behaviour switched on by name; each
// is one property the rw checker claims to prove.
type brokenSpace struct {
	*fakeSpace
	broken string

	mu      sync.Mutex
	initial map[string]int64 // values as loaded: what a stale read answers
	calls   int
}

type brokenStore struct {
	fakeStore
	bs *brokenSpace
}

func newBroken(broken string) brokenStore {
	bs := &brokenSpace{fakeSpace: &fakeSpace{}, broken: broken, initial: map[string]int64{}}
	return brokenStore{fakeStore{bs.fakeSpace}, bs}
}

func (s brokenStore) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	if _, err := s.fakeStore.RWOpen(ctx, opts); err != nil {
		return nil, err
	}
	return s.bs, nil
}

func (b *brokenSpace) Session(context.Context) (store.RWSession, error) { return b, nil }

// nth reports whether this is the every-th call of the broken behaviour.
func (b *brokenSpace) nth(every int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	return b.calls%every == 0
}

func (b *brokenSpace) Load(ctx context.Context, recs []store.RWRecord) error {
	for _, r := range recs {
		b.initial[r.Key] = r.Value
	}
	return b.fakeSpace.Load(ctx, recs)
}

func (b *brokenSpace) Read(ctx context.Context, key string) (int64, bool, error) {
	switch b.broken {
	case "stale-reads":
		// A cache that is never invalidated: every read answers the
		// value the record was loaded with, whatever was written since.
		v, ok := b.initial[key]
		return v, ok, nil
	case "reads-not-found":
		return 0, false, nil
	case "read-errors":
		if b.nth(5) {
			return 0, false, errors.New("read failed")
		}
	}
	return b.fakeSpace.Read(ctx, key)
}

func (b *brokenSpace) Write(ctx context.Context, recs []store.RWRecord) error {
	switch b.broken {
	case "lose-insert":
		if b.nth(100) {
			return nil // acknowledged, never stored
		}
	case "wrong-insert-value":
		if b.nth(100) {
			recs = append([]store.RWRecord(nil), recs...)
			recs[0].Value += 1000
		}
	case "failed-insert-wrong-value":
		if b.nth(100) {
			// The call fails, but its record was stored with a value
			// no worker sent.
			recs = append([]store.RWRecord(nil), recs...)
			recs[0].Value += 1000
			if err := b.fakeSpace.Write(ctx, recs); err != nil {
				return err
			}
			return errors.New("write timed out")
		}
	}
	return b.fakeSpace.Write(ctx, recs)
}

func (b *brokenSpace) Modify(ctx context.Context, keys []string, delta int64, mode store.RWModify) (int, error) {
	switch b.broken {
	case "double-apply":
		if b.nth(50) {
			if _, err := b.fakeSpace.Modify(ctx, keys, delta, mode); err != nil {
				return 0, err
			}
		}
	case "wrong-record":
		if b.nth(50) {
			i, _ := strconv.Atoi(strings.TrimPrefix(keys[0], "r"))
			keys = []string{rw.RecordKey((i + 1) % 4)}
		}
	case "modify-errors":
		// Every 7th call fails: half of them after applying, half before.
		if b.nth(7) {
			b.mu.Lock()
			applied := b.calls%2 == 0
			b.mu.Unlock()
			if applied {
				if _, err := b.fakeSpace.Modify(ctx, keys, delta, mode); err != nil {
					return 0, err
				}
			}
			return 0, errors.New("modify timed out")
		}
	}
	return b.fakeSpace.Modify(ctx, keys, delta, mode)
}

func (b *brokenSpace) Records(ctx context.Context) ([]store.RWRecord, error) {
	recs, err := b.fakeSpace.Records(ctx)
	if err != nil || len(recs) == 0 {
		return recs, err
	}
	switch b.broken {
	case "drop-record":
		recs = recs[1:]
	case "extra-record":
		recs = append(recs, store.RWRecord{Key: "zz-from-nowhere", Value: 1})
	case "dup-record":
		recs = append(recs, recs[0])
	}
	return recs, nil
}

// Every property the rw checker claims fails the check when the store
// breaks it, with a violation that names it; the correct fake passes the
// same run.
func TestAudit17CheckerCatchesEveryBrokenProperty(t *testing.T) {
	cases := []struct {
		broken  string
		args    []string
		want    string
		workers int // 0: 8
	}{
		// MIXED's reads must see every modify acknowledged before they
		// began. A stale read (a cache never invalidated) answers the
		// loaded value forever. One worker draws reads and modifies in
		// turn from its seed: reads that follow acknowledged modifies of
		// their record, whatever the scheduler does.
		{"stale-reads", []string{"--request-type", "MIXED", "--records", "4"}, "stale reads", 1},
		{"stale-reads", []string{"--request-type", "MIXED", "--records", "4", "--lock", "soft"}, "stale reads", 1},
		{"reads-not-found", []string{"--request-type", "READ"}, "did not find their record", 0},
		{"reads-not-found", []string{"--request-type", "MIXED", "--records", "4"}, "did not find their record", 0},
		{"double-apply", []string{"--request-type", "MODIFY_LOCKED", "--records", "4"}, "more than the", 0},
		{"wrong-record", []string{"--request-type", "MODIFY_LOCKED", "--records", "4"}, "acknowledged updates lost", 0},
		{"drop-record", []string{"--request-type", "MODIFY_LOCKED", "--records", "4"}, "is missing", 0},
		{"extra-record", []string{"--request-type", "MODIFY_LOCKED", "--records", "4"}, "records read back", 0},
		{"dup-record", []string{"--request-type", "READ"}, "read back twice", 0},
		{"lose-insert", []string{"--request-type", "WRITE"}, "acknowledged insert", 0},
		{"wrong-insert-value", []string{"--request-type", "WRITE"}, ": value", 0},
		// A failed insert may or may not be there; if it is, it must
		// hold the value sent.
		{"failed-insert-wrong-value", []string{"--request-type", "WRITE"}, "its call failed", 0},
	}
	for _, c := range cases {
		t.Run(c.broken+"/"+strings.Join(c.args, " "), func(t *testing.T) {
			workers := c.workers
			if workers == 0 {
				workers = 8
			}
			if res := runWith(t, newBroken(""), workers, 20000, c.args...); !res.Check.OK || res.Errors != 0 {
				t.Fatalf("the correct store: check %+v, errors %d", res.Check, res.Errors)
			}
			res := runWith(t, newBroken(c.broken), workers, 20000, c.args...)
			if res.Check.OK || res.Status != bench.StatusCheckFailed {
				t.Fatalf("the check passed a store with %s: %+v, extra %v", c.broken, res.Check, res.Extra)
			}
			if all := strings.Join(res.Check.Violations, "\n"); !strings.Contains(all, c.want) {
				t.Errorf("violations do not name %q: %q", c.want, res.Check.Violations)
			}
		})
	}
}

// MODIFY without a lock: an update applied twice is a violation too. With
// one worker no update is lost, so nothing hides it; under concurrency
// the lost updates it is netted against can (the final value is all the
// checker sees: lost_updates is net of updates applied twice).
func TestAudit17UnlockedDoubleApplyFails(t *testing.T) {
	args := []string{"--request-type", "MODIFY", "--records", "4"}
	if res := runWith(t, newBroken(""), 1, 2000, args...); !res.Check.OK {
		t.Fatalf("the correct store: %v", res.Check.Violations)
	}
	res := runWith(t, newBroken("double-apply"), 1, 2000, args...)
	if res.Check.OK || !strings.Contains(strings.Join(res.Check.Violations, "\n"), "more than the") {
		t.Fatalf("an unlocked modify applied twice passed: %+v", res.Check)
	}
}

// Failed calls are errors, not successes: their updates are "maybe
// applied" (the check passes whether they applied or not), they are left
// out of the acknowledged updates and the reads, and every unit of work
// is still one op.
func TestAudit17FailedCallsCountedAsErrors(t *testing.T) {
	res := run(t, newBroken("modify-errors"), "--request-type", "MODIFY_LOCKED", "--records", "4")
	if !res.Check.OK {
		t.Fatalf("failed modifies, applied or not, failed the check: %v", res.Check.Violations)
	}
	if res.Errors == 0 || res.Ops != 20000 {
		t.Fatalf("errors %d, ops %d: want some errors among 20000 ops", res.Errors, res.Ops)
	}
	if acked := res.Extra["updates_acknowledged"].(int64); acked != 20000-res.Errors {
		t.Errorf("acknowledged %d updates, want 20000 less the %d errors", acked, res.Errors)
	}
	res = run(t, newBroken("read-errors"), "--request-type", "READ")
	if !res.Check.OK || res.Errors != 4000 || res.Extra["reads"].(int64) != 16000 || res.Ops != 20000 {
		t.Fatalf("every 5th of 20000 reads failing: check %+v, errors %d, reads %v, ops %d", res.Check, res.Errors, res.Extra["reads"], res.Ops)
	}
}

// Edge cases of the work split: one worker doing both of MIXED's roles,
// fewer ops than workers, and one op shared by a reader and a writer.
func TestAudit17EdgeCases(t *testing.T) {
	for _, c := range []struct {
		workers, ops int
		args         []string
	}{
		{1, 500, []string{"--request-type", "MIXED", "--records", "4"}},
		{8, 3, []string{"--request-type", "MIXED", "--records", "4"}},
		{2, 1, []string{"--request-type", "MIXED", "--records", "1"}},
		{8, 3, []string{"--request-type", "MODIFY_LOCKED", "--records", "1"}},
		{8, 3, []string{"--request-type", "WRITE", "--transactional", "--batch", "10"}},
		{1, 1, []string{"--request-type", "READ", "--records", "1"}},
	} {
		res := runWith(t, newBroken(""), c.workers, c.ops, c.args...)
		if !res.Check.OK || res.Errors != 0 || res.Ops != int64(c.ops) {
			t.Errorf("%d workers, %d ops, %v: check %+v, errors %d, ops %d", c.workers, c.ops, c.args, res.Check, res.Errors, res.Ops)
		}
	}
}
