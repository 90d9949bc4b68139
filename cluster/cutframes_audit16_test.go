package cluster

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
)

// auditClock is an engine clock the test moves.
type auditClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *auditClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *auditClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// gatedWriter is the primary's logWriter whose appends wait while gate is
// closed over (a stalled log: a NATS leader election).
type gatedWriter struct {
	w       *logWriter
	mu      sync.Mutex
	gate    chan struct{}
	entered chan struct{}
	frames  int
}

func (g *gatedWriter) Replicate(frame []byte) error {
	g.mu.Lock()
	gate := g.gate
	g.frames++
	g.mu.Unlock()
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-gate
	return g.w.Replicate(frame)
}

// TestCutFramesThroughTheLog: behind a stalled append, the engine closes
// a frame aside when a hold comes due (engine.cutLocked), and one flush
// appends two frames in a row. The primary's writer must take both with
// its expected sequences, and a standby following the log from empty
// must end with the primary's rows, holds and LSN.
func TestCutFramesThroughTheLog(t *testing.T) {
	l := testShardLog(t, "cut16", 3*time.Second)
	clock := &auditClock{now: time.UnixMilli(1_700_000_000_000)}
	dir := func(name string) string {
		d := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	p, err := engine.Open(engine.Config{Dir: dir("p"), Replicated: true, Durability: engine.DurabilityFsync, Clock: clock, TickInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The stream is new: wait for its leader.
	for {
		if _, _, err := l.position(ctx); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the stream has no leader")
		}
		time.Sleep(100 * time.Millisecond)
	}
	lw := newLogWriter(ctx, l, "k", 0, "")
	g := &gatedWriter{w: lw, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	close(g.gate)
	if err := p.Promote(g); err != nil {
		t.Fatal(err)
	}
	row := rowKey("cut", "w1")
	if res, err := p.Stock(row, 10, 1); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("stock: %+v %v", res, err)
	}
	if res, err := p.Hold("h1", 100*time.Millisecond, []inventory.Demand{{Group: row.Group(), N: 1}}); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("hold: %+v %v", res, err)
	}
	g.mu.Lock()
	g.gate = make(chan struct{}) // appends stall from here on
	before := g.frames
	g.mu.Unlock()
	for len(g.entered) > 0 {
		<-g.entered
	}
	submit := func(op inventory.Op) *engine.Request {
		r := engine.NewRequest()
		r.Op = op
		if err := p.Submit(r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1 := submit(inventory.Release(row, 1))
	<-g.entered // the flusher is appending r1's frame
	clock.Advance(50 * time.Millisecond)
	r2 := submit(inventory.Release(row, 1))
	clock.Advance(110 * time.Millisecond)
	r3 := submit(inventory.Confirm("h1"))
	g.mu.Lock()
	close(g.gate)
	g.mu.Unlock()
	for _, r := range []*engine.Request{r1, r2, r3} {
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if r3.Result.Code != inventory.CodeExpired {
		t.Fatalf("confirm past the deadline behind a stalled append: %v, want EXPIRED", r3.Result.Code)
	}
	g.mu.Lock()
	appended := g.frames - before
	g.mu.Unlock()
	if appended < 3 {
		t.Fatalf("%d frames appended after the stall began; want r1's and then two in one flush (the cut)", appended)
	}
	_, last, err := l.position(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last != lw.last {
		t.Fatalf("the log ends at message %d, the writer expects %d", last, lw.last)
	}

	// A standby from empty follows the log.
	s, err := engine.Open(engine.Config{Dir: dir("s"), Replicated: true, Durability: engine.DurabilityFsync, Clock: clock, TickInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := &node{log: l, logger: slog.New(slog.DiscardHandler)}
	for seq := uint64(1); seq <= last; seq++ {
		if err := n.applySeq(ctx, s, seq); err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
	}
	if s.DurableLSN() != p.DurableLSN() {
		t.Fatalf("the standby is at op %d, the primary at %d", s.DurableLSN(), p.DurableLSN())
	}
	pr, err := p.Rows()
	if err != nil {
		t.Fatal(err)
	}
	sr, err := s.Rows()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pr, sr) {
		t.Fatalf("rows: primary %v, standby %v", pr, sr)
	}
	if h, err := s.HoldGet("h1"); err != nil || h.State != inventory.HoldExpired {
		t.Fatalf("the standby's h1: %+v %v; want expired", h, err)
	}
}
