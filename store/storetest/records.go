package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"allot/store"
)

// RecordsCaps says which record operations a store supports; the suite
// checks that the others are refused with store.ErrRWUnsupported.
type RecordsCaps struct {
	Unlocked, Locked, Versioned bool
	Transactional               bool
	SoftLock                    bool
	// Queue: the store is a message queue (Write publishes, Read consumes).
	Queue bool
	// InsertOverwrites: writing an existing key overwrites it instead of
	// failing (allot has no insert-if-absent).
	InsertOverwrites bool
	// Durability, when set, is the one mode the store's server runs in
	// (Tarantool's wal_mode, fixed at its start): every store is opened in
	// it, Durable follows it, and the opposite Durable must be refused.
	Durability store.Durability
}

// RecordsOpener opens a fresh store in durability d for one test.
type RecordsOpener func(t *testing.T, d store.Durability) store.Store

// RunRecords runs the records conformance suite (store.RWStore) against a
// store.
func RunRecords(t *testing.T, open RecordsOpener, caps RecordsCaps) {
	ctx := context.Background()
	if caps.Durability != "" {
		fixed := caps.Durability
		inner := open
		open = func(t *testing.T, _ store.Durability) store.Store { return inner(t, fixed) }
	}
	// durableIn is the Durable a store opened in d accepts.
	durableIn := func(d store.Durability) bool {
		if caps.Durability != "" {
			return caps.Durability == store.DurabilityFsync
		}
		return d == store.DurabilityFsync
	}
	space := func(t *testing.T, d store.Durability, o store.RWOptions) store.RWSpace {
		t.Helper()
		if caps.Durability != "" {
			o.Durable = durableIn(d)
		}
		st := open(t, d)
		t.Cleanup(func() { st.Close() })
		rs, ok := st.(store.RWStore)
		if !ok {
			t.Fatalf("%T is not a store.RWStore", st)
		}
		sp, err := rs.RWOpen(ctx, o)
		if err != nil {
			t.Fatalf("RWOpen(%+v): %v", o, err)
		}
		t.Cleanup(func() { sp.Close() })
		if sp.Info().Setting == "" {
			t.Errorf("RWOpen(%+v): no setting named", o)
		}
		return sp
	}
	session := func(t *testing.T, sp store.RWSpace) store.RWSession {
		t.Helper()
		se, err := sp.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { se.Close() })
		return se
	}
	durable := store.RWOptions{Lock: store.RWLockHard, Durable: durableIn(store.DurabilityFsync), Confirm: true}

	if caps.Queue {
		t.Run("PublishConsume", func(t *testing.T) {
			for _, o := range []store.RWOptions{durable, {Lock: store.RWLockHard, Confirm: false}, {Lock: store.RWLockHard, Transactional: true, Durable: true}} {
				sp := space(t, store.DurabilityFsync, o)
				if !sp.Info().Queue {
					t.Fatal("Info().Queue is false")
				}
				if err := sp.Load(ctx, []store.RWRecord{{Key: "a", Value: 1}, {Key: "b", Value: 2}}); err != nil {
					t.Fatal(err)
				}
				se := session(t, sp)
				if err := se.Write(ctx, []store.RWRecord{{Key: "c", Value: 3}, {Key: "d", Value: 4}}); err != nil {
					t.Fatal(err)
				}
				v, found, err := se.Read(ctx, "")
				if err != nil || !found || v != 1 {
					t.Fatalf("%+v: first Read = %d %v %v, want 1 (FIFO)", o, v, found, err)
				}
				if _, err := se.Modify(ctx, []string{"a"}, 1, store.RWLocked); !errors.Is(err, store.ErrRWUnsupported) {
					t.Errorf("Modify on a queue: %v, want ErrRWUnsupported", err)
				}
				// A consumer may hold messages it has not taken yet; they
				// go back to the queue when its session closes.
				if err := se.Close(); err != nil {
					t.Fatal(err)
				}
				recs, err := sp.Records(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) != 3 {
					t.Fatalf("%+v: Records = %v, want the 3 messages left", o, recs)
				}
			}
		})
		return
	}

	t.Run("ReadWrite", func(t *testing.T) {
		sp := space(t, store.DurabilityFsync, durable)
		if err := sp.Load(ctx, []store.RWRecord{{Key: "k1", Value: 5}, {Key: "k2", Value: 6}}); err != nil {
			t.Fatal(err)
		}
		se := session(t, sp)
		if v, found, err := se.Read(ctx, "k2"); err != nil || !found || v != 6 {
			t.Fatalf("Read(k2) = %d %v %v, want 6", v, found, err)
		}
		if _, found, err := se.Read(ctx, "nope"); err != nil || found {
			t.Fatalf("Read(nope) found %v, err %v", found, err)
		}
		if err := se.Write(ctx, []store.RWRecord{{Key: "k3", Value: 7}}); err != nil {
			t.Fatal(err)
		}
		if err := se.Write(ctx, []store.RWRecord{{Key: "k1", Value: 9}}); (err == nil) != caps.InsertOverwrites {
			t.Errorf("inserting an existing key: err %v (overwrites: %v)", err, caps.InsertOverwrites)
		}
		want := map[string]int64{"k1": 5, "k2": 6, "k3": 7}
		if caps.InsertOverwrites {
			want["k1"] = 9
		}
		wantRecords(t, sp, want)
	})

	t.Run("TwoSpacesApart", func(t *testing.T) {
		// Two runs (or a run and a test) on one shared server at once.
		a := space(t, store.DurabilityFsync, durable)
		b := space(t, store.DurabilityFsync, durable)
		if err := a.Load(ctx, []store.RWRecord{{Key: "same", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		if err := b.Load(ctx, []store.RWRecord{{Key: "same", Value: 2}, {Key: "other", Value: 3}}); err != nil {
			t.Fatal(err)
		}
		wantRecords(t, a, map[string]int64{"same": 1})
		wantRecords(t, b, map[string]int64{"same": 2, "other": 3})
	})

	modes := []struct {
		mode store.RWModify
		ok   bool
	}{{store.RWUnlocked, caps.Unlocked}, {store.RWLocked, caps.Locked}, {store.RWVersioned, caps.Versioned}}
	for _, m := range modes {
		t.Run("Modify/"+m.mode.String(), func(t *testing.T) {
			o := durable
			o.Versioned = m.mode == store.RWVersioned
			if !m.ok {
				st := open(t, store.DurabilityFsync)
				defer st.Close()
				sp, err := st.(store.RWStore).RWOpen(ctx, o)
				if err == nil {
					defer sp.Close()
					if err = sp.Load(ctx, []store.RWRecord{{Key: "a"}}); err == nil {
						se, serr := sp.Session(ctx)
						if serr != nil {
							t.Fatal(serr)
						}
						defer se.Close()
						_, err = se.Modify(ctx, []string{"a"}, 1, m.mode)
					}
				}
				if !errors.Is(err, store.ErrRWUnsupported) {
					t.Fatalf("a %s modify: err %v, want ErrRWUnsupported", m.mode, err)
				}
				return
			}
			sp := space(t, store.DurabilityFsync, o)
			if err := sp.Load(ctx, []store.RWRecord{{Key: "a", Value: 10}, {Key: "b"}}); err != nil {
				t.Fatal(err)
			}
			se := session(t, sp)
			if _, err := se.Modify(ctx, []string{"a"}, 3, m.mode); err != nil {
				t.Fatal(err)
			}
			if _, err := se.Modify(ctx, []string{"missing"}, 1, m.mode); err == nil {
				t.Error("modifying a missing record is not an error")
			}
			if m.mode == store.RWUnlocked {
				wantRecords(t, sp, map[string]int64{"a": 13, "b": 0})
				return
			}
			// Concurrent modifies of the same two records lose nothing.
			const workers, each = 6, 40
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				w := session(t, sp)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						if _, err := w.Modify(ctx, []string{"a"}, 1, m.mode); err != nil {
							errs <- err
							return
						}
						if _, err := w.Modify(ctx, []string{"b"}, 2, m.mode); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			wantRecords(t, sp, map[string]int64{"a": 13 + workers*each, "b": 2 * workers * each})
		})
	}

	t.Run("Transactional", func(t *testing.T) {
		o := durable
		o.Transactional = true
		st := open(t, store.DurabilityFsync)
		defer st.Close()
		sp, err := st.(store.RWStore).RWOpen(ctx, o)
		if !caps.Transactional {
			if !errors.Is(err, store.ErrRWUnsupported) {
				t.Fatalf("transactional: err %v, want ErrRWUnsupported", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		if err := sp.Load(ctx, []store.RWRecord{{Key: "a"}, {Key: "b"}}); err != nil {
			t.Fatal(err)
		}
		se := session(t, sp)
		if err := se.Write(ctx, []store.RWRecord{{Key: "c", Value: 1}, {Key: "d", Value: 2}}); err != nil {
			t.Fatal(err)
		}
		// A batch with a key that exists fails as a whole.
		if err := se.Write(ctx, []store.RWRecord{{Key: "e", Value: 1}, {Key: "a", Value: 2}}); err == nil {
			t.Error("a transaction inserting an existing key succeeded")
		}
		if caps.Locked {
			if _, err := se.Modify(ctx, []string{"a", "b"}, 1, store.RWLocked); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string]int64{"a": 0, "b": 0, "c": 1, "d": 2}
		if caps.Locked {
			want["a"], want["b"] = 1, 1
		}
		wantRecords(t, sp, want)
	})

	t.Run("SoftLock", func(t *testing.T) {
		st := open(t, store.DurabilityFsync)
		defer st.Close()
		sp, err := st.(store.RWStore).RWOpen(ctx, store.RWOptions{Lock: store.RWLockSoft, Durable: durableIn(store.DurabilityFsync)})
		if !caps.SoftLock {
			if !errors.Is(err, store.ErrRWUnsupported) {
				t.Errorf("soft lock: err %v, want ErrRWUnsupported", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		if err := sp.Load(ctx, []store.RWRecord{{Key: "x", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		se := session(t, sp)
		if v, found, err := se.Read(ctx, "x"); err != nil || !found || v != 1 {
			t.Errorf("soft read = %d %v %v", v, found, err)
		}
	})

	t.Run("FastSetting", func(t *testing.T) {
		sp := space(t, store.DurabilityWrite, store.RWOptions{Lock: store.RWLockHard, Durable: false, Confirm: true})
		if err := sp.Load(ctx, []store.RWRecord{{Key: "x", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		se := session(t, sp)
		if err := se.Write(ctx, []store.RWRecord{{Key: "y", Value: 2}}); err != nil {
			t.Fatal(err)
		}
		wantRecords(t, sp, map[string]int64{"x": 1, "y": 2})
	})

	if caps.Durability != "" {
		t.Run("OtherDurableRefused", func(t *testing.T) {
			st := open(t, caps.Durability)
			defer st.Close()
			o := durable
			o.Durable = !o.Durable
			if _, err := st.(store.RWStore).RWOpen(ctx, o); !errors.Is(err, store.ErrRWUnsupported) {
				t.Fatalf("Durable=%v on a server fixed in %s: err %v, want ErrRWUnsupported", o.Durable, caps.Durability, err)
			}
		})
	}

	t.Run("Pipeline", func(t *testing.T) {
		sp := space(t, store.DurabilityFsync, durable)
		se := session(t, sp)
		p, ok := se.(store.RWPipeliner)
		if !ok {
			t.Skip("no store.RWPipeliner")
		}
		recs := make([]store.RWRecord, 50)
		keys := make([]string, len(recs)+1)
		for i := range recs {
			recs[i] = store.RWRecord{Key: fmt.Sprintf("p%03d", i), Value: int64(i * 3)}
			keys[i] = recs[i].Key
		}
		keys[len(recs)] = "absent"
		keys[1] = keys[0] // a key asked twice in one pipeline gets both answers
		if err := p.PipelineWrite(ctx, recs); err != nil {
			t.Fatal(err)
		}
		recs[0].Value = 99 // an overwrite
		if err := p.PipelineWrite(ctx, recs[:1]); err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{}
		for _, r := range recs {
			want[r.Key] = r.Value
		}
		values, found := make([]int64, len(keys)), make([]bool, len(keys))
		if err := p.PipelineRead(ctx, keys, values, found); err != nil {
			t.Fatal(err)
		}
		for i, k := range keys[:len(recs)] {
			if !found[i] || values[i] != want[k] {
				t.Errorf("read %d, %s: %d %v, want %d", i, k, values[i], found[i], want[k])
			}
		}
		if found[len(recs)] {
			t.Error("an absent key was found")
		}
		// What a pipeline wrote is read back like any write.
		wantRecords(t, sp, want)
	})
}

func wantRecords(t *testing.T, sp store.RWSpace, want map[string]int64) {
	t.Helper()
	recs, err := sp.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range recs {
		got[r.Key] = r.Value
	}
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Errorf("records %v, want %v", sorted(got), sorted(want))
	}
}

func sorted(m map[string]int64) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(out)
	return out
}
