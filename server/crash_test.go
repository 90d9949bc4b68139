package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"allot/bench"
	"allot/client"
	"allot/inventory"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
	"allot/workload"
)

const (
	crashRounds      = 6
	crashConnections = 12
	crashBatchMax    = 16
)

// crashConn is one load connection's record of a round: the ops it sent,
// in order, and the replies it got (a prefix of them).
type crashConn struct {
	group   inventory.GroupKey
	sent    []inventory.Op
	results []inventory.Result // results[i] answers sent[i]; len = acknowledged
}

// TestCrash runs allot serve as a child process under load from many
// connections and SIGKILLs it at a random moment, round after round on the
// same data directory, in fsync and write modes (both survive a process
// crash). After each restart:
//
//   - each connection owns its group, so the recovered group must equal
//     the model after some prefix of the ops that connection sent, and that
//     prefix must cover every op whose reply it received (the journal is a
//     prefix of the apply order, which is each connection's send order);
//   - every reply received equals the model's outcome for that op;
//   - the bench's own checker passes on the round, unacknowledged ops
//     counted as unknown.
//
// The kill moments come from a seed printed on failure; the load's
// interleaving is real time and is not replayable.
func TestCrash(t *testing.T) {
	bin := servertest.BuildAllot(t)
	for _, mode := range []store.Durability{store.DurabilityFsync, store.DurabilityWrite} {
		t.Run(string(mode), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			t.Logf("seed %d", seed)
			dir := t.TempDir()
			ctx := context.Background()
			cfg := store.Config{DataDir: dir, Durability: mode}
			p, err := remote.StartProcess(ctx, bin, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { p.Kill() }()

			model := inventory.NewState()
			var rows []inventory.Row
			for i := range crashConnections {
				g := inventory.GroupKey{SKU: fmt.Sprintf("crash-%02d", i), Condition: "new", Source: "retail"}
				for _, w := range []string{"w1", "w2", "w3"} {
					rows = append(rows, inventory.Row{Key: g.Row(w), Count: 20, Price: 100})
				}
			}
			load := make([]inventory.Op, len(rows))
			for i, r := range rows {
				load[i] = inventory.Stock(r.Key, r.Count, r.Price)
				model.Apply(&load[i], nil)
			}
			if err := pipelineOnce(ctx, p.Addr(), load); err != nil {
				t.Fatal(err)
			}

			var acked, unknown int
			for round := range crashRounds {
				conns := runUntilKilled(t, p, rng)
				p, err = remote.StartProcess(ctx, bin, cfg)
				if err != nil {
					t.Fatalf("round %d: restart after SIGKILL: %v", round, err)
				}
				recovered, err := readRows(ctx, p.Addr(), rows)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				a, u := verifyRound(t, round, model, conns, recovered)
				acked += a
				unknown += u
				model = inventory.NewState()
				for _, r := range recovered {
					op := inventory.Stock(r.Key, r.Count, r.Price)
					model.Apply(&op, nil)
				}
				if t.Failed() {
					t.Fatalf("round %d failed (seed %d)", round, seed)
				}
			}
			if err := p.Stop(30 * time.Second); err != nil {
				t.Fatalf("SIGTERM after the last round: %v", err)
			}
			if acked == 0 {
				t.Fatal("no op was acknowledged in any round: the test proved nothing")
			}
			t.Logf("%d rounds: %d ops acknowledged before the kills, %d in flight at them", crashRounds, acked, unknown)
		})
	}
}

// runUntilKilled runs the load until a random moment, SIGKILLs the server
// and returns what each connection sent and got.
func runUntilKilled(t *testing.T, p *remote.Process, rng *rand.Rand) []*crashConn {
	conns := make([]*crashConn, crashConnections)
	seeds := make([]uint64, crashConnections)
	for i := range conns {
		conns[i] = &crashConn{group: inventory.GroupKey{SKU: fmt.Sprintf("crash-%02d", i), Condition: "new", Source: "retail"}}
		seeds[i] = rng.Uint64()
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, crashConnections)
	for i, c := range conns {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seeds[i], 1))
			cl, err := client.New(client.Config{Addr: p.Addr(), PoolSize: 1})
			if err != nil {
				started <- struct{}{}
				return
			}
			defer cl.Close()
			results := make([]inventory.Result, crashBatchMax)
			first := true
			for {
				batch := make([]inventory.Op, 1+r.IntN(crashBatchMax))
				for j := range batch {
					if r.IntN(2) == 0 {
						batch[j] = inventory.Capture(c.group, int64(1+r.IntN(3)))
					} else {
						batch[j] = inventory.Release(c.group.Row(fmt.Sprintf("w%d", 1+r.IntN(3))), int64(1+r.IntN(3)))
					}
				}
				c.sent = append(c.sent, batch...)
				err := cl.Pipeline(context.Background(), batch, results)
				if first {
					started <- struct{}{}
					first = false
				}
				if err != nil {
					return
				}
				for j := range batch {
					res := results[j]
					res.Lines = append([]inventory.Line(nil), res.Lines...)
					c.results = append(c.results, res)
				}
			}
		})
	}
	for range conns {
		<-started
	}
	time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
	p.Kill()
	wg.Wait()
	return conns
}

