package server_test

import (
	"allot/server/resp"
	"reflect"
	"strings"
	"testing"

	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

// TestRESPBadInput sends garbage, over-long, half-written and unframeable
// commands. Each gets its error reply; the connection stays usable where
// the framing allows it (the decoder skips a well-framed command that broke
// a limit) and is closed after the reply where it does not, as Redis does;
// the server keeps serving and the state never changes.
func TestRESPBadInput(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{RequestBytesMax: 1024, ArgsMax: 16}})
	row := inventory.RowKey{SKU: "sku-1", Warehouse: "w1", Condition: "new", Source: "retail"}
	if _, err := s.Engine.Stock(row, 7, 100); err != nil {
		t.Fatal(err)
	}
	before, err := s.Engine.Rows()
	if err != nil {
		t.Fatal(err)
	}
	capture := string(command("CAPTURE", "sku-1", "new", "retail", "1"))
	cases := []struct {
		name    string
		send    []string // written one after the other
		replies []string
		closed  bool // the server closes the connection after the replies
	}{
		{name: "garbage line", send: []string{"\x00\x01garbage here\r\n"},
			replies: []string{"-ERR unknown command '\\x00\\x01garbage' (commands: " + strings.Join(resp.Words(), ", ") + ")\r\n"}},
		{name: "over-long bulk", send: []string{"*2\r\n$4\r\nPING\r\n$5000\r\n" + strings.Repeat("x", 5000) + "\r\n"},
			replies: []string{"-ERR command is longer than the limit of 1024 bytes (command bytes max)\r\n"}},
		{name: "over-long bulk in pieces", send: []string{"*2\r\n$7\r\nCAPTURE\r\n$3000\r\n", strings.Repeat("x", 1500), strings.Repeat("x", 1500) + "\r\n"},
			replies: []string{"-ERR command is longer than the limit of 1024 bytes (command bytes max)\r\n"}},
		{name: "over-long inline", send: []string{strings.Repeat("a", 3000) + "\r\n"},
			replies: []string{"-ERR command is longer than the limit of 1024 bytes (command bytes max)\r\n"}},
		{name: "too many arguments", send: []string{"*20\r\n" + strings.Repeat("$1\r\na\r\n", 20)},
			replies: []string{"-ERR command has 20 arguments, more than the limit of 16 (args max)\r\n"}},
		{name: "half-written then completed", send: []string{"*5\r\n$9\r\nSTOCK.GET\r\n$5\r\nsku-1\r\n$2\r\nw", "1\r\n$3\r\nnew\r\n$6\r\nretail\r\n"},
			replies: []string{"*2\r\n:7\r\n:100\r\n"}},
		{name: "bad argument in a pipeline", send: []string{"*1\r\n$4\r\nPING\r\n" + strings.Replace(capture, "$1\r\n1", "$1\r\nx", 1) + "AVAILABLE sku-1 new retail\r\n"},
			replies: []string{"+PONG\r\n", "-ERR quantity must be an integer from 1 to 2147483647\r\n", ":7\r\n"}},
		{name: "not a bulk", send: []string{"*1\r\n:4\r\n"},
			replies: []string{"-ERR Protocol error: expected '$', got ':'\r\n"}, closed: true},
		{name: "bulk length past int64", send: []string{"*1\r\n$9223372036854775807\r\nabc\r\n"},
			replies: []string{"-ERR Protocol error: invalid bulk length\r\n"}, closed: true},
		{name: "negative bulk length", send: []string{"*1\r\n$-2\r\nxx"},
			replies: []string{"-ERR Protocol error: invalid bulk length\r\n"}, closed: true},
		{name: "bad multibulk length", send: []string{"*x\r\n"},
			replies: []string{"-ERR Protocol error: invalid multibulk length\r\n"}, closed: true},
		{name: "bulk without CRLF", send: []string{"*1\r\n$4\r\nPINGxx"},
			replies: []string{"-ERR Protocol error: bulk string not terminated by CRLF\r\n"}, closed: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := dialWire(t, s.RESPAddr())
			for _, part := range c.send {
				w.send([]byte(part))
			}
			for _, want := range c.replies {
				if got := w.reply(); got != want {
					t.Errorf("reply %q, want %q", got, want)
				}
			}
			if c.closed {
				if !w.closed() {
					t.Errorf("the server kept a connection whose framing is lost")
				}
				return
			}
			w.send(command("PING"))
			if got := w.reply(); got != "+PONG\r\n" {
				t.Errorf("the connection is not usable after the error: PING got %q", got)
			}
		})
	}
	t.Run("half-written then gone", func(t *testing.T) {
		w := dialWire(t, s.RESPAddr())
		w.send([]byte(capture[:len(capture)-3]))
		w.nc.Close()
	})
	// The server still serves, and nothing changed.
	w := dialWire(t, s.RESPAddr())
	w.send(command("PING"))
	if got := w.reply(); got != "+PONG\r\n" {
		t.Fatalf("server after the bad input: PING got %q", got)
	}
	after, err := s.Engine.Rows()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("bad input changed the state:\nbefore %v\nafter  %v", before, after)
	}
}
