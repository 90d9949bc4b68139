package kv_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"allot/bench"
	"allot/bench/kv"
	"allot/store"
)

// failingStore is memStore whose write batch holding op failOp fails
// without writing anything (the store said no, nothing was applied), and
// whose write of op dropOp is acknowledged and not applied (-1: none).
type failingStore struct {
	*memStore
	failOp, dropOp int64
}

func (f failingStore) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	sp, err := f.memStore.RWOpen(ctx, opts)
	if err != nil {
		return nil, err
	}
	return failingSpace{sp.(*memSpace), f}, nil
}

type failingSpace struct {
	*memSpace
	f failingStore
}

func (s failingSpace) Session(context.Context) (store.RWSession, error) {
	return failingSession{&memSession{s.m}, s.f}, nil
}

type failingSession struct {
	*memSession
	f failingStore
}

func (s failingSession) PipelineWrite(ctx context.Context, recs []store.RWRecord) error {
	kept := make([]store.RWRecord, 0, len(recs))
	for _, r := range recs {
		switch r.Value {
		case s.f.failOp:
			return errors.New("refused")
		case s.f.dropOp:
		default:
			kept = append(kept, r)
		}
	}
	return s.memSession.PipelineWrite(ctx, kept)
}

func runKV(t *testing.T, st store.Store, ops, pipeline int, args ...string) *bench.Result {
	t.Helper()
	return runWith(t, st, &bytes.Buffer{}, 2, ops, pipeline, args...)
}

// 1500 writes over 1000 keys: keys 0..499 are written twice, 500..999
// once. The batch of ops 700..709 fails and writes nothing, so keys
// 700..709 were never acknowledged: their absence is no lost write. The
// run has errors, and a check that passes.
func TestFailedOnlyWriteOfAKeyIsNoViolation(t *testing.T) {
	res := runKV(t, failingStore{&memStore{}, 700, -1}, 1500, 10, "--request-type", "WRITE", "--keys", "1000")
	if res.Errors != 1 {
		t.Fatalf("errors %d, want the one failed batch", res.Errors)
	}
	if !res.Check.OK {
		t.Fatalf("keys whose one write failed are reported lost: %+v", res.Check)
	}
	// Key 200's first write (op 200) fails, its second (op 1200) is
	// acknowledged and dropped: that one was lost.
	res = runKV(t, failingStore{&memStore{}, 200, 1200}, 1500, 10, "--request-type", "WRITE", "--keys", "1000")
	if res.Check.OK || !strings.Contains(strings.Join(res.Check.Violations, "\n"), "acknowledged write of key "+kv.Key(200)+" is missing") {
		t.Fatalf("an acknowledged write of key 200 was dropped: %+v", res.Check)
	}
}
