package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/changes"
	"allot/journal"
	"allot/vfs"
)

// holdSegmentFS holds every Sync of the file that is now named hold
// (followed through renames: a segment is created as the spare and renamed)
// until release is closed, so that a test can cut the power while a full
// segment's background sync (the journal's retirement of it, in write and
// none modes) has not run.
type holdSegmentFS struct {
	vfs.FS
	mu      sync.Mutex
	names   map[*holdSegmentFile]string
	hold    string
	release chan struct{}
}

func newHoldSegmentFS(fs vfs.FS) *holdSegmentFS {
	return &holdSegmentFS{FS: fs, names: map[*holdSegmentFile]string{}, release: make(chan struct{})}
}

func (h *holdSegmentFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	hf := &holdSegmentFile{File: f, fs: h}
	h.mu.Lock()
	h.names[hf] = path.Clean(name)
	h.mu.Unlock()
	return hf, nil
}

func (h *holdSegmentFS) Create(name string) (vfs.File, error) {
	f, err := h.FS.Create(name)
	return h.wrap(name, f, err)
}

func (h *holdSegmentFS) OpenAppend(name string) (vfs.File, error) {
	f, err := h.FS.OpenAppend(name)
	return h.wrap(name, f, err)
}

func (h *holdSegmentFS) OpenWrite(name string) (vfs.File, error) {
	f, err := h.FS.OpenWrite(name)
	return h.wrap(name, f, err)
}

func (h *holdSegmentFS) Rename(from, to string) error {
	if err := h.FS.Rename(from, to); err != nil {
		return err
	}
	h.mu.Lock()
	for f, n := range h.names {
		if n == path.Clean(from) {
			h.names[f] = path.Clean(to)
		}
	}
	h.mu.Unlock()
	return nil
}

// holdSyncsOf holds the syncs of the file named name from now on.
func (h *holdSegmentFS) holdSyncsOf(name string) {
	h.mu.Lock()
	h.hold = path.Clean(name)
	h.mu.Unlock()
}

type holdSegmentFile struct {
	vfs.File
	fs *holdSegmentFS
}

func (f *holdSegmentFile) Sync() error {
	f.fs.mu.Lock()
	held := f.fs.hold != "" && f.fs.names[f] == f.fs.hold
	f.fs.mu.Unlock()
	if held {
		<-f.fs.release
	}
	return f.File.Sync()
}

func (f *holdSegmentFile) Allocate(size int64) error {
	if a, ok := f.File.(vfs.Allocator); ok {
		return a.Allocate(size)
	}
	return errors.ErrUnsupported
}

func (f *holdSegmentFile) Close() error {
	f.fs.mu.Lock()
	delete(f.fs.names, f)
	f.fs.mu.Unlock()
	return f.File.Close()
}

// TestChangeStreamAfterAPowerCut: in write and none modes a full segment
// is synced in the background once the next one took frames, and a
// snapshot's directory sync can make the next one's name durable first. A
// power cut then can leave a hole in the journal's history (the segments
// the change stream keeps before the newest snapshot, which recovery does
// not replay): the full segment lost frames, the next one kept its own.
// Recovery starts from the newest snapshot and is right to; the change
// stream must still answer every cursor as the contract says: the events
// the journal holds, exactly as before the cut, -TRIMMED naming the
// oldest seq it can serve on from (never a cursor it will refuse again),
// or "past the newest seq" for a seq the cut took from the end. It used
// to answer a cursor before the hole with an internal error ("op N should
// be durable but no segment holds it"), after the events before it, which
// it dropped.
func TestChangeStreamAfterAPowerCut(t *testing.T) {
	for _, mode := range []Durability{DurabilityWrite, DurabilityNone} {
		for _, c := range []struct {
			name string
			// Pages of the full segment, and of the current one, whose
			// unsynced bytes reach the disk (-1: all of them).
			fullKeeps, curKeeps int64
		}{
			{"full segment lost every frame", 0, -1},
			{"full segment lost its tail", 2, -1},
			{"full segment lost its tail, current one too", 3, 1},
			{"current segment lost every frame", -1, 0},
			{"both lost every frame", 0, 0},
		} {
			t.Run(string(mode)+"/"+c.name, func(t *testing.T) {
				changeStreamAfterAPowerCut(t, mode, c.fullKeeps, c.curKeeps)
			})
		}
	}
}

