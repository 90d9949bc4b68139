package changes_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/catalog"
	"allot/changes"
	"allot/engine"
	"allot/inventory"
	"allot/journal"
)

// Rebuild applies events in order to a table of row counts and checks each
// event against it: seq gapless from first, and every row's count before
// plus delta equal to its count_after. It is the consumer's view of the
// stream: what a cache or a search index would hold.
func rebuild(first uint64, events []changes.Event, rows map[inventory.RowKey]int64) error {
	next := first
	for _, ev := range events {
		if ev.Seq != next {
			return fmt.Errorf("seq %d where %d was expected", ev.Seq, next)
		}
		next++
		for _, r := range ev.Rows {
			before := rows[r.Key()]
			if before+r.Delta != r.CountAfter {
				return fmt.Errorf("seq %d (%s): row %v was %d, delta %d, count_after %d", ev.Seq, ev.Op, r.Key(), before, r.Delta, r.CountAfter)
			}
			rows[r.Key()] = r.CountAfter
		}
	}
	return nil
}

// equalRows compares the rebuilt table with the engine's rows.
func equalRows(rows map[inventory.RowKey]int64, want []inventory.Row) error {
	if len(rows) != len(want) {
		return fmt.Errorf("%d rows rebuilt, the engine has %d", len(rows), len(want))
	}
	for _, r := range want {
		got, ok := rows[r.Key]
		if !ok || got != r.Count {
			return fmt.Errorf("row %v: rebuilt %d (present %v), the engine has %d", r.Key, got, ok, r.Count)
		}
	}
	return nil
}

// workload runs a random mix of every mutating kind, with short-lived
// holds, idempotency keys and repeats, and returns how many holds it made.
func workload(t *testing.T, e *engine.Engine, rng *rand.Rand, ops int) {
	t.Helper()
	const skus = 6
	key := func(i int) inventory.RowKey {
		return inventory.RowKey{SKU: "s" + strconv.Itoa(i%skus), Warehouse: "w" + strconv.Itoa(i%3), Condition: "new", Source: "a"}
	}
	group := func() inventory.GroupKey { return key(rng.IntN(skus)).Group() }
	for i := 0; i < skus*3; i++ {
		if _, err := e.Stock(key(i), 20, 100); err != nil {
			t.Fatal(err)
		}
	}
	var holds []string
	for i := 0; i < ops; i++ {
		var op inventory.Op
		switch rng.IntN(9) {
		case 0, 1:
			op = inventory.Capture(group(), int64(1+rng.IntN(3)))
		case 2:
			op = inventory.Release(key(rng.IntN(skus*3)), int64(1+rng.IntN(3)))
		case 3:
			op = inventory.Stock(key(rng.IntN(skus*3+4)), int64(rng.IntN(30)), 100)
		case 4, 5:
			id := "h" + strconv.Itoa(i)
			holds = append(holds, id)
			op = inventory.Hold(id, int64(1+rng.IntN(40)), []inventory.Demand{{Group: group(), N: 1}, {Group: group(), N: 1}})
		case 6:
			if len(holds) == 0 {
				continue
			}
			op = inventory.Confirm(holds[rng.IntN(len(holds))])
		case 7:
			if len(holds) == 0 {
				continue
			}
			op = inventory.Cancel(holds[rng.IntN(len(holds))])
		case 8:
			op = inventory.Order([]inventory.Demand{{Group: group(), N: 2}})
		}
		if op.Kind.Keyed() && rng.IntN(3) == 0 {
			op.IdempotencyKey = "k" + strconv.Itoa(rng.IntN(ops))
		}
		if _, err := e.Do(op, nil); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(50) == 0 {
			time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
		}
	}
}

func waitNoHolds(t *testing.T, e *engine.Engine) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := e.Do(inventory.Available(inventory.GroupKey{SKU: "s0", Condition: "new", Source: "a"}), nil)
		if err != nil {
			t.Fatal(err)
		}
		active := e.Stats().State.HoldsActive
		if active == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d holds still held 5 s after the longest ttl", active)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readAll(t *testing.T, f *changes.Feed, after uint64, count int) []changes.Event {
	t.Helper()
	var all []changes.Event
	for {
		evs, err := f.Read(context.Background(), after, count, 0)
		if err != nil {
			t.Fatalf("read after %d: %v", after, err)
		}
		if len(evs) == 0 {
			return all
		}
		all = append(all, evs...)
		after = evs[len(evs)-1].Seq
	}
}

