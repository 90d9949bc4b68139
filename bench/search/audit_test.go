package search

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"allot/bench"
	"allot/catalog"
	"allot/inventory"
	"allot/server/servertest"
	"allot/services/servicestest"
	"allot/store"
)

// edgeCatalog is a catalog of titles and brands that a store's own
// matching could get wrong: LIKE wildcards and its escape character, Lua
// pattern characters, titles that are prefixes of others, equal folded
// titles told apart by the SKU alone, letters whose folding is not the
// obvious one, accents precomposed or not, the largest code point.
func edgeCatalog() ([]catalog.Record, []inventory.Row) {
	titles := []string{
		"100% cotton", "100 percent", "1000 nights", "100x cotton",
		"a_b", "axb", "a%b", "aab", `a\b`, `a\\b`, "a.b", "a(b", "a[b", "a^b", "a$b", "a-b", "a+b", "a*b", "a?b", "a%%",
		"ab", "ab ", "ab c", "abc", "AB", "Ab",
		"Same", "SAME", "same",
		"Straße", "STRAẞE", "strasse", "ſoft", "Soft", "\u212Aelvin", "kelvin",
		"σακάκι", "ΣΑΜΠΟΥΆΝ", "σαλάτα", "Ωμέγα", "ωραίος", "µ-meter", "μ-meter", "ι-text", "ᾳ-text",
		"café", "cafe\u0301", "CAFÉ", "İstanbul", "istanbul", "ılık", "Işık",
		"\U0010FFFF", "\U0010FFFF\U0010FFFF", "\U0010FFFFa", "\uFFFF",
		"日本語", "Ꭰ-cherokee", "ꭰ-cherokee",
	}
	brands := []string{"Acme", "a_b", "a%b", "axb", `a\b`, "Über", "über", "ACME & Söhne"}
	skus := []string{"b", "A", "a", "B", "0"}
	var recs []catalog.Record
	var rows []inventory.Row
	for i, title := range titles {
		sku := fmt.Sprintf("%s%03d", skus[i%len(skus)], len(titles)-i)
		recs = append(recs, catalog.Record{SKU: sku, Title: title, Brand: brands[i%len(brands)]})
		if i%3 != 0 {
			rows = append(rows, inventory.Row{Key: inventory.RowKey{SKU: sku, Warehouse: "w1", Condition: "new", Source: "own"}, Count: int64(i)})
		}
	}
	return recs, rows
}

