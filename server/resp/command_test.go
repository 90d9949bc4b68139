package resp

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"allot/catalog"
	"allot/inventory"
)

func words(s string) [][]byte {
	var out [][]byte
	for _, w := range strings.Split(s, " ") {
		if w == "<empty>" {
			w = ""
		}
		out = append(out, []byte(w))
	}
	return out
}

func keyed(op inventory.Op, key string) inventory.Op {
	op.IdempotencyKey = key
	return op
}

func TestDecodeOp(t *testing.T) {
	long := strings.Repeat("s", 65)
	cases := []struct {
		in     string
		op     inventory.Op
		detail string
	}{
		{"CAPTURE sku new retail 3", inventory.Capture(inventory.GroupKey{SKU: "sku", Condition: "new", Source: "retail"}, 3), ""},
		{"capture sku new retail 3", inventory.Capture(inventory.GroupKey{SKU: "sku", Condition: "new", Source: "retail"}, 3), ""},
		{"RELEASE s w c o 2147483647", inventory.Release(inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, 2147483647), ""},
		{"STOCK.SET s w c o 0 4611686018427387903", inventory.Stock(inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, 0, 4611686018427387903), ""},
		{"STOCK.GET s w c o", inventory.Get(inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}), ""},
		{"AVAILABLE s c o", inventory.Available(inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}), ""},
		{"CAPTURE sku new retail", inventory.Op{}, "wrong number of arguments for 'capture' command (CAPTURE <sku> <condition> <source> <n> [ID <key>])"},
		{"CAPTURE sku new retail 0", inventory.Op{}, "quantity must be an integer from 1 to 2147483647"},
		{"CAPTURE sku new retail 2147483648", inventory.Op{}, "quantity must be an integer from 1 to 2147483647"},
		{"CAPTURE sku new retail 1.5", inventory.Op{}, "quantity must be an integer from 1 to 2147483647"},
		{"CAPTURE sku new retail +1", inventory.Op{}, "quantity must be an integer from 1 to 2147483647"},
		{"CAPTURE sku new retail 99999999999999999999", inventory.Op{}, "quantity must be an integer from 1 to 2147483647"},
		{"CAPTURE <empty> new retail 1", inventory.Op{}, "sku is empty"},
		{"CAPTURE " + long + " new retail 1", inventory.Op{}, "sku is longer than 64 bytes"},
		{"CAPTURE s new ret\x01ail 1", inventory.Op{}, "source contains a control character"},
		{"CAPTURE s n\xffew retail 1", inventory.Op{}, "condition is not valid UTF-8"},
		{"RELEASE s w c o -1", inventory.Op{}, "quantity must be an integer from 1 to 2147483647"},
		{"STOCK.SET s w c o -1 5", inventory.Op{}, "count must be an integer from 0 to 4611686018427387903"},
		{"STOCK.SET s w c o x 5", inventory.Op{}, "count must be an integer from 0 to 4611686018427387903"},
		{"STOCK.SET s w c o 1 4611686018427387904", inventory.Op{}, "price must be an integer from 0 to 4611686018427387903"},
		{"STOCK.GET s <empty> c o", inventory.Op{}, "warehouse is empty"},
		{"AVAILABLE s c o extra", inventory.Op{}, "wrong number of arguments for 'available' command (AVAILABLE <sku> <condition> <source>)"},
		// Contract v2.
		{"CAPTURE s c o 2 ID k1", keyed(inventory.Capture(inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}, 2), "k1"), ""},
		{"CAPTURE s c o 2 id k1", keyed(inventory.Capture(inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}, 2), "k1"), ""},
		{"RELEASE s w c o 2 ID k1", keyed(inventory.Release(inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, 2), "k1"), ""},
		{"CAPTURE s c o 2 ID", inventory.Op{}, "wrong number of arguments for 'capture' command (CAPTURE <sku> <condition> <source> <n> [ID <key>])"},
		{"CAPTURE s c o 2 KEY k1", inventory.Op{}, "syntax error: expected ID <key> after the arguments, got 'KEY'"},
		{"CAPTURE s c o 2 ID <empty>", inventory.Op{}, "idempotency key is empty"},
		{"CAPTURE s c o 2 ID " + long, inventory.Op{}, "idempotency key is longer than 64 bytes"},
		{"HOLD h1 600000 s c o 2 t c o 1", inventory.Hold("h1", 600000, []inventory.Demand{{Group: inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}, N: 2}, {Group: inventory.GroupKey{SKU: "t", Condition: "c", Source: "o"}, N: 1}}), ""},
		{"HOLD h1 0 s c o 2", inventory.Op{}, "ttl must be an integer from 1 to 604800000 milliseconds"},
		{"HOLD h1 604800001 s c o 2", inventory.Op{}, "ttl must be an integer from 1 to 604800000 milliseconds"},
		{"HOLD h1 x s c o 2", inventory.Op{}, "ttl must be an integer from 1 to 604800000 milliseconds"},
		{"HOLD h1 1000 s c o", inventory.Op{}, "wrong number of arguments for 'hold' command (HOLD <hold> <ttl-ms> <sku> <condition> <source> <n> [<sku> <condition> <source> <n> ...])"},
		{"HOLD h1 1000 s c o 2 ID k", inventory.Op{}, "wrong number of arguments for 'hold' command (HOLD <hold> <ttl-ms> <sku> <condition> <source> <n> [<sku> <condition> <source> <n> ...])"},
		{"HOLD <empty> 1000 s c o 2", inventory.Op{}, "hold is empty"},
		{"HOLD h1 1000 s c o 0", inventory.Op{}, "line 1: quantity must be an integer from 1 to 2147483647"},
		{"HOLD h1 1000 " + strings.TrimSpace(strings.Repeat("s c o 1 ", 65)), inventory.Op{}, "a hold or an order takes 1 to 64 lines"},
		{"ORDER s c o 2", inventory.Order([]inventory.Demand{{Group: inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}, N: 2}}), ""},
		{"ORDER s c o 2 ID k9", keyed(inventory.Order([]inventory.Demand{{Group: inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}, N: 2}}), "k9"), ""},
		{"ORDER s c o 2 XX k9", inventory.Op{}, "syntax error: expected ID <key> after the lines, got 'XX'"},
		{"ORDER s c o", inventory.Op{}, "wrong number of arguments for 'order' command (ORDER <sku> <condition> <source> <n> [<sku> <condition> <source> <n> ...] [ID <key>])"},
		{"CONFIRM h1", inventory.Confirm("h1"), ""},
		{"CANCEL h1", inventory.Cancel("h1"), ""},
		{"HOLD.GET h1", inventory.HoldGet("h1"), ""},
		{"CONFIRM h1 ID k", inventory.Op{}, "wrong number of arguments for 'confirm' command (CONFIRM <hold>)"},
		{"CONFIRM <empty>", inventory.Op{}, "hold is empty"},
	}
	in := NewStringInterner(16)
	for _, c := range cases {
		args := words(c.in)
		name := Lookup(args[0])
		var op inventory.Op
		detail := DecodeOp(name, args, in, &op)
		if detail != c.detail {
			t.Errorf("%q: detail %q, want %q", c.in, detail, c.detail)
			continue
		}
		if detail == "" && !reflect.DeepEqual(op, c.op) {
			t.Errorf("%q: op %+v, want %+v", c.in, op, c.op)
		}
	}
}

