package tarantool

import (
	"context"
	"strconv"
	"testing"
	"time"

	gotarantool "github.com/tarantool/go-tarantool/v2"

	"allot/store"
	"allot/store/storetest"
)

// spacesHolding returns the catalog spaces (named allot_catalog*) of the
// server that hold any of skus.
func spacesHolding(t *testing.T, skus ...string) []string {
	t.Helper()
	conn, err := connect(context.Background(), store.Config{Addr: AddrDefault, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const script = `
local skus, out = {...}, {}
for _, s in box.space._space:pairs() do
    local name = s[3]
    local sp = box.space[name]
    if string.sub(name, 1, 13) == 'allot_catalog' and sp ~= nil and sp.index[0] ~= nil then
        for _, sku in ipairs(skus) do
            if sp.index[0]:get({sku}) ~= nil then
                table.insert(out, name)
                break
            end
        end
    end
end
return out`
	args := make([]any, len(skus))
	for i, s := range skus {
		args[i] = s
	}
	var reply [][]string
	if err := conn.Do(gotarantool.NewEvalRequest(script).Args(args)).GetTyped(&reply); err != nil || len(reply) != 1 {
		t.Fatalf("listing catalog spaces: %v (reply %v)", err, reply)
	}
	return reply[0]
}

func openCatalogStore(t *testing.T) *Store {
	t.Helper()
	d := requireServer(t)
	st, err := store.Open(context.Background(), "tarantool", store.Config{Durability: d, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return st.(*Store)
}

// Two bench runs that load a catalog on one Tarantool at once (two
// benches, a bench and a test) each search their own records, and no
// space holds a catalog once its store is closed. With one fixed space,
// allot_catalog, each load truncated and refilled the other's: a run's
// check then failed, or passed on another run's records.
func TestCatalogsLoadedAtOnce(t *testing.T) {
	ctx := context.Background()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	tagA, tagB := "a"+run, "b"+run
	a, b := openCatalogStore(t), openCatalogStore(t)
	closed := false
	defer func() {
		if !closed {
			a.Close()
			b.Close()
		}
	}()
	p := storetest.LoadCatalogsAtOnce(t, ctx, a, b, tagA, tagB)

	// A reload of a beside b's searches.
	p.ReloadBeside(t)

	closed = true
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if left := spacesHolding(t, p.RecsA[0].SKU, p.RecsB[0].SKU); len(left) > 0 {
		t.Errorf("spaces %v still hold the catalogs of two closed stores", left)
	}
}

// A bench killed in the middle of a run never calls Close. Its catalog
// (a million records is hundreds of MB of memtx memory) must not stay on
// the server: it goes when the store's connection does.
func TestCatalogOfALostConnectionIsDropped(t *testing.T) {
	ctx := context.Background()
	tag := "lost" + strconv.FormatInt(time.Now().UnixNano(), 36)
	st := openCatalogStore(t)
	recs, rows := storetest.TaggedCatalog(tag, 500)
	if err := st.LoadCatalog(ctx, recs, rows); err != nil {
		st.Close()
		t.Fatal(err)
	}
	if held := spacesHolding(t, recs[0].SKU); len(held) != 1 {
		st.Close()
		t.Fatalf("after the load, spaces %v hold the catalog, want one", held)
	}
	st.conn.Close() // the process is gone; Store.Close never runs
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := spacesHolding(t, recs[0].SKU)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after its store's connection closed, spaces %v still hold its catalog", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