// The acceptance test of the change stream: read it from 0 and rebuild a
// state equal to the engine's, holds and expiries included, across a
// restart, in every durability mode.
func TestStreamRebuildsState(t *testing.T) {
	for _, mode := range []engine.Durability{engine.DurabilityFsync, engine.DurabilityWrite, engine.DurabilityNone} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			rng := rand.New(rand.NewPCG(1, uint64(len(mode))))
			cfg := engine.Config{Dir: dir, Durability: mode, SegmentBytes: 8192}
			e, err := engine.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			workload(t, e, rng, 400)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			// Restarted: the stream goes on where it was.
			if e, err = engine.Open(cfg); err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			workload(t, e, rng, 400)
			waitNoHolds(t, e)
			want, err := e.Rows()
			if err != nil {
				t.Fatal(err)
			}
			// In none mode the last expiries may wait for the flusher's
			// tick before they are readable.
			deadline := time.Now().Add(2 * time.Second)
			for e.DurableLSN() < e.AppliedLSN() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			feed := changes.NewFeed(e)
			defer feed.Close()
			events := readAll(t, feed, 0, 37)
			if uint64(len(events)) != e.DurableLSN() {
				t.Fatalf("%d events, the journal holds %d ops", len(events), e.DurableLSN())
			}
			rows := map[inventory.RowKey]int64{}
			if err := rebuild(1, events, rows); err != nil {
				t.Fatal(err)
			}
			if err := equalRows(rows, want); err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, ev := range events {
				kinds[ev.Op]++
				switch ev.Op {
				case "confirm":
					if len(ev.Rows) != 0 || ev.Hold == "" {
						t.Errorf("confirm event %+v: want a hold and no rows", ev)
					}
				case "hold", "cancel", "expire":
					if ev.Hold == "" || len(ev.Rows) == 0 {
						t.Errorf("%s event %+v: want a hold and rows", ev.Op, ev)
					}
				}
				if ev.TimeMS == 0 {
					t.Errorf("event %d has no time", ev.Seq)
				}
			}
			for _, k := range []string{"capture", "release", "stock", "hold", "confirm", "cancel", "expire", "order"} {
				if kinds[k] == 0 {
					t.Errorf("no %s event in %v", k, kinds)
				}
			}
			t.Logf("%d events: %v", len(events), kinds)

			// The checker's power: the same events with one dropped, or one
			// delta off, do not rebuild.
			if len(events) > 10 {
				broken := append(append([]changes.Event{}, events[:5]...), events[6:]...)
				if rebuild(1, broken, map[inventory.RowKey]int64{}) == nil {
					t.Error("the rebuild checker missed a dropped event")
				}
			}
			for i := len(events) - 1; i >= 0; i-- {
				if len(events[i].Rows) == 0 {
					continue
				}
				bad := append([]changes.Event{}, events...)
				bad[i].Rows = append([]changes.Row{}, bad[i].Rows...)
				bad[i].Rows[0].Delta++
				bad[i].Rows[0].CountAfter++
				rows := map[inventory.RowKey]int64{}
				if rebuild(1, bad, rows) == nil && equalRows(rows, want) == nil {
					t.Error("the rebuild checker missed a wrong count")
				}
				break
			}
		})
	}
}

// A reader resuming from any cursor gets the same events as one reading
// through, and the JSON round-trips.
func TestResumeFromAnyCursor(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	workload(t, e, rand.New(rand.NewPCG(2, 2)), 200)
	feed := changes.NewFeed(e)
	all := readAll(t, feed, 0, changes.CountMax)
	for _, after := range []uint64{0, 1, 7, uint64(len(all) / 2), uint64(len(all) - 1)} {
		// A fresh feed: no follower to reuse, so it is rebuilt.
		evs, err := changes.NewFeed(e).Read(context.Background(), after, 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if after+uint64(i) >= uint64(len(all)) {
				break // an expiry since
			}
			want := all[after+uint64(i)]
			got, err := changes.ParseEvent(ev.AppendJSON(nil))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("after %d: event %d = %+v, reading through gave %+v", after, i, got, want)
			}
		}
	}
	if _, err := feed.Read(context.Background(), uint64(len(all))+1000000, 1, 0); !errors.As(err, new(*changes.FutureError)) {
		t.Errorf("a cursor past the newest seq: %v, want a FutureError", err)
	}
}