func TestLookup(t *testing.T) {
	for word, want := range map[string]Name{
		"CAPTURE": NameCapture, "stock.set": NameStockSet, "Stock.Get": NameStockGet,
		"ping": NamePing, "HELLO": NameHello, "client": NameClient, "COMMAND": NameCommand,
		"auth": NameAuth, "quit": NameQuit, "GET": NameUnknown, "": NameUnknown, "CAPTUREX": NameUnknown,
	} {
		if got := Lookup([]byte(word)); got != want {
			t.Errorf("Lookup(%q) = %v, want %v", word, got, want)
		}
	}
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "-0": 0, "42": 42, "007": 7, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63} {
		if got, ok := ParseInt([]byte(in)); !ok || got != want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-", "+1", " 1", "1 ", "1e3", "0x10", "9223372036854775808", "-9223372036854775809", "99999999999999999999"} {
		if got, ok := ParseInt([]byte(in)); ok {
			t.Errorf("ParseInt(%q) = %d, want a failure", in, got)
		}
	}
}

func TestStringInternerBound(t *testing.T) {
	in := NewStringInterner(2)
	a := in.Intern([]byte("a"))
	in.Intern([]byte("b"))
	in.Intern([]byte("c"))
	if len(in.table) != 2 || a != "a" || in.Intern([]byte("c")) != "c" {
		t.Fatalf("table %v", in.table)
	}
}

