package rw_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"allot/bench"
	"allot/store"
)

// wrongSpace is the fake record space with one wrong behaviour switched on.
type wrongSpace struct {
	*fakeSpace
	// blindReads: Read answers "found, 0" without looking, as a cache
	// that misses and returns its zero value would.
	blindReads bool
	// versioned: Modify in RWVersioned mode is a compare-and-set on a
	// version; casNoCompare writes without comparing (lost updates).
	casNoCompare bool
	versions     map[string]int64
	// neverDeliver: a queue whose consumer never gets a message.
	neverDeliver bool
}

// wrongStore opens a wrongSpace around a fresh fakeSpace.
type wrongStore struct {
	fakeStore
	ws *wrongSpace
}

func newWrong(ws wrongSpace) wrongStore {
	ws.fakeSpace = &fakeSpace{queue: ws.neverDeliver}
	ws.versions = map[string]int64{}
	return wrongStore{fakeStore{ws.fakeSpace}, &ws}
}

func (s wrongStore) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	if _, err := s.fakeStore.RWOpen(ctx, opts); err != nil {
		return nil, err
	}
	return s.ws, nil
}

func (w *wrongSpace) Session(context.Context) (store.RWSession, error) { return w, nil }

func (w *wrongSpace) Read(ctx context.Context, key string) (int64, bool, error) {
	switch {
	case w.blindReads:
		return 0, true, nil
	case w.neverDeliver:
		return 0, false, nil
	}
	return w.fakeSpace.Read(ctx, key)
}

func (w *wrongSpace) Modify(ctx context.Context, keys []string, delta int64, mode store.RWModify) (int, error) {
	if mode != store.RWVersioned {
		return w.fakeSpace.Modify(ctx, keys, delta, mode)
	}
	retries := 0
	for _, k := range keys {
		for {
			w.mu.Lock()
			v, ver := w.values[k], w.versions[k]
			w.mu.Unlock()
			runtime.Gosched()
			w.mu.Lock()
			if w.casNoCompare || w.versions[k] == ver {
				w.values[k], w.versions[k] = v+delta, ver+1
				w.mu.Unlock()
				break
			}
			w.mu.Unlock()
			retries++
		}
	}
	return retries, nil
}

// A READ run's reads must be held to the values loaded: a store that
// answers every read "found" with a made-up value must fail, even when
// that value is the one a careless loader would have used (0).
func TestPowerReadsThatDoNotRead(t *testing.T) {
	if res := run(t, newWrong(wrongSpace{}), "--request-type", "READ", "--records", "100"); !res.Check.OK || res.Errors != 0 {
		t.Fatalf("a store that reads: check %+v", res.Check)
	}
	res := run(t, newWrong(wrongSpace{blindReads: true}), "--request-type", "READ", "--records", "100")
	if res.Check.OK || res.Status != bench.StatusCheckFailed {
		t.Fatalf("a store whose reads return 0 without reading passed the check: %+v", res.Check)
	}
	if !strings.Contains(strings.Join(res.Check.Violations, "\n"), "reads returned a value no write made") {
		t.Fatalf("violations do not name the wrong reads: %q", res.Check.Violations)
	}
	// MIXED's readers meet writers: a read below the loaded value is
	// still one no write made.
	res = run(t, newWrong(wrongSpace{blindReads: true}), "--request-type", "MIXED", "--records", "100")
	if res.Check.OK {
		t.Fatalf("MIXED: a store whose reads return 0 without reading passed the check: %+v", res.Check)
	}
}

// --versioned: a compare-and-set that compares loses no update and passes;
// one that does not compare loses updates, which are violations in this
// mode (only MODIFY without a lock may lose them).
func TestPowerVersionedThatDoesNotCompare(t *testing.T) {
	res := run(t, newWrong(wrongSpace{}), "--request-type", "MODIFY", "--versioned", "--records", "4")
	if !res.Check.OK || res.Extra["lost_updates"].(int64) != 0 {
		t.Fatalf("a compare-and-set that compares: check %+v, lost %v", res.Check, res.Extra["lost_updates"])
	}
	if res.ConflictRetries == 0 {
		t.Errorf("8 workers on 4 records never conflicted: the fake does not contend")
	}
	res = run(t, newWrong(wrongSpace{casNoCompare: true}), "--request-type", "MODIFY", "--versioned", "--records", "4")
	if res.Check.OK || res.Status != bench.StatusCheckFailed {
		t.Fatalf("a compare-and-set that does not compare passed the check (lost %v)", res.Extra["lost_updates"])
	}
	if !strings.Contains(res.Check.Violations[0], "acknowledged updates lost") {
		t.Errorf("violation %q does not name the lost updates", res.Check.Violations[0])
	}
}

// A queue READ run whose consumers never got a message measured nothing:
// every message is still in the queue, so none is lost or duplicated,
// and the check must still fail.
func TestPowerQueueThatNeverDelivers(t *testing.T) {
	res := run(t, newWrong(wrongSpace{neverDeliver: true}), "--request-type", "READ")
	if res.Check.OK || res.Status != bench.StatusCheckFailed {
		t.Fatalf("a queue whose consumers got nothing passed the check: %+v, extra %v", res.Check, res.Extra)
	}
	if !strings.Contains(strings.Join(res.Check.Violations, "\n"), "no message was consumed") {
		t.Fatalf("violations do not say nothing was consumed: %q", res.Check.Violations)
	}
}
