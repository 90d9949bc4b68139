package engine

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// TestSubmitReturnsOnClose: Submits blocked on a full queue return
// ErrClosed when the engine closes, while the flusher is still inside its
// fdatasync, instead of waiting for room that Close will never make.
func TestSubmitReturnsOnClose(t *testing.T) {
	fs := &hookFS{FS: vfs.NewMem()}
	e := mustOpen(t, Config{Dir: "/d", FS: fs, QueueMax: 1})
	must(e.Stock(rk("a", "w1"), 0, 1))
	inSync, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(inSync)
			<-release
		})
	}
	fs.onSync.Store(&hook)
	first := NewRequest()
	first.Op = inventory.Release(rk("a", "w1"), 1)
	if err := e.Submit(first); err != nil {
		t.Fatal(err)
	}
	<-inSync // the flusher holds the one place in the queue
	const more = 4
	reqs := make([]*Request, more)
	submitted := make(chan error, more)
	for i := range reqs {
		reqs[i] = NewRequest()
		reqs[i].Op = inventory.Release(rk("a", "w1"), 1)
		go func() { submitted <- e.Submit(reqs[i]) }()
	}
	waitBlocked(t, "engine.(*Engine).Submit", more)
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	// Close waits for the flusher, which waits in its fdatasync until
	// release: every Submit must return before that.
	refused := 0
	for range more {
		switch err := <-submitted; {
		case errors.Is(err, ErrClosed):
			refused++
		case err != nil:
			t.Fatalf("a Submit at Close: %v, want nil or ErrClosed", err)
		}
	}
	if refused != more {
		t.Fatalf("%d of %d Submits blocked on a full queue were refused at Close", refused, more)
	}
	close(release)
	if err := first.Wait(); err != nil {
		t.Fatalf("the request applied before Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// waitBlocked waits until n goroutines wait on the engine's condition
// inside fn (a function name as stacks print it).
func waitBlocked(t *testing.T, fn string, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); ; {
		stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
		blocked := 0
		for _, s := range stacks {
			if strings.Contains(s, "sync.(*Cond).Wait") && strings.Contains(s, fn) {
				blocked++
			}
		}
		if blocked >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines blocked in %s after 10 s, want %d", blocked, fn, n)
		}
		runtime.Gosched()
	}
}