// verifyRound checks one round; it returns the ops acknowledged and those
// sent without a reply.
func verifyRound(t *testing.T, round int, start *inventory.State, conns []*crashConn, recovered []inventory.Row) (acked, unknown int) {
	t.Helper()
	got := map[inventory.RowKey]inventory.Row{}
	for _, r := range recovered {
		got[r.Key] = r
	}
	w := &workload.Workload{Initial: start.Rows()}
	type pending struct {
		status bench.OpStatus
		lines  []inventory.Line
	}
	var outcomes []pending
	for ci, c := range conns {
		sim := start.Clone()
		for i := range c.results {
			want := sim.Apply(&c.sent[i], nil)
			want.Changed = false // the wire does not say
			if want.Lines != nil {
				want.Lines = append([]inventory.Line(nil), want.Lines...)
			}
			if !sameResult(c.results[i], want) {
				t.Errorf("round %d, connection %d, op %d %+v: reply %+v, the model says %+v", round, ci, i, c.sent[i], c.results[i], want)
			}
		}
		// The recovered group is the model after some prefix that covers
		// every acknowledged op.
		matched := -1
		for p := len(c.results); ; p++ {
			if groupEqual(sim, got, c.group) {
				matched = p
				break
			}
			if p == len(c.sent) {
				break
			}
			sim.Apply(&c.sent[p], nil)
		}
		if matched < 0 {
			t.Errorf("round %d, connection %d: recovered group %v matches no prefix of its %d sent ops from its %d acknowledged ones", round, ci, c.group, len(c.sent), len(c.results))
		}
		acked += len(c.results)
		unknown += len(c.sent) - len(c.results)
		for i, op := range c.sent {
			w.Ops = append(w.Ops, workload.Op{Kind: op.Kind, Key: op.Key, N: op.N})
			switch {
			case i >= len(c.results):
				outcomes = append(outcomes, pending{status: bench.OpUnknown})
			case c.results[i].Code == inventory.CodeOK:
				outcomes = append(outcomes, pending{status: bench.OpApplied, lines: c.results[i].Lines})
			default:
				outcomes = append(outcomes, pending{status: bench.OpRefused})
			}
		}
	}
	plan, err := bench.NewPlan(w)
	if err != nil {
		t.Fatalf("round %d: bench plan: %v", round, err)
	}
	o := bench.NewOutcomes(plan)
	for i, p := range outcomes {
		o.Record(i, p.status, p.lines)
	}
	if res := bench.Check(o, recovered); !res.OK {
		t.Errorf("round %d: the bench checker fails: %v", round, res.Violations)
	}
	return acked, unknown
}

func sameResult(a, b inventory.Result) bool {
	if len(a.Lines) == 0 && len(b.Lines) == 0 {
		a.Lines, b.Lines = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func groupEqual(sim *inventory.State, got map[inventory.RowKey]inventory.Row, g inventory.GroupKey) bool {
	for _, w := range []string{"w1", "w2", "w3"} {
		want, _ := sim.Row(g.Row(w))
		if got[g.Row(w)] != want {
			return false
		}
	}
	return true
}

// pipelineOnce runs ops on a fresh connection and requires each to be ok.
func pipelineOnce(ctx context.Context, addr string, ops []inventory.Op) error {
	cl, err := client.New(client.Config{Addr: addr, PoolSize: 1})
	if err != nil {
		return err
	}
	defer cl.Close()
	results := make([]inventory.Result, len(ops))
	if err := cl.Pipeline(ctx, ops, results); err != nil {
		return err
	}
	for i, r := range results {
		if r.Code != inventory.CodeOK {
			return fmt.Errorf("op %+v: %v %s", ops[i], r.Code, r.Detail)
		}
	}
	return nil
}

// readRows reads the given rows back.
func readRows(ctx context.Context, addr string, rows []inventory.Row) ([]inventory.Row, error) {
	cl, err := client.New(client.Config{Addr: addr, PoolSize: 1})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ops := make([]inventory.Op, len(rows))
	for i, r := range rows {
		ops[i] = inventory.Get(r.Key)
	}
	results := make([]inventory.Result, len(ops))
	if err := cl.Pipeline(ctx, ops, results); err != nil {
		return nil, err
	}
	out := make([]inventory.Row, 0, len(rows))
	for i, r := range results {
		if r.Code != inventory.CodeOK {
			return nil, fmt.Errorf("row %v lost after recovery: %v", rows[i].Key, r.Code)
		}
		out = append(out, inventory.Row{Key: rows[i].Key, Count: r.Count, Price: r.Price})
	}
	return out, nil
}
