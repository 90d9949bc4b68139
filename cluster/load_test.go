package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"allot/inventory"
)

// The load of the failover tests: workers place holds with unique ids
// (1 or 2 lines, never short of stock), and every outcome is recorded. A
// hold is the test's unit of truth: whether it is in a node's state, and
// with which units, can be read back by its id.

const (
	loadSKUs       = 8
	loadWarehouses = 2
	loadUnits      = 1 << 40 // per row: no hold is ever short
)

type holdRecord struct {
	id     string
	lines  []inventory.Demand
	via    string    // the node it was sent to
	sent   time.Time // when it was sent
	done   time.Time // when its answer came
	acked  bool      // CodeOK: the node acknowledged it
	alloc  []inventory.Allocation
	failed error // an operational error: applied or not, unknown
}

type holdLoad struct {
	mu      sync.Mutex
	records []*holdRecord
}

func (l *holdLoad) add(r *holdRecord) {
	l.mu.Lock()
	l.records = append(l.records, r)
	l.mu.Unlock()
}

func (l *holdLoad) all() []*holdRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

// acked counts the holds acknowledged.
func (l *holdLoad) acked() (n int) {
	for _, r := range l.all() {
		if r.acked {
			n++
		}
	}
	return n
}

// ackedSince counts the holds sent after since and acknowledged, with the
// first and last acknowledgement times (zero when none).
func (l *holdLoad) ackedSince(since time.Time) (n int, first, last time.Time) {
	for _, r := range l.all() { // records are complete once listed
		if r.acked && r.sent.After(since) {
			n++
			if first.IsZero() || r.done.Before(first) {
				first = r.done
			}
			if r.done.After(last) {
				last = r.done
			}
		}
	}
	return n, first, last
}

// waitContinued waits until holds sent after since were acknowledged 4 s
// past it, for at most 30 s: on a loaded machine the elections of the
// log's and the lease's leaders (and a failover, if the primary's lease
// lapsed meanwhile) take a while.
func (l *holdLoad) waitContinued(since time.Time) {
	for deadline := since.Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		if after, _, last := l.ackedSince(since); after > 0 && last.Sub(since) >= 4*time.Second {
			return
		}
	}
}

// stockLoad stocks the rows the load holds from, through node p.
func stockLoad(t testing.TB, p *nodeProc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for s := 0; s < loadSKUs; s++ {
		for w := 0; w < loadWarehouses; w++ {
			if _, err := p.cli.Stock(ctx, rowKey(fmt.Sprint("sku", s), fmt.Sprint("w", w)), loadUnits, 100); err != nil {
				t.Fatalf("stock: %v", err)
			}
		}
	}
}

// startStocked starts the nodes, the first alone until it is the primary,
// and stocks the load's rows through it; it returns the primary.
func (c *shardCluster) startStocked(ids ...string) *nodeProc {
	c.t.Helper()
	c.start(ids[0])
	p := c.waitPrimary("", 30*time.Second)
	for _, id := range ids[1:] {
		c.start(id)
	}
	stockLoad(c.t, p)
	return p
}

// sender sends one hold op and names the node it went to.
type sender func(ctx context.Context, op inventory.Op) (inventory.Result, string, error)

// runWorkers places holds with workers senders until ctx ends.
func runWorkers(ctx context.Context, l *holdLoad, prefix string, workers int, send func(worker int) sender) *sync.WaitGroup {
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(k), 7))
			s := send(k)
			for i := 0; ctx.Err() == nil; i++ {
				r := &holdRecord{id: fmt.Sprintf("%s-%d-%d", prefix, k, i)}
				first := rng.IntN(loadSKUs)
				r.lines = append(r.lines, inventory.Demand{Group: groupKey(fmt.Sprint("sku", first)), N: 1 + rng.Int64N(3)})
				if rng.IntN(2) == 0 {
					second := (first + 1 + rng.IntN(loadSKUs-1)) % loadSKUs
					r.lines = append(r.lines, inventory.Demand{Group: groupKey(fmt.Sprint("sku", second)), N: 1 + rng.Int64N(3)})
				}
				r.sent = time.Now()
				op := inventory.Hold(r.id, time.Hour.Milliseconds(), r.lines)
				res, via, err := s(ctx, op)
				r.done, r.via = time.Now(), via
				switch {
				case err != nil:
					r.failed = err
					time.Sleep(5 * time.Millisecond)
				case res.Code == inventory.CodeOK:
					r.acked = true
					r.alloc = res.Allocations
				default:
					r.failed = fmt.Errorf("hold %s: %s %s", r.id, res.Code, res.Detail)
				}
				l.add(r)
			}
		}(k)
	}
	return &wg
}

