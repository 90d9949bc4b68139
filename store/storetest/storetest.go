package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
)

// Opener returns a fresh store for one subtest.
type Opener func(t *testing.T) store.Store

// timeout bounds each subtest's store calls, so that a hung server fails
// the test with a message instead of hanging the suite.
const timeout = 2 * time.Minute

// Run runs the conformance suite against the stores open returns.
func Run(t *testing.T, open Opener) {
	t.Run("CaptureAcrossWarehousesInOrder", func(t *testing.T) { testCaptureOrder(t, open) })
	t.Run("CaptureEverything", func(t *testing.T) { testCaptureEverything(t, open) })
	t.Run("InsufficientLeavesRowsUntouched", func(t *testing.T) { testInsufficient(t, open) })
	t.Run("Release", func(t *testing.T) { testRelease(t, open) })
	t.Run("ReleaseUnknownRow", func(t *testing.T) { testReleaseUnknown(t, open) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, open) })
	t.Run("ReleaseOverflow", func(t *testing.T) { testReleaseOverflow(t, open) })
	t.Run("ConcurrentCapturesNeverOversell", func(t *testing.T) { testConcurrentCaptures(t, open) })
	t.Run("ConcurrentCapturesAndReleases", func(t *testing.T) { testConcurrentMixed(t, open) })
	t.Run("LoadReplaces", func(t *testing.T) { testLoadReplaces(t, open) })
	t.Run("LoadRejectsBadRows", func(t *testing.T) { testLoadRejectsBadRows(t, open) })
	t.Run("RowsRoundTrip", func(t *testing.T) { testRowsRoundTrip(t, open) })
}

// fixture is one subtest's store and context.
type fixture struct {
	t   *testing.T
	ctx context.Context
	st  store.Store
}

func setUp(t *testing.T, open Opener, rows []inventory.Row) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	st := open(t)
	if st == nil {
		t.Fatal("storetest: open returned a nil store")
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := st.Load(ctx, rows); err != nil {
		t.Fatalf("Load(%d rows): %v", len(rows), err)
	}
	return &fixture{t: t, ctx: ctx, st: st}
}

func (f *fixture) session() store.Session {
	f.t.Helper()
	se, err := f.st.Session(f.ctx)
	if err != nil {
		f.t.Fatalf("Session: %v", err)
	}
	f.t.Cleanup(func() {
		if err := se.Close(); err != nil {
			f.t.Errorf("Session.Close: %v", err)
		}
	})
	return se
}

// rows reads back every row as a map.
func (f *fixture) rows() map[inventory.RowKey]inventory.Row {
	f.t.Helper()
	rows, err := f.st.Rows(f.ctx)
	if err != nil {
		f.t.Fatalf("Rows: %v", err)
	}
	m := make(map[inventory.RowKey]inventory.Row, len(rows))
	for _, r := range rows {
		if _, dup := m[r.Key]; dup {
			f.t.Fatalf("Rows returned %v twice", r.Key)
		}
		m[r.Key] = r
	}
	return m
}

// wantRows checks that the store holds exactly want (rows absent from want
// must be absent or hold count 0, since some stores never delete a row).
func (f *fixture) wantRows(why string, want []inventory.Row) {
	f.t.Helper()
	got := f.rows()
	for _, w := range want {
		g, ok := got[w.Key]
		if !ok {
			f.t.Errorf("%s: row %v missing", why, w.Key)
			continue
		}
		if g.Count != w.Count || g.Price != w.Price {
			f.t.Errorf("%s: row %v holds count %d price %d, want %d and %d", why, w.Key, g.Count, g.Price, w.Count, w.Price)
		}
		delete(got, w.Key)
	}
	for k, g := range got {
		if g.Count != 0 {
			f.t.Errorf("%s: unexpected row %v with count %d", why, k, g.Count)
		}
	}
}

func (f *fixture) capture(se store.Session, g inventory.GroupKey, n int64) inventory.Result {
	f.t.Helper()
	res, err := se.Capture(f.ctx, g, n, nil)
	if err != nil {
		f.t.Fatalf("Capture(%v, %d): %v", g, n, err)
	}
	return res
}

func (f *fixture) release(se store.Session, k inventory.RowKey, n int64) inventory.Result {
	f.t.Helper()
	res, err := se.Release(f.ctx, k, n)
	if err != nil {
		f.t.Fatalf("Release(%v, %d): %v", k, n, err)
	}
	return res
}