func changeStreamAfterAPowerCut(t *testing.T, mode Durability, fullKeeps, curKeeps int64) {
	mem := vfs.NewMem()
	fs := newHoldSegmentFS(mem)
	clock := newFakeClock()
	const dir = "/d"
	cfg := Config{Dir: dir, FS: fs, Durability: mode, SegmentBytes: 8 * vfs.PageBytes, SnapshotEveryOps: 1 << 40,
		TickInterval: -1, Clock: clock, NoneFlushBytes: 1}
	e := mustOpen(t, cfg)
	released := false
	defer func() {
		if !released {
			close(fs.release)
		}
		e.Close()
	}()
	key := rk("a", "w1")
	must(e.Stock(key, 0, 1))
	segments := func() []string {
		var segs []string
		for _, n := range mem.Names() {
			if strings.HasPrefix(path.Base(n), "journal-") {
				segs = append(segs, n)
			}
		}
		return segs
	}
	op := func() {
		clock.Advance(time.Millisecond)
		must(e.Release(key, 1))
	}
	// In none mode a frame is written by the flusher, later: wait until
	// it is, so that what the segments hold is what the test counts on.
	settle := func() {
		want := e.AppliedLSN()
		for i := 0; e.DurableLSN() < want; i++ {
			if i == 3000 {
				t.Fatalf("durable %d, applied %d, failure %v", e.DurableLSN(), want, e.Failure())
			}
			time.Sleep(time.Millisecond)
		}
	}
	until := func(n int) string {
		for len(segments()) < n {
			op()
			settle()
		}
		return segments()[n-1]
	}
	snapshot := func() uint64 {
		before := e.SnapshotLSN()
		e.mu.Lock()
		e.cfg.SnapshotEveryOps = 1
		e.mu.Unlock()
		op()
		for e.SnapshotLSN() == before {
			time.Sleep(time.Millisecond)
		}
		e.mu.Lock()
		e.cfg.SnapshotEveryOps = 1 << 40
		e.mu.Unlock()
		settle()
		return e.SnapshotLSN()
	}

	until(2)
	for range 10 {
		op()
	}
	s1 := snapshot() // in the second segment
	full := until(3)
	fs.holdSyncsOf(full) // its retirement waits: its frames stay unsynced
	cur := until(4)
	for range 5 {
		op()
	}
	s2 := snapshot() // in the current segment: its directory sync makes cur's name durable
	for range 300 {
		op()
	}
	settle()
	last := e.DurableLSN()
	if got := segments(); len(got) != 3 || got[1] != full || got[2] != cur {
		t.Fatalf("segments %v: want the one before %s, %s and %s (the first trimmed by the snapshot at %d)", got, full, full, cur, s2)
	}
	// The stream as the live engine serves it, from the oldest seq on.
	oldest, err := journal.Oldest(mem, dir)
	if err != nil || oldest != s1+1 {
		t.Fatalf("oldest readable %d (%v), want %d", oldest, err, s1+1)
	}
	live := map[uint64]changes.Event{}
	feed := changes.NewFeed(e)
	for at := oldest - 1; at < last; {
		evs, err := feed.Read(context.Background(), at, changes.CountMax, 0)
		if err != nil || len(evs) == 0 {
			t.Fatalf("live read after %d: %d events, %v", at, len(evs), err)
		}
		for _, ev := range evs {
			live[ev.Seq] = ev
		}
		at = evs[len(evs)-1].Seq
	}
	feed.Close()

	keep := func(pages int64) func(page int64) int {
		return func(page int64) int {
			if pages < 0 || page < pages {
				return vfs.PageBytes
			}
			return 0
		}
	}
	cut := mem.CrashPages(func(name string, page int64) int {
		switch name {
		case full:
			return keep(fullKeeps)(page)
		case cur:
			return keep(curKeeps)(page)
		}
		return vfs.PageBytes
	})
	close(fs.release)
	released = true

	cfg.FS = cut
	e2, err := Open(cfg)
	if err != nil {
		t.Fatalf("recovery after the power cut: %v", err)
	}
	defer e2.Close()
	rec := e2.Recovery()
	newest := e2.DurableLSN()
	t.Logf("snapshots at %d and %d; segments %s (full) %s (current); ops up to %d before the cut, %d after it; recovered from snapshot %d",
		s1, s2, path.Base(full), path.Base(cur), last, newest, rec.SnapshotLSN)
	if rec.SnapshotLSN != s2 || newest > last {
		t.Fatalf("recovered from snapshot %d up to op %d: want snapshot %d and at most op %d", rec.SnapshotLSN, newest, s2, last)
	}

	feed2 := changes.NewFeed(e2)
	defer feed2.Close()
	ctx := context.Background()
	// (b) a seq the cut took from the end, or past the end.
	for _, after := range []uint64{last, newest + 1} {
		if after <= newest {
			continue
		}
		_, err := feed2.Read(ctx, after, 10, 0)
		var fe *changes.FutureError
		if !errors.As(err, &fe) || fe.Newest != newest || fe.After != after {
			t.Fatalf("read after %d, past the newest seq %d: %v; want %q", after, newest, err,
				(&changes.FutureError{After: after, Newest: newest}).Error())
		}
	}
	// Every cursor from 0 to the newest: the events the journal holds,
	// exact and gapless, or TRIMMED naming a seq the stream serves on
	// from. Each cursor is read by a feed of its own, so that no answer
	// comes from another's recent events.
	check := func(after uint64, evs []changes.Event) error {
		if len(evs) == 0 && after < newest {
			return fmt.Errorf("no events after %d, the newest is %d", after, newest)
		}
		for i, ev := range evs {
			if ev.Seq != after+1+uint64(i) {
				return fmt.Errorf("event %d is seq %d: a skip", i, ev.Seq)
			}
			if want, ok := live[ev.Seq]; !ok || !eventsEqualAudit15(ev, want) {
				return fmt.Errorf("seq %d: %+v, the live stream had %+v", ev.Seq, ev, want)
			}
		}
		return nil
	}
	var trimmedTo []uint64 // the oldest named, by cursor
	for after := uint64(0); after <= newest; after++ {
		f := changes.NewFeed(e2)
		evs, err := f.Read(ctx, after, 5, 0)
		f.Close()
		var te *journal.TrimmedError
		switch {
		case errors.As(err, &te):
			if te.Oldest <= after+1 || te.Oldest > newest+1 {
				t.Fatalf("read after %d: TRIMMED oldest %d: not a cursor past it the stream serves", after, te.Oldest)
			}
			trimmedTo = append(trimmedTo, te.Oldest)
			// The seq named must be served.
			f := changes.NewFeed(e2)
			evs, err := f.Read(ctx, te.Oldest-1, 5, 0)
			f.Close()
			if err != nil {
				t.Fatalf("read after %d: TRIMMED oldest %d; a read after %d then: %v", after, te.Oldest, te.Oldest-1, err)
			}
			if err := check(te.Oldest-1, evs); err != nil {
				t.Fatalf("read after %d (named by TRIMMED): %v", te.Oldest-1, err)
			}
		case err != nil:
			t.Fatalf("read after %d (recovered up to %d from snapshot %d): %v", after, newest, rec.SnapshotLSN, err)
		default:
			if err := check(after, evs); err != nil {
				t.Fatalf("read after %d: %v", after, err)
			}
		}
	}
	// (c) the oldest: what Oldest names, and the cursor before it reads.
	oldest2, err := journal.Oldest(cut, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = feed2.Read(ctx, 0, 5, 0)
	var te *journal.TrimmedError
	if !errors.As(err, &te) || te.Oldest != oldest2 {
		t.Fatalf("read after 0: %v; want TRIMMED oldest %d", err, oldest2)
	}
	// A consumer that follows the stream from the oldest on to the
	// newest meets each seq once, in order, or is told where it resumes.
	at, told := oldest2-1, []uint64(nil)
	for at < newest {
		evs, err := feed2.Read(ctx, at, 7, 0)
		if errors.As(err, &te) {
			if te.Oldest <= at+1 {
				t.Fatalf("following after %d: TRIMMED oldest %d", at, te.Oldest)
			}
			told = append(told, te.Oldest)
			at = te.Oldest - 1
			continue
		}
		if err != nil {
			t.Fatalf("following after %d: %v", at, err)
		}
		if err := check(at, evs); err != nil {
			t.Fatalf("following after %d: %v", at, err)
		}
		at = evs[len(evs)-1].Seq
	}
	t.Logf("oldest %d; a consumer from there on was told to resume at %v; cursors trimmed to %v", oldest2, told, compactAudit15(trimmedTo))
}

func eventsEqualAudit15(a, b changes.Event) bool {
	return string(a.AppendJSON(nil)) == string(b.AppendJSON(nil))
}

// compactAudit15 lists the distinct values of a sorted-ish list, in order.
func compactAudit15(v []uint64) []uint64 {
	var out []uint64
	for _, x := range v {
		if len(out) == 0 || out[len(out)-1] != x {
			out = append(out, x)
		}
	}
	return out
}