// viaAny sends through the Go client of the nodes in turn, moving to the
// next one after an error; the client follows a standby's redirect.
func viaAny(nodes []*nodeProc) func(int) sender {
	return func(worker int) sender {
		i := worker
		return func(ctx context.Context, op inventory.Op) (inventory.Result, string, error) {
			p := nodes[i%len(nodes)]
			octx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			res, err := p.cli.Do(octx, op, nil)
			if err != nil {
				i++
			}
			return res, p.id, err
		}
	}
}

// viaOnly sends to node p on one connection at a time, without retries
// or redirects: what p itself answers.
func viaOnly(p *nodeProc) func(int) sender {
	return func(int) sender {
		return func(ctx context.Context, op inventory.Op) (inventory.Result, string, error) {
			octx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			cn, err := p.cli.Conn(octx)
			if err != nil {
				return inventory.Result{}, p.id, err
			}
			defer cn.Close()
			res, err := cn.Do(octx, op, nil)
			return res, p.id, err
		}
	}
}

// checkHolds reads every recorded hold back from node p and returns what
// breaks the promises: an acknowledged hold missing or changed, a hold of
// unknown fate applied in part, or units that are neither available nor
// held.
func checkHolds(t *testing.T, p *nodeProc, l *holdLoad) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var bad []string
	held := map[inventory.GroupKey]int64{}
	for _, r := range l.all() {
		res, err := p.cli.HoldGet(ctx, r.id)
		if err != nil {
			t.Fatalf("hold.get %s on %s: %v", r.id, p.id, err)
		}
		present := res.Code == inventory.CodeOK
		if present {
			var units int64
			for _, a := range res.Allocations {
				held[a.Row.Group()] += a.Count
				units += a.Count
			}
			var want int64
			for _, d := range r.lines {
				want += d.N
			}
			if units != want {
				bad = append(bad, fmt.Sprintf("hold %s holds %d units, asked %d: applied in part", r.id, units, want))
			}
		}
		if r.acked && (!present || res.State != inventory.HoldHeld || !slices.Equal(res.Allocations, r.alloc)) {
			bad = append(bad, fmt.Sprintf("hold %s acknowledged by %s at %s is %v %v on %s (acknowledged %v)",
				r.id, r.via, r.done.Format("15:04:05.000"), res.Code, res.Allocations, p.id, r.alloc))
		}
	}
	for s := 0; s < loadSKUs; s++ {
		g := groupKey(fmt.Sprint("sku", s))
		res, err := p.cli.Available(ctx, g)
		if err != nil {
			t.Fatalf("available %v: %v", g, err)
		}
		if got, want := res.Count+held[g], int64(loadUnits*loadWarehouses); got != want {
			bad = append(bad, fmt.Sprintf("group %v: available %d + held %d = %d, stocked %d", g, res.Count, held[g], got, want))
		}
	}
	return bad
}

// sameRows checks that nodes a and b hold the same rows of the load.
func sameRows(ctx context.Context, a, b *nodeProc) error {
	for s := 0; s < loadSKUs; s++ {
		for w := 0; w < loadWarehouses; w++ {
			k := rowKey(fmt.Sprint("sku", s), fmt.Sprint("w", w))
			ra, err := a.cli.Get(ctx, k)
			if err != nil {
				return err
			}
			rb, err := b.cli.Get(ctx, k)
			if err != nil {
				return err
			}
			if ra.Count != rb.Count {
				return fmt.Errorf("row %v: %d on %s, %d on %s", k, ra.Count, a.id, rb.Count, b.id)
			}
		}
	}
	return nil
}
