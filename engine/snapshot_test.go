package engine

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"allot/catalog"
	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// TestSnapshotDoesNotStopTheWriter: a snapshot of a big state is read on
// its own goroutine while Submits go on and complete. The snapshot's
// reader is held at a hook right after the cut until thousands of ops of
// every kind (rows in every chunk, holds made and finished, keys, catalog
// records, expiries) have been applied and answered; had any of them
// waited for the snapshot, the test would never reach the release. The
// snapshot written then holds exactly the state at its cut.
func TestSnapshotDoesNotStopTheWriter(t *testing.T) {
	const rows = 20_000
	fs := vfs.NewMem()
	clock := newFakeClock()
	e := mustOpen(t, Config{Dir: "/d", FS: fs, Clock: clock, TickInterval: -1, SnapshotEveryOps: 1 << 40})
	defer e.Close()
	sku := func(i int) string { return fmt.Sprintf("sku%05d", i) }
	row := func(i int) inventory.RowKey { return rk(sku(i/2), fmt.Sprint("w", i%2)) }
	for i := range rows {
		must(e.Stock(row(i), 10, int64(100+i%7)))
	}
	for i := range 300 {
		must(e.Hold(fmt.Sprint("h", i), time.Duration(1+i%5)*time.Second, []inventory.Demand{{Group: gk(sku(i)), N: 1}}))
	}
	for i := range 300 {
		op := inventory.Capture(gk(sku(300+i)), 1)
		op.IdempotencyKey = fmt.Sprint("k", i)
		must(e.Do(op, nil))
	}
	for i := range 300 {
		must(e.CatalogSet(catalog.Record{SKU: sku(i), Title: fmt.Sprint("Title ", i), Brand: "Acme"}, ""))
	}

	cut, release := make(chan struct{}), make(chan struct{})
	e.snapshotRead = func() {
		close(cut)
		<-release
	}
	e.mu.Lock()
	e.cfg.SnapshotEveryOps = 1
	e.mu.Unlock()
	must(e.Release(row(0), 1)) // its flush takes the cut
	<-cut
	e.mu.Lock()
	e.cfg.SnapshotEveryOps = 1 << 40
	e.mu.Unlock()
	var wantRows []inventory.Row
	var wantSecs []inventory.Section
	if err := e.read(func(s *inventory.State) { wantRows, wantSecs = s.Rows(), s.Sections() }); err != nil {
		t.Fatal(err)
	}

	// The snapshot's reader waits at the hook; the writer goes on.
	for i := range 3000 {
		switch i % 6 {
		case 0:
			must(e.Release(row((i*7919)%rows), 2)) // rows in every chunk
		case 1:
			must(e.Stock(row(rows+i), 3, 1)) // rows after the cut
		case 2:
			must(e.Confirm(fmt.Sprint("h", i%300)))
		case 3:
			must(e.Hold(fmt.Sprint("n", i), time.Second, []inventory.Demand{{Group: gk(sku(1000 + i%500)), N: 1}}))
		case 4:
			op := inventory.Capture(gk(sku(2000+i%500)), 1)
			op.IdempotencyKey = fmt.Sprint("late", i)
			must(e.Do(op, nil))
		case 5:
			must(e.CatalogDel(sku(i%300), ""))
		}
	}
	clock.Advance(10 * time.Second)
	for {
		backlog, err := e.Tick() // expiries of holds frozen as held
		if err != nil {
			t.Fatal(err)
		}
		if !backlog {
			break
		}
	}
	if e.Stats().Snapshots != 0 {
		t.Fatal("the snapshot was written while its reader was held")
	}
	close(release)
	e.snapshotWG.Wait()
	if e.Stats().Snapshots != 1 {
		t.Fatalf("%d snapshots written, want 1", e.Stats().Snapshots)
	}

	gotRows, gotSecs := loadNewestSnapshot(t, fs, "/d")
	if !slices.Equal(gotRows, wantRows) {
		t.Fatalf("the snapshot's %d rows are not the %d rows at its cut", len(gotRows), len(wantRows))
	}
	if !sectionsEqual(gotSecs, wantSecs) {
		t.Fatal("the snapshot's sections are not the state's at its cut")
	}
	// The check can tell: the state now is not the cut.
	var nowRows []inventory.Row
	var nowSecs []inventory.Section
	if err := e.read(func(s *inventory.State) { nowRows, nowSecs = s.Rows(), s.Sections() }); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(nowRows, wantRows) || sectionsEqual(nowSecs, wantSecs) {
		t.Fatal("the ops after the cut changed nothing the check can see")
	}
}

func sectionsEqual(a, b []inventory.Section) bool {
	return slices.EqualFunc(a, b, func(x, y inventory.Section) bool { return x.Tag == y.Tag && slices.Equal(x.Bytes, y.Bytes) })
}

// loadNewestSnapshot recovers a state from dir's newest snapshot file
// alone (copied into a directory of its own) and returns its rows and
// sections as that state encodes them.
func loadNewestSnapshot(t *testing.T, fs *vfs.Mem, dir string) ([]inventory.Row, []inventory.Section) {
	t.Helper()
	var newest string
	for _, name := range fs.Names() {
		if base := path.Base(name); path.Dir(name) == dir && strings.HasPrefix(base, "snapshot-") && strings.HasSuffix(base, ".snap") && base > newest {
			newest = base
		}
	}
	if newest == "" {
		t.Fatalf("no snapshot in %s: %v", dir, fs.Names())
	}
	f, err := fs.Open(path.Join(dir, newest))
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	alone := vfs.NewMem()
	alone.MkdirAll("/s")
	w, err := alone.Create("/s/" + newest)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(buf)
	w.Sync()
	w.Close()
	j, st, _, err := journal.Open(journal.Options{FS: alone, Dir: "/s"})
	if err != nil {
		t.Fatalf("recovering from %s alone: %v", newest, err)
	}
	j.Close()
	return st.Rows(), st.Sections()
}
