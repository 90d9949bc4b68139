package server_test

import (
	"strings"
	"testing"

	"allot/server/servertest"
)

// TestRedisCLICheckout runs the contract v2 commands through redis-cli.
func TestRedisCLICheckout(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"STOCK.SET", "sku-1", "w1", "new", "retail", "5", "100"}, "OK\n"},
		{[]string{"ORDER", "sku-1", "new", "retail", "1", "ID", "o-1"}, "1) 1) \"sku-1\"\n   2) \"w1\"\n   3) \"new\"\n   4) \"retail\"\n   5) (integer) 1\n"},
		{[]string{"ORDER", "sku-1", "new", "retail", "1", "ID", "o-1"}, "1) 1) \"sku-1\"\n   2) \"w1\"\n   3) \"new\"\n   4) \"retail\"\n   5) (integer) 1\n"},
		{[]string{"ORDER", "sku-1", "new", "retail", "2", "ID", "o-1"}, "(error) MISMATCH key o-1 was used with other arguments\n"},
		{[]string{"HOLD", "cart", "600000", "sku-1", "new", "retail", "9"}, "(error) INSUFFICIENT sku-1 new retail available 4\n"},
		{[]string{"CONFIRM", "cart"}, "(error) NOTFOUND no such hold cart\n"},
		{[]string{"HOLD.GET", "cart"}, "(nil)\n"},
		{[]string{"CAPTURE", "sku-1", "new", "retail", "1", "ID", "c-1"}, "1) 1) \"w1\"\n   2) (integer) 1\n"},
		{[]string{"CAPTURE", "sku-1", "new", "retail", "1", "ID", "c-1"}, "1) 1) \"w1\"\n   2) (integer) 1\n"},
		{[]string{"AVAILABLE", "sku-1", "new", "retail"}, "(integer) 3\n"},
		{[]string{"HOLD", "cart", "0", "sku-1", "new", "retail", "1"}, "(error) ERR ttl must be an integer from 1 to 604800000 milliseconds\n"},
	}
	for _, st := range steps {
		if got := redisCLI(t, s.RESPAddr(), "", append([]string{"--no-raw"}, st.args...)...); got != st.want {
			t.Errorf("redis-cli %s:\n got %q\nwant %q", strings.Join(st.args, " "), got, st.want)
		}
	}
	// A hold (its deadline depends on the clock), read back, confirmed.
	got := redisCLI(t, s.RESPAddr(), "", "--no-raw", "HOLD", "cart", "600000", "sku-1", "new", "retail", "1", "sku-1", "new", "retail", "1")
	if !strings.Contains(got, "2) 1) 1) \"sku-1\"\n      2) \"w1\"\n      3) \"new\"\n      4) \"retail\"\n      5) (integer) 2\n") {
		t.Errorf("redis-cli HOLD: %q", got)
	}
	if got := redisCLI(t, s.RESPAddr(), "", "--no-raw", "CONFIRM", "cart"); got != "OK\n" {
		t.Errorf("redis-cli CONFIRM: %q", got)
	}
	if got := redisCLI(t, s.RESPAddr(), "", "--no-raw", "HOLD.GET", "cart"); !strings.HasPrefix(got, "1) \"confirmed\"\n") {
		t.Errorf("redis-cli HOLD.GET: %q", got)
	}
	if got := redisCLI(t, s.RESPAddr(), "", "--no-raw", "AVAILABLE", "sku-1", "new", "retail"); got != "(integer) 1\n" {
		t.Errorf("redis-cli AVAILABLE: %q", got)
	}
}
