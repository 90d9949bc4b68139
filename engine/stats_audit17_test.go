package engine

import (
	"testing"

	"allot/inventory"
)

// TestJournalBytesCountedInEveryMode: Stats().JournalBytes counts what the
// journal wrote in write and none modes too, where frames are written
// under the lock, not by the flusher. It was updated only by the
// flusher's writes (fsync mode), and stayed 0 in write mode however many
// ops were journaled (allot_engine_journal_bytes).
func TestJournalBytesCountedInEveryMode(t *testing.T) {
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite, DurabilityNone} {
		t.Run(string(mode), func(t *testing.T) {
			e, err := Open(Config{Dir: t.TempDir(), Durability: mode, NoneFlushBytes: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			k := inventory.RowKey{SKU: "s1", Warehouse: "w1", Condition: "c1", Source: "o1"}
			for i := 0; i < 20; i++ {
				if _, err := e.Stock(k, int64(i), 5); err != nil {
					t.Fatal(err)
				}
			}
			// Every mode has written frames by now: write mode one per
			// op, none mode once 64 bytes were pending, fsync mode
			// before each reply.
			if got := e.Stats().JournalBytes; got <= 0 {
				t.Errorf("JournalBytes = %d after 20 journaled ops, want > 0", got)
			}
		})
	}
}
