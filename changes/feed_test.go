package changes_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"allot/changes"
	"allot/engine"
	"allot/inventory"
)

// Consumers following the stream live sit at the same cursor and are woken
// together by each commit. One follower serves them all: the others read
// the events it read. A Feed that kept one idle follower per cursor built
// a new one (a copy of the inventory, from the snapshot and the journal)
// for every reader but the first, at every event.
func TestReadersAtOneCursorShareAFollower(t *testing.T) {
	e, key := stockedEngine(t, engine.Config{}, 100, 1000)
	feed := changes.NewFeed(e)
	defer feed.Close()
	const readers, rounds = 4, 50
	cursor := make([]uint64, readers)
	for i := range cursor {
		cursor[i] = e.DurableLSN()
	}
	ctx := context.Background()
	for n := 0; n < rounds; n++ {
		if _, err := e.Capture(key(n).Group(), 1, nil); err != nil {
			t.Fatal(err)
		}
		var first string
		for r := range cursor {
			evs, err := feed.Read(ctx, cursor[r], 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || evs[0].Seq != cursor[r]+1 {
				t.Fatalf("round %d, reader %d after %d: %+v, want the one event %d", n, r, cursor[r], evs, cursor[r]+1)
			}
			js := string(evs[0].AppendJSON(nil))
			if r == 0 {
				first = js
			} else if js != first {
				t.Fatalf("round %d: reader %d read %s, reader 0 %s", n, r, js, first)
			}
			cursor[r] = evs[0].Seq
		}
	}
	if built := feed.FollowersBuilt(); built > 1 {
		t.Fatalf("%d readers at one cursor, %d events: %d followers built, want 1", readers, rounds, built)
	}
}

// A reader far behind reads through a follower while readers at the
// newest seq read the recent events; a reader whose cursor falls between
// the two, or before the recent events' first, reads gapless events equal
// to what the others read.
func TestRecentEventsAndLaggards(t *testing.T) {
	e, row := stockedEngine(t, engine.Config{}, 50, 1000000)
	key := func(i int) inventory.RowKey { return row(i % 50) }
	feed := changes.NewFeed(e)
	defer feed.Close()
	ctx := context.Background()
	seen := map[uint64]string{}
	read := func(after uint64, count int) []changes.Event {
		t.Helper()
		evs, err := feed.Read(ctx, after, count, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if ev.Seq != after+uint64(i)+1 {
				t.Fatalf("read after %d: event %d has seq %d", after, i, ev.Seq)
			}
			js := string(ev.AppendJSON(nil))
			if was, ok := seen[ev.Seq]; ok && was != js {
				t.Fatalf("seq %d read as %s and as %s", ev.Seq, was, js)
			}
			seen[ev.Seq] = js
		}
		return evs
	}
	var tail, lag uint64
	for n := 0; n < 12000; n++ {
		if _, err := e.Capture(key(n).Group(), 1, nil); err != nil {
			t.Fatal(err)
		}
		if evs := read(tail, 10000); len(evs) > 0 {
			tail = evs[len(evs)-1].Seq
		}
		if n%997 == 0 {
			if evs := read(lag, 1+n%300); len(evs) > 0 {
				lag = evs[len(evs)-1].Seq
			}
			read(uint64(n*7)%tail, 5000)
		}
	}
	for lag < tail {
		evs := read(lag, 1000)
		lag = evs[len(evs)-1].Seq
	}
	if want := e.DurableLSN(); uint64(len(seen)) != want {
		t.Fatalf("%d events seen, want %d", len(seen), want)
	}
}

// The same with the readers woken together: each blocked in a read at the
// newest seq when the next commit comes, as CHANGES BLOCK readers are.
// One of them reads on through a follower, the others wait for it and
// read what it read.
func TestReadersWokenTogetherShareAFollower(t *testing.T) {
	e, key := stockedEngine(t, engine.Config{}, 100, 1000)
	feed := changes.NewFeed(e)
	defer feed.Close()
	const readers, rounds = 64, 30
	ctx := context.Background()
	for n := 0; n < rounds; n++ {
		at := e.DurableLSN()
		got := make(chan string, readers)
		for range readers {
			go func() {
				evs, err := feed.Read(ctx, at, 100, 10*time.Second)
				switch {
				case err != nil:
					got <- err.Error()
				case len(evs) != 1 || evs[0].Seq != at+1:
					got <- "wrong events"
				default:
					got <- string(evs[0].AppendJSON(nil))
				}
			}()
		}
		time.Sleep(5 * time.Millisecond) // most of them blocked
		if _, err := e.Capture(key(n).Group(), 1, nil); err != nil {
			t.Fatal(err)
		}
		first := <-got
		for range readers - 1 {
			if js := <-got; js != first || !strings.HasPrefix(js, "{") {
				t.Fatalf("round %d: one reader read %s, another %s", n, first, js)
			}
		}
	}
	if built := feed.FollowersBuilt(); built > 1 {
		t.Fatalf("%d readers woken together at %d events: %d followers built, want 1", readers, rounds, built)
	}
}

// stockedEngine opens an engine in write mode on a temporary directory
// (cfg's other fields as given), closed when the test ends, with rows
// rows of count units each; key(i) is the i-th row.
func stockedEngine(tb testing.TB, cfg engine.Config, rows int, count int64) (*engine.Engine, func(i int) inventory.RowKey) {
	tb.Helper()
	cfg.Dir, cfg.Durability = tb.TempDir(), engine.DurabilityWrite
	e, err := engine.Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	key := func(i int) inventory.RowKey {
		return inventory.RowKey{SKU: "s" + strconv.Itoa(i), Warehouse: "w", Condition: "new", Source: "a"}
	}
	for i := 0; i < rows; i++ {
		if _, err := e.Stock(key(i), count, 1); err != nil {
			tb.Fatal(err)
		}
	}
	return e, key
}