// The group of most subtests. Its warehouses' byte order ("B" < "a" < "b"
// < "é") differs from their insertion order, from a case-folded order and
// from a locale collation, so a store that sorts any other way fails.
var group = inventory.GroupKey{SKU: "sku-000001", Condition: "new", Source: "supplier"}

func groupRows() []inventory.Row {
	return []inventory.Row{
		{Key: group.Row("é"), Count: 5, Price: 400},
		{Key: group.Row("b"), Count: 2, Price: 500},
		{Key: group.Row("a"), Count: 0, Price: 600},
		{Key: group.Row("B"), Count: 1, Price: 700},
		// Neighbours that share a part of the key and must never be touched.
		{Key: inventory.RowKey{SKU: "sku-000001", Warehouse: "B", Condition: "used", Source: "supplier"}, Count: 9, Price: 1},
		{Key: inventory.RowKey{SKU: "sku-000002", Warehouse: "B", Condition: "new", Source: "supplier"}, Count: 9, Price: 2},
		{Key: inventory.RowKey{SKU: "sku-000001", Warehouse: "a", Condition: "new", Source: "returns"}, Count: 9, Price: 3},
	}
}

// withCounts returns rows with the counts of the group's warehouses set.
func withCounts(rows []inventory.Row, counts map[string]int64) []inventory.Row {
	out := slices.Clone(rows)
	for i := range out {
		if c, ok := counts[out[i].Key.Warehouse]; ok && out[i].Key.Group() == group {
			out[i].Count = c
		}
	}
	return out
}

func sumLines(lines []inventory.Line) int64 {
	var n int64
	for _, l := range lines {
		n += l.Count
	}
	return n
}

func testCaptureOrder(t *testing.T, open Opener) {
	f := setUp(t, open, groupRows())
	se := f.session()
	res := f.capture(se, group, 4)
	want := []inventory.Line{{Warehouse: "B", Count: 1}, {Warehouse: "b", Count: 2}, {Warehouse: "é", Count: 1}}
	if res.Code != inventory.CodeOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("capture 4: %v %v, want ok %v (warehouses in ascending byte order, empty ones skipped)", res.Code, res.Lines, want)
	}
	f.wantRows("after capturing 4", withCounts(groupRows(), map[string]int64{"B": 0, "b": 0, "é": 4}))

	// With a caller's buffer: the lines must be right whatever it held.
	buf := make([]inventory.Line, 3, 8)
	buf[0] = inventory.Line{Warehouse: "junk", Count: 99}
	res, err := se.Capture(f.ctx, group, 3, buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := []inventory.Line{{Warehouse: "é", Count: 3}}; res.Code != inventory.CodeOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("capture 3 into a used buffer: %v %v, want ok %v", res.Code, res.Lines, want)
	}
	f.wantRows("after capturing 3 more", withCounts(groupRows(), map[string]int64{"B": 0, "b": 0, "é": 1}))
}

func testCaptureEverything(t *testing.T, open Opener) {
	f := setUp(t, open, groupRows())
	se := f.session()
	res := f.capture(se, group, 8)
	want := []inventory.Line{{Warehouse: "B", Count: 1}, {Warehouse: "b", Count: 2}, {Warehouse: "é", Count: 5}}
	if res.Code != inventory.CodeOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("capture all 8: %v %v, want ok %v", res.Code, res.Lines, want)
	}
	if res := f.capture(se, group, 1); res.Code != inventory.CodeInsufficient || res.Available != 0 {
		t.Fatalf("capture 1 of an empty group: %v available %d, want insufficient with 0", res.Code, res.Available)
	}
	f.wantRows("after capturing everything", withCounts(groupRows(), map[string]int64{"B": 0, "b": 0, "é": 0}))
}

func testInsufficient(t *testing.T, open Opener) {
	f := setUp(t, open, groupRows())
	se := f.session()
	for _, n := range []int64{9, 100, inventory.QuantityMax} {
		res := f.capture(se, group, n)
		if res.Code != inventory.CodeInsufficient || res.Available != 8 {
			t.Fatalf("capture %d of 8: %v available %d, want insufficient with available 8", n, res.Code, res.Available)
		}
	}
	unknown := inventory.GroupKey{SKU: "sku-999999", Condition: "new", Source: "supplier"}
	if res := f.capture(se, unknown, 1); res.Code != inventory.CodeInsufficient || res.Available != 0 {
		t.Fatalf("capture from an unknown group: %v available %d, want insufficient with 0", res.Code, res.Available)
	}
	f.wantRows("after refused captures", groupRows())
}