var edgeQueries = func() []catalog.Query {
	var qs []catalog.Query
	for _, p := range []string{
		"100%", "100_", "100", "a_", "a%", "a%%", `a\`, `a\\`, "a.", "a(", "a[", "a^", "a$", "a-", "a+", "a*", "a?", "a",
		"ab", "AB ", "ab c", "same", "S", "STRASS", "straß", "STRAẞ", "soft", "K", "σα", "Σ", "ω", "µ", "Μ", "ι", "Ι",
		"café", "cafe", "CAFE\u0301", "İ", "i", "ı", "I", "\U0010FFFF", "\uFFFF", "日", "ꭰ", "Ꭰ",
	} {
		qs = append(qs, catalog.Query{Prefix: p, Limit: 1000})
	}
	for _, b := range []string{"a_", "a%", `a\`, "ü", "acme", "ACME &", "x"} {
		qs = append(qs, catalog.Query{Prefix: "a", Brand: b, Limit: 1000})
	}
	for _, c := range []struct{ off, lim int }{{0, 1}, {1, 1}, {3, 2}, {5, 20}, {60, 20}, {catalog.OffsetMax, catalog.LimitMax}} {
		qs = append(qs, catalog.Query{Prefix: "a", Offset: c.off, Limit: c.lim})
		qs = append(qs, catalog.Query{Prefix: "a", Brand: "a", Offset: c.off, Limit: c.lim})
	}
	return qs
}()

// edgeDiffs loads the edge catalog into st and returns every query whose
// answer differs from the Reference's.
func edgeDiffs(t *testing.T, st store.Store) []string {
	t.Helper()
	ctx := context.Background()
	recs, rows := edgeCatalog()
	if err := st.(store.Searcher).LoadCatalog(ctx, recs, rows); err != nil {
		t.Fatal(err)
	}
	ref, d := NewReference(recs, rows)
	if d != "" {
		t.Fatal(d)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	var diffs []string
	compared := 0
	for _, q := range edgeQueries {
		if d := q.Check(); d != "" {
			t.Fatalf("query %+v: %s", q, d)
		}
		want, _ := ref.Search(q)
		if len(want) > 0 {
			compared++
		}
		got, err := se.(store.SearchSession).Search(ctx, q, nil)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("query (prefix %q brand %q offset %d limit %d): %v", q.Prefix, q.Brand, q.Offset, q.Limit, err))
			continue
		}
		if d := Diff(got, want); d != "" {
			diffs = append(diffs, fmt.Sprintf("query (prefix %q brand %q offset %d limit %d): %s", q.Prefix, q.Brand, q.Offset, q.Limit, d))
		}
	}
	if compared < len(edgeQueries)/2 {
		t.Fatalf("only %d of %d queries have a result in the reference", compared, len(edgeQueries))
	}
	return diffs
}

// Every store answers the edge catalog's queries as the reference does.
func TestEdgeCatalogEveryStore(t *testing.T) {
	for _, c := range []struct{ store, server string }{
		{"embedded", ""}, {"allot", ""},
		{"postgres", "postgres"}, {"mysql", "mariadb"}, {"mysql-myisam", "mariadb"},
		{"redis", "redis"}, {"tarantool", "tarantool"}, {"naive-tarantool-search", "tarantool"},
	} {
		t.Run(c.store, func(t *testing.T) {
			cfg := store.Config{Durability: store.DurabilityNone, Workers: 1}
			switch c.store {
			case "embedded":
				cfg.DataDir = t.TempDir()
			case "allot":
				cfg.Durability = store.DurabilityWrite
				cfg.DataDir = t.TempDir()
				cfg.Addr = servertest.Start(t, servertest.Options{NoHTTP: true}).RESPAddr()
			default:
				servicestest.RequireDurability(t, c.server, store.DurabilityFsync)
				cfg.Durability = store.DurabilityFsync
			}
			st, err := store.Open(context.Background(), c.store, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if diffs := edgeDiffs(t, st); len(diffs) > 0 {
				t.Fatalf("%d of %d queries differ from the reference:\n%s", len(diffs), len(edgeQueries), strings.Join(diffs, "\n"))
			}
		})
	}
}

// A --brand-share that is not a number is refused, as one outside 0..1
// is: NaN compares false with both bounds, ran every query without a
// brand, and left a result that JSON cannot encode.
func TestBrandShareNaNRefused(t *testing.T) {
	for _, v := range []string{"NaN", "-0.1", "1.5"} {
		k := &Kind{}
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		k.RegisterFlags(fs)
		if err := fs.Parse([]string{"--brand-share", v}); err != nil {
			t.Fatal(err)
		}
		if err := k.Validate(bench.KindConfig{Ops: 100}); err == nil || !strings.Contains(err.Error(), "--brand-share") {
			t.Errorf("--brand-share %s: got %v, want an error naming the flag", v, err)
		}
	}
}

// lateStore answers as the reference does for its first good searches,
// then finds nothing: the catalog another load truncated, or a lease
// that ran out, in the middle of a run.
type lateStore struct {
	refStore
	good  int64
	calls atomic.Int64
}

func (s *lateStore) Session(context.Context) (store.Session, error) {
	return lateSession{refSession{&s.refStore}, s}, nil
}

type lateSession struct {
	refSession
	s *lateStore
}

func (l lateSession) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	if l.s.calls.Add(1) > l.s.good {
		return out[:0], nil
	}
	return l.refSession.Search(ctx, q, out)
}

// The check's sample spans the whole run: a store whose answers go wrong
// after the first thousand queries fails it.
func TestCheckSeesAnswersGoneWrongLate(t *testing.T) {
	w := workloadOf(t, 3000, 4000)
	res, err := Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 1, Store: "late"}, &lateStore{good: 1500})
	if err != nil {
		t.Fatal(err)
	}
	if res.Check.OK || res.Status != bench.StatusCheckFailed {
		t.Fatalf("a store that found nothing after query 1500 of 4000 passed the check (%d queries checked)", res.Extra["checked_queries"])
	}
	t.Logf("%d violations, first: %s", res.Check.ViolationCount, res.Check.Violations[0])
	// And the reference itself passes a run whose sample is spread.
	res, err = Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 3, Store: "ref"}, &refStore{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Check.OK {
		t.Fatalf("the reference failed: %v", res.Check.Violations)
	}
}

// sampleSlot finds exactly the sampled queries, which span the run.
func TestSampleSpansTheRun(t *testing.T) {
	for _, c := range []struct{ n, sample int }{{1000, 1000}, {1999, 1000}, {4000, 1000}, {200000, 1000}, {1001, 1000}} {
		seen := 0
		for i := range c.n {
			if j := sampleSlot(i, c.n, c.sample); j >= 0 {
				if sampleQuery(j, c.n, c.sample) != i || j != seen {
					t.Fatalf("n %d sample %d: query %d in slot %d, slot %d's query is %d", c.n, c.sample, i, j, j, sampleQuery(j, c.n, c.sample))
				}
				seen++
			}
		}
		if last := sampleQuery(c.sample-1, c.n, c.sample); seen != c.sample || c.n-last > c.n/c.sample+1 {
			t.Fatalf("n %d sample %d: %d slots, last query %d", c.n, c.sample, seen, last)
		}
	}
}
