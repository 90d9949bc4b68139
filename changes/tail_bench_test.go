package changes_test

import (
	"context"
	"strconv"
	"testing"

	"allot/changes"
	"allot/engine"
)

// BenchmarkReadersAtTheTail measures consumers that follow the stream
// live: per round one capture is committed, then each of the readers
// reads the one new event after its cursor. With more readers than a Feed
// keeps idle followers, a reader that finds none at its cursor rebuilds
// one from the snapshot and the journal.
func BenchmarkReadersAtTheTail(b *testing.B) {
	for _, readers := range []int{4, 12} {
		b.Run("readers="+strconv.Itoa(readers), func(b *testing.B) {
			e, key := stockedEngine(b, engine.Config{SnapshotEveryOps: 20000}, 20000, 1000000)
			feed := changes.NewFeed(e)
			defer feed.Close()
			cursor := make([]uint64, readers)
			for i := range cursor {
				cursor[i] = e.DurableLSN()
			}
			ctx := context.Background()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				e.Capture(key(n%20000).Group(), 1, nil)
				for r := range cursor {
					evs, err := feed.Read(ctx, cursor[r], 100, 0)
					if err != nil {
						b.Fatal(err)
					}
					if len(evs) != 1 {
						b.Fatalf("reader %d after %d: %d events, want 1", r, cursor[r], len(evs))
					}
					cursor[r] = evs[0].Seq
				}
			}
		})
	}
}