func testRelease(t *testing.T, open Opener) {
	f := setUp(t, open, groupRows())
	se := f.session()
	if res := f.release(se, group.Row("a"), 3); res.Code != inventory.CodeOK || res.Count != 3 {
		t.Fatalf("release 3 to a row of 0: %v count %d, want ok 3", res.Code, res.Count)
	}
	if res := f.release(se, group.Row("é"), 2); res.Code != inventory.CodeOK || res.Count != 7 {
		t.Fatalf("release 2 to a row of 5: %v count %d, want ok 7", res.Code, res.Count)
	}
	f.wantRows("after releases", withCounts(groupRows(), map[string]int64{"a": 3, "é": 7}))
	// The released units are captured in warehouse order like any others.
	res := f.capture(se, group, 5)
	want := []inventory.Line{{Warehouse: "B", Count: 1}, {Warehouse: "a", Count: 3}, {Warehouse: "b", Count: 1}}
	if res.Code != inventory.CodeOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("capture 5 after releases: %v %v, want %v", res.Code, res.Lines, want)
	}
}

func testReleaseUnknown(t *testing.T, open Opener) {
	f := setUp(t, open, groupRows())
	se := f.session()
	for _, k := range []inventory.RowKey{
		group.Row("c"),
		{SKU: "sku-999999", Warehouse: "B", Condition: "new", Source: "supplier"},
		{SKU: "sku-000001", Warehouse: "B", Condition: "new", Source: "returns"},
	} {
		if res := f.release(se, k, 1); res.Code != inventory.CodeNotFound {
			t.Errorf("release to unknown row %v: %v, want not_found", k, res.Code)
		}
	}
	f.wantRows("after releases to unknown rows", groupRows())
}

func testBadInput(t *testing.T, open Opener) {
	f := setUp(t, open, groupRows())
	se := f.session()
	long := strings.Repeat("x", inventory.IDBytesMax+1)
	badIDs := map[string]string{
		"empty":             "",
		"65 bytes":          long,
		"control character": "a\x01b",
		"tab":               "a\tb",
		"newline":           "a\nb",
		"DEL":               "a\x7fb",
	}
	for name, id := range badIDs {
		for field := range 3 {
			g := group
			switch field {
			case 0:
				g.SKU = id
			case 1:
				g.Condition = id
			case 2:
				g.Source = id
			}
			if res := f.capture(se, g, 1); res.Code != inventory.CodeInvalid || res.Detail == "" {
				t.Errorf("capture with a %s id in field %d: %v %q, want invalid with a detail", name, field, res.Code, res.Detail)
			}
		}
		for field := range 4 {
			k := group.Row("B")
			switch field {
			case 0:
				k.SKU = id
			case 1:
				k.Warehouse = id
			case 2:
				k.Condition = id
			case 3:
				k.Source = id
			}
			if res := f.release(se, k, 1); res.Code != inventory.CodeInvalid || res.Detail == "" {
				t.Errorf("release with a %s id in field %d: %v %q, want invalid with a detail", name, field, res.Code, res.Detail)
			}
		}
	}
	for _, n := range []int64{0, -1, inventory.QuantityMax + 1, inventory.CountMax, -1 << 63} {
		if res := f.capture(se, group, n); res.Code != inventory.CodeInvalid || res.Detail == "" {
			t.Errorf("capture of %d: %v %q, want invalid with a detail", n, res.Code, res.Detail)
		}
		if res := f.release(se, group.Row("B"), n); res.Code != inventory.CodeInvalid || res.Detail == "" {
			t.Errorf("release of %d: %v %q, want invalid with a detail", n, res.Code, res.Detail)
		}
	}
	// The limits themselves are valid.
	edge := inventory.GroupKey{SKU: strings.Repeat("s", inventory.IDBytesMax), Condition: "new", Source: "supplier"}
	if res := f.capture(se, edge, inventory.QuantityMax); res.Code != inventory.CodeInsufficient {
		t.Errorf("capture of %d from a group with a 64-byte sku: %v %q, want insufficient", int64(inventory.QuantityMax), res.Code, res.Detail)
	}
	f.wantRows("after bad input", groupRows())
}