// Snapshot trimming: a cursor before the newest snapshot is refused with
// the oldest readable seq, and reading from there works.
func TestTrimmed(t *testing.T) {
	dir := t.TempDir()
	e, err := engine.Open(engine.Config{Dir: dir, Durability: engine.DurabilityWrite, SegmentBytes: 4096, SnapshotEveryOps: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	workload(t, e, rand.New(rand.NewPCG(3, 3)), 600)
	// Quiet, so that no later snapshot trims under the reader (a reader
	// slower than trimming is refused too, which is another test).
	waitNoHolds(t, e)
	// Snapshots are written in the background.
	deadline := time.Now().Add(5 * time.Second)
	var oldest uint64
	for time.Now().Before(deadline) {
		if oldest, err = changes.Oldest(nil, dir); err != nil {
			t.Fatal(err)
		}
		if oldest > 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if oldest <= 1 {
		t.Fatal("no snapshot trimmed the journal")
	}
	feed := changes.NewFeed(e)
	_, err = feed.Read(context.Background(), 0, 10, 0)
	var te *journal.TrimmedError
	if !errors.As(err, &te) || te.Oldest < oldest {
		t.Fatalf("CHANGES 0 on a trimmed journal: %v, want a TrimmedError with oldest >= %d", err, oldest)
	}
	evs := readAll(t, feed, te.Oldest-1, 50)
	if len(evs) == 0 || evs[0].Seq != te.Oldest || evs[len(evs)-1].Seq != e.DurableLSN() {
		t.Fatalf("from the oldest: %d events, want %d..%d", len(evs), te.Oldest, e.DurableLSN())
	}
}

// BLOCK waits for the next event, and returns none when the wait ends.
func TestBlock(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	feed := changes.NewFeed(e)
	start := time.Now()
	evs, err := feed.Read(context.Background(), 0, 10, 50*time.Millisecond)
	if err != nil || len(evs) != 0 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("an empty journal: %v events, %v, after %v; want none after the 50ms block", len(evs), err, time.Since(start))
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		e.Stock(inventory.RowKey{SKU: "a", Warehouse: "w", Condition: "c", Source: "s"}, 3, 1)
	}()
	evs, err = feed.Read(context.Background(), 0, 10, 10*time.Second)
	if err != nil || len(evs) != 1 {
		t.Fatalf("blocked read: %v, %v", evs, err)
	}
	if got := string(evs[0].AppendJSON(nil)); got != fmt.Sprintf(`{"seq":1,"time_ms":%d,"op":"stock","rows":[{"sku":"a","warehouse":"w","condition":"c","source":"s","delta":3,"count_after":3}]}`, evs[0].TimeMS) {
		t.Errorf("JSON %s", got)
	}
}

// Readers follow the stream while writers write and snapshots trim the
// journal under them (segments of 4 KiB, a snapshot every 100 ops). Every
// read is gapless from its cursor; two readers that saw the same seq saw
// the same event; each reader's events agree with each other row by row
// (a row's count_after is its last count_after plus the delta); a reader
// that fell behind the trimming is refused with a TrimmedError naming an
// oldest seq past its cursor, and reads on from there; no read fails any
// other way. Half the readers read through a fresh Feed each time, so that
// every read rebuilds a follower from a snapshot that may be replaced
// while it loads.
func TestReadersWhileTrimming(t *testing.T) {
	dir := t.TempDir()
	e, err := engine.Open(engine.Config{Dir: dir, Durability: engine.DurabilityWrite, SegmentBytes: 4096, SnapshotEveryOps: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	feed := changes.NewFeed(e)
	defer feed.Close()

	var (
		mu      sync.Mutex
		seen    = map[uint64]string{}
		trimmed int
	)
	done := make(chan struct{})
	const readers = 6
	var wg sync.WaitGroup
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			var after uint64
			rows := map[inventory.RowKey]int64{} // count_after of the rows seen since the last trim
			finished := false
			for {
				select {
				case <-done:
					finished = true
				default:
				}
				count := 1 + rng.IntN(300)
				block := time.Duration(0)
				if !finished && rng.IntN(2) == 0 {
					block = 20 * time.Millisecond
				}
				from := feed
				if r%2 == 1 {
					from = changes.NewFeed(e) // no idle follower: one rebuilt from a snapshot every read
				}
				evs, err := from.Read(context.Background(), after, count, block)
				var te *journal.TrimmedError
				if errors.As(err, &te) {
					if te.Oldest <= after+1 {
						t.Errorf("reader %d: trimmed at cursor %d, but the oldest readable seq is %d", r, after, te.Oldest)
						return
					}
					mu.Lock()
					trimmed++
					mu.Unlock()
					after = te.Oldest - 1
					clear(rows)
					continue
				}
				if err != nil {
					t.Errorf("reader %d: read after %d: %v", r, after, err)
					return
				}
				for i, ev := range evs {
					if ev.Seq != after+uint64(i)+1 {
						t.Errorf("reader %d: read after %d: event %d has seq %d", r, after, i, ev.Seq)
						return
					}
					for _, row := range ev.Rows {
						if was, ok := rows[row.Key()]; ok && was+row.Delta != row.CountAfter {
							t.Errorf("reader %d: seq %d (%s): row %v was %d, delta %d, count_after %d", r, ev.Seq, ev.Op, row.Key(), was, row.Delta, row.CountAfter)
							return
						}
						rows[row.Key()] = row.CountAfter
					}
				}
				mu.Lock()
				for _, ev := range evs {
					s := string(ev.AppendJSON(nil))
					if was, ok := seen[ev.Seq]; ok && was != s {
						t.Errorf("seq %d read as %s and as %s", ev.Seq, was, s)
					}
					seen[ev.Seq] = s
				}
				mu.Unlock()
				if len(evs) > 0 {
					after = evs[len(evs)-1].Seq
				}
				if finished && len(evs) == 0 {
					return
				}
				if r >= readers/2 {
					time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) // slow readers
				}
			}
		}(r)
	}
	// A laggard: one read from the start once the workload is done and
	// the journal trimmed far past it, which must be refused, however
	// fast the readers above keep up (on a quick machine none of them may
	// fall behind a trim).
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-done
		_, err := feed.Read(context.Background(), 0, 10, 0)
		var te *journal.TrimmedError
		if !errors.As(err, &te) || te.Oldest <= 1 {
			t.Errorf("a read from 0 after the journal was trimmed: %v; want a *journal.TrimmedError past 1", err)
			return
		}
		mu.Lock()
		trimmed++
		mu.Unlock()
	}()
	workload(t, e, rand.New(rand.NewPCG(9, 9)), 4000)
	waitNoHolds(t, e)
	close(done)
	wg.Wait()
	if oldest, err := changes.Oldest(nil, dir); err != nil || oldest <= 1 || trimmed == 0 {
		t.Fatalf("the journal was not trimmed under the readers (oldest %d, %v; %d reads refused): the test proves nothing", oldest, err, trimmed)
	}
	t.Logf("%d events seen, %d reads refused as trimmed", len(seen), trimmed)
}