// TestStringInternerRemembersIDsOnly: a string longer than any valid id
// is answered but not remembered, so that garbage sent as SKUs cannot pin
// entriesMax commands' worth of memory.
func TestStringInternerRemembersIDsOnly(t *testing.T) {
	in := NewStringInterner(16)
	long := strings.Repeat("x", inventory.IDBytesMax+1)
	id := strings.Repeat("y", inventory.IDBytesMax)
	if got := in.Intern([]byte(long)); got != long {
		t.Fatalf("Intern(long) = %q", got)
	}
	if got := in.Intern([]byte(id)); got != id {
		t.Fatalf("Intern(id) = %q", got)
	}
	if _, ok := in.table[long]; ok || len(in.table) != 1 {
		t.Fatalf("table holds %d strings (long one: %v), want only the %d-byte id", len(in.table), ok, inventory.IDBytesMax)
	}
}

// TestStringInternerRecentSlots: strings that share a slot of the recent
// cache (same length, same end bytes) and strings past the table's bound
// each come back equal to what was asked, however they interleave.
func TestStringInternerRecentSlots(t *testing.T) {
	in := NewStringInterner(8)
	var ids []string
	for _, mid := range "abcdefghijklmnopqrstuvwxyz" {
		ids = append(ids, "w"+string(mid)+"1", "sku-"+string(mid)+"x")
	}
	for round := range 3 {
		for i, id := range ids {
			if got := in.Intern([]byte(id)); got != id {
				t.Fatalf("round %d, id %d: Intern(%q) = %q", round, i, id, got)
			}
			if got := in.Intern([]byte(ids[(i*7)%len(ids)])); got != ids[(i*7)%len(ids)] {
				t.Fatalf("round %d: Intern(%q) = %q", round, ids[(i*7)%len(ids)], got)
			}
		}
	}
	if len(in.table) != 8 {
		t.Fatalf("table holds %d strings, want its bound 8", len(in.table))
	}
}

func TestDecodeOpDoesNotAllocateForKnownIDs(t *testing.T) {
	in := NewStringInterner(16)
	args := words("CAPTURE sku-1 new retail 3")
	var op inventory.Op
	DecodeOp(NameCapture, args, in, &op)
	allocs := testing.AllocsPerRun(100, func() {
		DecodeOp(Lookup(args[0]), args, in, &op)
	})
	if allocs != 0 {
		t.Fatalf("DecodeOp allocated %.0f times per command", allocs)
	}
}

func BenchmarkDecodeOp(b *testing.B) {
	in := NewStringInterner(internBenchEntries)
	var cmds [][][]byte
	for i := range 1000 {
		cmds = append(cmds, words(fmt.Sprintf("CAPTURE sku-%06d new retail %d", i, i%3+1)))
	}
	var op inventory.Op
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		args := cmds[i%len(cmds)]
		i++
		if d := DecodeOp(NameCapture, args, in, &op); d != "" {
			b.Fatal(d)
		}
	}
}

const internBenchEntries = 4096

// A connection's request keeps its query between searches: the second
// search reuses the first one's Query and keeps nothing of it.
func TestDecodeSearchReusesQuery(t *testing.T) {
	in := NewStringInterner(16)
	var op inventory.Op
	words := func(ws ...string) [][]byte {
		var out [][]byte
		for _, w := range ws {
			out = append(out, []byte(w))
		}
		return out
	}
	if d := DecodeOp(NameSearch, words("SEARCH", "ab", "BRAND", "x", "OFFSET", "3", "LIMIT", "7"), in, &op); d != "" {
		t.Fatal(d)
	}
	first := op.Query
	if *first != (catalog.Query{Prefix: "ab", Brand: "x", Offset: 3, Limit: 7}) {
		t.Fatalf("first query %+v", *first)
	}
	if d := DecodeOp(NameSearch, words("SEARCH", "cd"), in, &op); d != "" {
		t.Fatal(d)
	}
	if op.Query != first || *op.Query != (catalog.Query{Prefix: "cd", Limit: catalog.LimitDefault}) {
		t.Fatalf("second query %p %+v, want the same Query holding only the prefix", op.Query, *op.Query)
	}
}
