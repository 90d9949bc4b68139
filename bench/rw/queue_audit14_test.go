package rw_test

import (
	"context"
	"strings"
	"testing"

	"allot/bench"
	"allot/store"
)

// inventingSpace is the fake queue with messages of its own: every
// inventEvery-th consumer read gets a body no message had (without
// taking one), and the queue read back after the run holds extra
// messages (made up, or a published id with another body).
type inventingSpace struct {
	*fakeSpace
	inventEvery int
	extra       []store.RWRecord
	reads       int
}

type inventingStore struct {
	fakeStore
	sp *inventingSpace
}

func newInventing(sp inventingSpace) inventingStore {
	sp.fakeSpace = &fakeSpace{queue: true}
	return inventingStore{fakeStore{sp.fakeSpace}, &sp}
}

func (s inventingStore) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	if _, err := s.fakeStore.RWOpen(ctx, opts); err != nil {
		return nil, err
	}
	return s.sp, nil
}

func (s *inventingSpace) Session(context.Context) (store.RWSession, error) { return s, nil }

func (s *inventingSpace) Read(ctx context.Context, key string) (int64, bool, error) {
	s.mu.Lock()
	s.reads++
	invent := s.inventEvery > 0 && s.reads%s.inventEvery == 0
	s.mu.Unlock()
	if invent {
		return 1 << 40, true, nil
	}
	return s.fakeSpace.Read(ctx, key)
}

func (s *inventingSpace) Records(ctx context.Context) ([]store.RWRecord, error) {
	out, err := s.fakeSpace.Records(ctx)
	return append(out, s.extra...), err
}

func violationsMention(t *testing.T, res *bench.Result, want string) {
	t.Helper()
	if res.Check.OK || res.Status != bench.StatusCheckFailed {
		t.Fatalf("check passed: %+v, extra %v", res.Check, res.Extra)
	}
	if !strings.Contains(strings.Join(res.Check.Violations, "\n"), want) {
		t.Fatalf("no violation mentions %q: %q", want, res.Check.Violations)
	}
}

// A queue WRITE run must find in the queue only messages its workers
// published, each with the body it was published with: a broker that
// makes a message up (a new id, or a published id with another body)
// fails the check, and one that keeps exactly what was published passes.
func TestAudit14QueueWriteFlagsMessagesNobodyPublished(t *testing.T) {
	if res := run(t, newInventing(inventingSpace{}), "--request-type", "WRITE"); !res.Check.OK {
		t.Fatalf("a queue that keeps what was published: %+v", res.Check)
	}
	res := run(t, newInventing(inventingSpace{extra: []store.RWRecord{{Key: "w9999-000000000", Value: 1}}}), "--request-type", "WRITE")
	violationsMention(t, res, "no worker published it")
	// Worker 0's first publish is w0000-000000000 with body 1. One
	// worker: of eight, worker 0 may get no work at all (the others can
	// take all of it before it is scheduled, as on GOMAXPROCS=1 they do).
	res = runWith(t, newInventing(inventingSpace{extra: []store.RWRecord{{Key: "w0000-000000000x", Value: 1}, {Key: "w0000-000000000", Value: 99}}}), 1, 20000, "--request-type", "WRITE")
	violationsMention(t, res, "published with 1")
	if res.Check.ViolationCount != 3 { // the made-up id, the other body, and that id twice
		t.Fatalf("%d violations, want 3: %q", res.Check.ViolationCount, res.Check.Violations)
	}
}

// A queue READ run consumes the loaded messages: a consumer handed a body
// no loaded message had, or a message left in the queue that was never
// loaded, fails the check.
func TestAudit14QueueReadFlagsMessagesNobodyLoaded(t *testing.T) {
	res := run(t, newInventing(inventingSpace{inventEvery: 500}), "--request-type", "READ")
	violationsMention(t, res, "which no loaded message had")
	res = run(t, newInventing(inventingSpace{extra: []store.RWRecord{{Key: "m999999999", Value: 1 << 40}}}), "--request-type", "READ")
	violationsMention(t, res, "was never loaded")
}
