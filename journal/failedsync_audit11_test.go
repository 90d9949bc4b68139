package journal

import (
	"errors"
	"slices"
	"testing"

	"allot/vfs"
)

// A failed fdatasync leaves the frames it did not write in the page cache,
// marked clean (Linux; vfs.SyncFailer). The process stops (the engine
// fail-stops on the error and is restarted), the machine stays up: the
// restart reads those frames back from the page cache and replays them,
// and its sync of what it replayed writes nothing of them. It acknowledges
// new ops in a new segment; a power cut then loses the clean frames under
// them. In a synced journal the next Open refused the journal as corrupt
// (a segment starts past a hole), acknowledged ops and all; in an unsynced
// one it took the hole for the end of the journal and dropped the synced,
// acknowledged segment after it. Recovery now writes again the frames of
// the segments that may hold such pages before it syncs them.
func TestRecoveryRewritesWhatAFailedSyncLeftClean(t *testing.T) {
	for _, unsynced := range []bool{false, true} {
		for _, broken := range []Broken{BrokenNone, BrokenNoRecoveryRewrite} {
			name := map[bool]string{false: "synced", true: "unsynced"}[unsynced]
			if broken != BrokenNone {
				name += "/no rewrite"
			}
			t.Run(name, func(t *testing.T) {
				ops := genOps(112, 200)
				mem := vfs.NewMem()
				faulty := vfs.NewFaulty(mem)
				opts := Options{FS: faulty, Dir: dir, SegmentBytes: 1 << 20, Unsynced: unsynced, Broken: broken}
				j, _, _, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				writeOps(t, j, ops[:100], 10, 1)    // synced
				writeOps(t, j, ops[100:150], 10, 0) // written; their sync fails
				faulty.FailSyncs(true)
				if err := j.Sync(); !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("sync: %v, want the injected failure", err)
				}
				// The process stops; the machine does not.
				restart := mem.CrashProcess()
				opts.FS = restart
				j2, _, rec, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				if rec.LastLSN != 150 {
					t.Fatalf("the restart recovered %+v, want the 150 ops in the page cache", rec)
				}
				writeOps(t, j2, ops[150:], 10, 1) // synced: acknowledged

				opts.FS = restart.Crash(nil) // then the power goes
				_, st, rec, err := Open(opts)
				kept := err == nil && rec.LastLSN == 200 && slices.Equal(st.Rows(), stateAfter(ops))
				if broken == BrokenNone && !kept {
					t.Fatalf("after the power cut: recovered %+v, err %v; want all 200 ops (151..200 synced after the restart replayed 101..150)", rec, err)
				}
				if broken != BrokenNone {
					if kept {
						t.Fatal("recovery without the rewrite kept every op: the failed sync's pages were not lost")
					}
					t.Logf("without the rewrite: recovered %+v, err %v", rec, err)
				}
			})
		}
	}
}

// In an unsynced journal a full segment is synced in the background after
// the next one has taken frames (retire). When that sync fails, the failed
// segment is the last but one at the restart: recovery writes it again
// too, not only the last.
func TestRecoveryRewritesASegmentWhoseRetirementFailed(t *testing.T) {
	for _, broken := range []Broken{BrokenNone, BrokenNoRecoveryRewrite} {
		ops := genOps(113, 3000)
		mem := vfs.NewMem()
		faulty := vfs.NewFaulty(mem)
		opts := Options{FS: faulty, Dir: dir, SegmentBytes: 4096, Unsynced: true, Broken: broken}
		j, _, _, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		// Synced frames until the spare segment is ready (its
		// preallocation syncs, which must not fail).
		n := 0
		for ; n < 1000 && j.spare == nil; n += 10 {
			writeOps(t, j, ops[n:n+10], 10, 1)
		}
		res := <-j.spare
		j.spare <- res
		if res.err != nil {
			t.Fatal(res.err)
		}
		// The frames above may have filled segments already: their
		// retirements (background syncs) must be done before syncs fail,
		// or one of them meets the fault (it did, on a slow run).
		j.mu.Lock()
		werr := j.waitRetired()
		j.mu.Unlock()
		if werr != nil {
			t.Fatal(werr)
		}
		// Unsynced frames until one goes to the next segment; the
		// retirement's sync of the full one fails.
		faulty.FailSyncs(true)
		for segs := len(j.segments); len(j.segments) == segs; n += 10 {
			writeOps(t, j, ops[n:n+10], 10, 0)
		}
		<-j.retiring.done
		retired := j.retiring.err
		if !errors.Is(retired, vfs.ErrInjected) {
			t.Fatalf("the retirement: %v, want the injected sync failure", retired)
		}

		restart := mem.CrashProcess()
		opts.FS = restart
		j2, _, rec, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		if rec.LastLSN != uint64(n) {
			t.Fatalf("the restart recovered %+v, want the %d ops written", rec, n)
		}
		writeOps(t, j2, ops[n:n+500], 10, 1)
		n += 500
		// Close waits for the background retirements of the segments
		// after the restart (their directory syncs): all 500 are durable.
		// It writes nothing of the segment whose retirement failed.
		if err := j2.Close(); err != nil {
			t.Fatal(err)
		}

		opts.FS = restart.Crash(nil)
		_, st, rec, err := Open(opts)
		kept := err == nil && rec.LastLSN == uint64(n) && slices.Equal(st.Rows(), stateAfter(ops[:n]))
		switch {
		case broken == BrokenNone && !kept:
			t.Fatalf("after the power cut: recovered %+v, err %v; want all %d ops", rec, err, n)
		case broken != BrokenNone && kept:
			t.Fatal("recovery without the rewrite kept every op: the failed retirement's pages were not lost")
		case broken != BrokenNone:
			t.Logf("without the rewrite: recovered %+v of %d, err %v", rec, n, err)
		}
	}
}
