package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"allot/store"
)

// RunPipelineWriteContention checks that concurrent pipelined writes of
// the same few keys, each batch naming them in an order of its own (as
// workload kv's batches do when they wrap around a small key space),
// all succeed: a datastore that locks a batch's keys one by one must not
// deadlock on them. Each of workers sessions writes rounds batches of
// keys records, rotated by its worker number and round.
func RunPipelineWriteContention(t *testing.T, sp store.RWSpace, workers, keys, rounds int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		se, err := sp.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer se.Close()
		p, ok := se.(store.RWPipeliner)
		if !ok {
			t.Fatalf("%T is not a store.RWPipeliner", se)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs := make([]store.RWRecord, keys)
			for round := range rounds {
				for i := range recs {
					k := (i + w*3 + round*5) % keys
					recs[i] = store.RWRecord{Key: fmt.Sprintf("c%03d", k), Value: int64(round)}
				}
				if err := p.PipelineWrite(ctx, recs); err != nil {
					errs <- fmt.Errorf("worker %d, round %d: %w", w, round, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