func testReleaseOverflow(t *testing.T, open Opener) {
	rows := groupRows()
	rows[0].Count = inventory.CountMax - 1 // é
	f := setUp(t, open, rows)
	se := f.session()
	if res := f.release(se, group.Row("é"), 2); res.Code == inventory.CodeOK {
		t.Fatalf("release of 2 to a row of 2^62-2: ok with count %d, want a refusal", res.Count)
	}
	f.wantRows("after a refused overflowing release", rows)
	if res := f.release(se, group.Row("é"), 1); res.Code != inventory.CodeOK || res.Count != inventory.CountMax {
		t.Fatalf("release of 1 to a row of 2^62-2: %v count %d, want ok 2^62-1", res.Code, res.Count)
	}
	// A capture from a group whose total is beyond int64 range in some
	// representations still allocates in order.
	res := f.capture(se, group, 4)
	want := []inventory.Line{{Warehouse: "B", Count: 1}, {Warehouse: "b", Count: 2}, {Warehouse: "é", Count: 1}}
	if res.Code != inventory.CodeOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("capture 4 beside a full row: %v %v, want %v", res.Code, res.Lines, want)
	}
}

// concurrentRows is a group spread over three warehouses, and a quiet
// neighbour group.
func concurrentRows(perWarehouse int64) []inventory.Row {
	return []inventory.Row{
		{Key: group.Row("w1"), Count: perWarehouse, Price: 400},
		{Key: group.Row("w2"), Count: perWarehouse, Price: 400},
		{Key: group.Row("w3"), Count: perWarehouse, Price: 400},
		{Key: inventory.RowKey{SKU: "sku-000002", Warehouse: "w1", Condition: "new", Source: "supplier"}, Count: 7, Price: 1},
	}
}

const workers = 16

// checkCaptureResult checks one successful capture's lines.
func checkCaptureResult(res inventory.Result, n int64) error {
	if sumLines(res.Lines) != n {
		return fmt.Errorf("capture of %d returned lines %v summing to %d", n, res.Lines, sumLines(res.Lines))
	}
	for i, l := range res.Lines {
		if l.Count <= 0 {
			return fmt.Errorf("capture of %d returned line %v with count <= 0", n, l)
		}
		if i > 0 && res.Lines[i-1].Warehouse >= l.Warehouse {
			return fmt.Errorf("capture of %d returned lines %v out of warehouse order", n, res.Lines)
		}
	}
	return nil
}