// A follower keeps no catalog: catalog events come with their seq, op and
// key from the journal alone, and a follower built past a snapshot holding
// the catalog (or replaying catalog ops) has no record in its state, where
// each would cost it a copy of the whole catalog.
func TestFollowerKeepsNoCatalog(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite, SnapshotEveryOps: 40, KeepSnapshots: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	key := inventory.RowKey{SKU: "s1", Warehouse: "w", Condition: "new", Source: "own"}
	if _, err := e.Stock(key, 100, 5); err != nil {
		t.Fatal(err)
	}
	// Read as the events come: snapshots in the background trim the
	// journal behind them, so that a read from 0 at the end may be
	// refused (it was, on a slow run).
	feed := changes.NewFeed(e)
	defer feed.Close()
	var all []changes.Event
	drain := func() {
		t.Helper()
		for {
			evs, err := feed.Read(context.Background(), uint64(len(all)), changes.CountMax, 0)
			if err != nil {
				t.Fatalf("read after %d: %v", len(all), err)
			}
			if len(evs) == 0 {
				return
			}
			all = append(all, evs...)
		}
	}
	drain()
	var want []string // op and key of every event
	want = append(want, "stock/")
	for i := range 120 {
		switch i % 4 {
		case 0, 1:
			r := catalog.Record{SKU: "c" + strconv.Itoa(i%10), Title: "Titel " + strconv.Itoa(i), Brand: "Acme"}
			if _, err := e.CatalogSet(r, "k"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
			want = append(want, "catalog.set/k"+strconv.Itoa(i))
		case 2:
			res, err := e.CatalogDel("c"+strconv.Itoa(i%10), "")
			if err != nil {
				t.Fatal(err)
			}
			if res.Count == 1 {
				want = append(want, "catalog.del/")
			}
		case 3:
			if _, err := e.Do(inventory.Capture(key.Group(), 1), nil); err != nil {
				t.Fatal(err)
			}
			want = append(want, "capture/")
		}
		drain()
	}
	records, _ := e.CatalogRecords()
	if len(records) == 0 {
		t.Fatal("the engine has no catalog: the test proves nothing")
	}
	var got []string
	for _, ev := range all {
		got = append(got, ev.Op+"/"+ev.Key)
		if strings.HasPrefix(ev.Op, "catalog.") && len(ev.Rows) != 0 {
			t.Errorf("seq %d (%s) has rows %v", ev.Seq, ev.Op, ev.Rows)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", got, want)
	}
	rows := map[inventory.RowKey]int64{}
	if err := rebuild(1, all, rows); err != nil {
		t.Fatal(err)
	}
	state, _ := e.Rows()
	if err := equalRows(rows, state); err != nil {
		t.Error(err)
	}
	// Snapshots are written in the background: wait until the newest is
	// in place, then build one follower from it (it holds catalog records)
	// and one at the end.
	newest := waitNewestSnapshot(t, e.Dir())
	if _, st, err := journal.LoadSnapshot(nil, e.Dir(), newest); err != nil || newest == 0 || st.CatalogLen() == 0 {
		t.Fatalf("the snapshot at %d holds no catalog record (%v): the test proves nothing", newest, err)
	}
	for _, after := range []uint64{newest, uint64(len(all))} {
		fol, err := changes.NewFollower(nil, e.Dir(), after, e.DurableLSN())
		if err != nil {
			t.Fatal(err)
		}
		for {
			_, ok, err := fol.Next(e.DurableLSN())
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
		}
		if n := fol.State().CatalogLen(); n != 0 {
			t.Errorf("a follower from %d holds %d catalog records", after, n)
		}
		fol.Close()
	}
}

// TestStreamAfterARetentionRaise: the stream reads the whole journal after
// the engine was reopened with a longer retention window. A hold id and a
// key reused past the old window were new requests and are journaled; a
// follower that replayed them under the new window took them for repeats
// and refused the journal at them (ErrNotReplayed).
func TestStreamAfterARetentionRaise(t *testing.T) {
	dir := t.TempDir()
	cfg := engine.Config{Dir: dir, Retention: 50 * time.Millisecond}
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	row := inventory.RowKey{SKU: "s0", Warehouse: "w1", Condition: "new", Source: "a"}
	lines := []inventory.Demand{{Group: row.Group(), N: 2}}
	capture := inventory.Capture(row.Group(), 1)
	capture.IdempotencyKey = "k"
	use := func() {
		t.Helper()
		if res, err := e.Hold("h", time.Minute, lines); err != nil || res.Code != inventory.CodeOK || res.Repeat {
			t.Fatalf("hold: %+v %v", res, err)
		}
		if res, err := e.Cancel("h"); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("cancel: %+v %v", res, err)
		}
		if res, err := e.Do(capture, nil); err != nil || res.Code != inventory.CodeOK || res.Repeat {
			t.Fatalf("capture: %+v %v", res, err)
		}
	}
	if _, err := e.Stock(row, 10, 1); err != nil {
		t.Fatal(err)
	}
	use()
	time.Sleep(200 * time.Millisecond) // past the window: both are new again
	use()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Retention = 24 * time.Hour
	if e, err = engine.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	all := readAll(t, changes.NewFeed(e), 0, 100)
	var ops []string
	for _, ev := range all {
		ops = append(ops, ev.Op)
	}
	if got, want := strings.Join(ops, " "), "stock hold cancel capture hold cancel capture"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	rows := map[inventory.RowKey]int64{}
	if err := rebuild(1, all, rows); err != nil {
		t.Fatal(err)
	}
	if rows[row] != 8 {
		t.Fatalf("rebuilt count %d, want 8", rows[row])
	}
}

// TestFollowerForgetsKeys: a follower replays under the shortest retention
// window, so it lets go of the idempotency keys it replayed as it goes
// (it never answers a repeat: only new ops are journaled); it held a copy
// of every key the engine remembered, per reader.
func TestFollowerForgetsKeys(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	row := inventory.RowKey{SKU: "s0", Warehouse: "w1", Condition: "new", Source: "a"}
	if _, err := e.Stock(row, 1, 1); err != nil {
		t.Fatal(err)
	}
	const keyed = 100000 // about 4 MiB of keys: the key table frees 1 MiB chunks
	for i := range keyed {
		op := inventory.Release(row, 1)
		op.IdempotencyKey = fmt.Sprint("k", i)
		if _, err := e.Do(op, nil); err != nil {
			t.Fatal(err)
		}
		if i%5000 == 0 {
			time.Sleep(2 * time.Millisecond) // frames at later stamps
		}
	}
	fol, err := changes.NewFollower(nil, e.Dir(), 0, e.DurableLSN())
	if err != nil {
		t.Fatal(err)
	}
	defer fol.Close()
	n := 0
	for {
		_, ok, err := fol.Next(e.DurableLSN())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		n++
	}
	if n != keyed+1 {
		t.Fatalf("read %d events, want %d", n, keyed+1)
	}
	if got, engineKeys := fol.State().Stats().Keys, e.Stats().State.Keys; engineKeys < keyed || got > engineKeys/2 {
		t.Fatalf("the follower holds %d keys, the engine %d: it kept what it never uses", got, engineKeys)
	}
}
