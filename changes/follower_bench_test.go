package changes_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"allot/changes"
	"allot/engine"
	"allot/inventory"
)

// BenchmarkFollowerRead measures how fast a follower turns a journal of
// captures and releases over 1,000 rows into events: the cost of a reader
// catching up (decode, replay, row diff), per event.
func BenchmarkFollowerRead(b *testing.B) {
	dir := b.TempDir()
	e, err := engine.Open(engine.Config{Dir: dir, Durability: engine.DurabilityNone})
	if err != nil {
		b.Fatal(err)
	}
	key := func(i int) inventory.RowKey {
		return inventory.RowKey{SKU: "s" + strconv.Itoa(i%333), Warehouse: "w" + strconv.Itoa(i%3), Condition: "new", Source: "a"}
	}
	for i := 0; i < 1000; i++ {
		e.Stock(key(i), 1000, 1)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	const ops = 200000
	for i := 0; i < ops; i++ {
		if i%2 == 0 {
			e.Capture(key(rng.IntN(1000)).Group(), 1, nil)
		} else {
			e.Release(key(rng.IntN(1000)), 1)
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	e, err = engine.Open(engine.Config{Dir: dir, Durability: engine.DurabilityNone})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	last := e.DurableLSN()
	b.ResetTimer()
	n := 0
	for n < b.N {
		f, err := changes.NewFollower(nil, dir, 0, last)
		if err != nil {
			b.Fatal(err)
		}
		for n < b.N {
			_, ok, err := f.Next(last)
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			n++
		}
		f.Close()
	}
}