func testConcurrentCaptures(t *testing.T, open Opener) {
	const perWarehouse = 100
	f := setUp(t, open, concurrentRows(perWarehouse))
	sessions := make([]store.Session, workers)
	for i := range sessions {
		sessions[i] = f.session()
	}
	taken := make([]int64, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			se := sessions[w]
			lines := make([]inventory.Line, 0, 4)
			for i := 0; ; i++ {
				n := int64(1 + (i+w)%3)
				res, err := se.Capture(f.ctx, group, n, lines)
				if err != nil {
					errs <- err
					return
				}
				switch res.Code {
				case inventory.CodeOK:
					if err := checkCaptureResult(res, n); err != nil {
						errs <- err
						return
					}
					taken[w] += n
				case inventory.CodeInsufficient:
					if res.Available == 0 {
						return
					}
					if res.Available < 0 || res.Available >= n {
						errs <- fmt.Errorf("capture of %d refused with available %d", n, res.Available)
						return
					}
				default:
					errs <- fmt.Errorf("capture of %d: %v %s", n, res.Code, res.Detail)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var total int64
	for _, n := range taken {
		total += n
	}
	if total != 3*perWarehouse {
		t.Errorf("%d workers captured %d units of a group holding %d", workers, total, 3*perWarehouse)
	}
	want := concurrentRows(0)
	want[3].Count = 7
	f.wantRows("after the group was emptied concurrently", want)
}

func testConcurrentMixed(t *testing.T, open Opener) {
	const perWarehouse, opsPerWorker = 5, 60
	f := setUp(t, open, concurrentRows(perWarehouse))
	sessions := make([]store.Session, workers)
	for i := range sessions {
		sessions[i] = f.session()
	}
	captured := make([]int64, workers)
	released := make([][3]int64, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			se := sessions[w]
			for i := range opsPerWorker {
				n := int64(1 + (i*7+w)%3)
				if (i+w)%2 == 0 {
					wh := (i + w) % 3
					res, err := se.Release(f.ctx, group.Row(fmt.Sprintf("w%d", wh+1)), n)
					if err != nil || res.Code != inventory.CodeOK {
						errs <- fmt.Errorf("release of %d: %v %v %s", n, err, res.Code, res.Detail)
						return
					}
					released[w][wh] += n
					continue
				}
				res, err := se.Capture(f.ctx, group, n, nil)
				if err != nil {
					errs <- err
					return
				}
				switch res.Code {
				case inventory.CodeOK:
					if err := checkCaptureResult(res, n); err != nil {
						errs <- err
						return
					}
					captured[w] += n
				case inventory.CodeInsufficient:
				default:
					errs <- fmt.Errorf("capture of %d: %v %s", n, res.Code, res.Detail)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := int64(3 * perWarehouse)
	for w := range workers {
		total += released[w][0] + released[w][1] + released[w][2] - captured[w]
	}
	rows := f.rows()
	var got int64
	for _, wh := range []string{"w1", "w2", "w3"} {
		r := rows[group.Row(wh)]
		if r.Count < 0 {
			t.Errorf("row %v below zero: %d", r.Key, r.Count)
		}
		got += r.Count
	}
	if got != total {
		t.Errorf("group holds %d, want initial + releases - captures = %d", got, total)
	}
}

func testLoadReplaces(t *testing.T, open Opener) {
	f := setUp(t, open, groupRows())
	se := f.session()
	f.capture(se, group, 2)
	next := []inventory.Row{
		{Key: group.Row("b"), Count: 4, Price: 900},
		{Key: group.Row("z"), Count: 1, Price: 901},
		{Key: inventory.RowKey{SKU: "sku-000003", Warehouse: "w1", Condition: "new", Source: "supplier"}, Count: 2, Price: 902},
	}
	if err := f.st.Load(f.ctx, next); err != nil {
		t.Fatalf("second Load: %v", err)
	}
	f.wantRows("after a second Load", next)
	se2 := f.session()
	res := f.capture(se2, group, 5)
	want := []inventory.Line{{Warehouse: "b", Count: 4}, {Warehouse: "z", Count: 1}}
	if res.Code != inventory.CodeOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("capture 5 after a second Load: %v %v, want %v (rows of the first Load must be gone or empty)", res.Code, res.Lines, want)
	}
	gone := inventory.GroupKey{SKU: "sku-000002", Condition: "new", Source: "supplier"}
	if res := f.capture(se2, gone, 1); res.Code != inventory.CodeInsufficient {
		t.Fatalf("capture from a group only the first Load had: %v, want insufficient", res.Code)
	}
}

// testLoadRejectsBadRows: a Load holding a row that breaks the input rules
// is refused with an error naming what was wrong, before it changes
// anything.
func testLoadRejectsBadRows(t *testing.T, open Opener) {
	good := inventory.Row{Key: inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, Count: 3}
	f := setUp(t, open, []inventory.Row{good})
	bad := good
	bad.Key.Warehouse = "w\n"
	other := inventory.Row{Key: inventory.RowKey{SKU: "s2", Warehouse: "w", Condition: "c", Source: "o"}, Count: 5}
	if err := f.st.Load(f.ctx, []inventory.Row{other, bad}); err == nil || !strings.Contains(err.Error(), "control character") {
		t.Fatalf("Load with a bad warehouse id: %v", err)
	}
	f.wantRows("after a refused Load", []inventory.Row{good})
}

func testRowsRoundTrip(t *testing.T, open Opener) {
	rows := groupRows()
	rows = append(rows,
		inventory.Row{Key: inventory.RowKey{SKU: strings.Repeat("s", 64), Warehouse: strings.Repeat("w", 64), Condition: strings.Repeat("c", 64), Source: strings.Repeat("o", 64)}, Count: inventory.CountMax, Price: inventory.CountMax},
		inventory.Row{Key: inventory.RowKey{SKU: "日本語-sku", Warehouse: "склад", Condition: "d'état", Source: `"quoted"; --`}, Count: 3, Price: 0},
		inventory.Row{Key: inventory.RowKey{SKU: "a:b", Warehouse: "c:d", Condition: "e|f", Source: "g h"}, Count: 0, Price: 12},
	)
	for i := range 200 {
		rows = append(rows, inventory.Row{Key: inventory.RowKey{SKU: fmt.Sprintf("bulk-%04d", i), Warehouse: fmt.Sprintf("w%d", i%3+1), Condition: "new", Source: "supplier"}, Count: int64(i % 11), Price: int64(400 + i)})
	}
	f := setUp(t, open, rows)
	f.wantRows("right after Load", rows)
	got := f.rows()
	if len(got) != len(rows) {
		t.Errorf("Rows returned %d rows, %d were loaded", len(got), len(rows))
	}
}
