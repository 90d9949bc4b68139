package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// hookFS calls onSync before every file Sync, on the syncing goroutine, so
// that a test can stop the flusher inside its fdatasync and look at the
// engine while it is there.
type hookFS struct {
	vfs.FS
	onSync atomic.Pointer[func()]
}

func (h *hookFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return hookFile{File: f, fs: h}, nil
}

func (h *hookFS) Create(name string) (vfs.File, error)     { return h.wrap(h.FS.Create(name)) }
func (h *hookFS) OpenAppend(name string) (vfs.File, error) { return h.wrap(h.FS.OpenAppend(name)) }

type hookFile struct {
	vfs.File
	fs *hookFS
}

func (f hookFile) Sync() error {
	if fn := f.fs.onSync.Load(); fn != nil {
		(*fn)()
	}
	return f.File.Sync()
}

// queuedWhileSyncing runs callers submitters of one op each against an
// fsync engine with the given QueueMax, and returns the most requests that
// were accepted (Submit returned) and not answered, seen from inside the
// flusher's fdatasync, where no reply can be on its way.
func queuedWhileSyncing(t *testing.T, queueMax, callers int) int {
	fs := &hookFS{FS: vfs.NewMem()}
	e := mustOpen(t, Config{Dir: "/d", FS: fs, QueueMax: queueMax})
	defer e.Close()
	must(e.Stock(rk("a", "w1"), 0, 1))

	reqs := make([]*Request, callers)
	accepted := make([]atomic.Bool, callers)
	waited := make([]atomic.Bool, callers) // set before Wait takes the reply
	var most atomic.Int64
	hook := func() {
		// Give the submitters the time to queue whatever the engine lets
		// them: a correct engine never lets more than queueMax in, however
		// long this is.
		time.Sleep(2 * time.Millisecond)
		n := 0
		for i, r := range reqs {
			if accepted[i].Load() && !waited[i].Load() && len(r.done) == 0 {
				n++ // in the queue or in this batch: not answered
			}
		}
		if int64(n) > most.Load() {
			most.Store(int64(n))
		}
	}
	for i := range reqs {
		reqs[i] = NewRequest()
		reqs[i].Op = inventory.Release(rk("a", "w1"), 1)
	}
	fs.onSync.Store(&hook)
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.Submit(r); err != nil {
				t.Errorf("submit: %v", err)
				return
			}
			accepted[i].Store(true)
		}()
	}
	wg.Wait()
	for i, r := range reqs {
		waited[i].Store(true)
		if err := r.Wait(); err != nil || r.Result.Code != inventory.CodeOK {
			t.Fatalf("release: %+v %v", r.Result, err)
		}
	}
	fs.onSync.Store(nil)
	if res := must(e.Get(rk("a", "w1"))); res.Count != int64(callers) {
		t.Fatalf("count %d, want %d", res.Count, callers)
	}
	return int(most.Load())
}

// TestQueueMaxIsExact: no more than QueueMax requests wait for the disk,
// counting the batch the flusher is syncing. The queue once made room as
// soon as the flusher took a batch, so twice QueueMax piled up.
func TestQueueMaxIsExact(t *testing.T) {
	for _, queueMax := range []int{1, 3} {
		if most := queuedWhileSyncing(t, queueMax, 24); most > queueMax {
			t.Errorf("QueueMax %d: %d requests were queued at once", queueMax, most)
		} else if most == 0 {
			t.Errorf("QueueMax %d: no request was seen queued; the test saw nothing", queueMax)
		}
	}
}

// TestQueueCheckFindsADoubleQueue proves TestQueueMaxIsExact's power: with
// QueueMax 2 counted the way the old engine counted (the batch in flight
// not counted), its check sees more than 2 queued, so the same check run on
// a QueueMax-1 engine that let 2 in would fail.
func TestQueueCheckFindsADoubleQueue(t *testing.T) {
	if most := queuedWhileSyncing(t, 2, 24); most < 2 {
		t.Fatalf("with QueueMax 2 the check saw %d queued at most; it cannot tell 1 from 2", most)
	}
}
