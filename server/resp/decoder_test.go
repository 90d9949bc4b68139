package resp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

var testLimits = Limits{CommandBytesMax: 128, ArgsMax: 8}

// event is what a connection sees from the decoder: a command or an error.
type event struct {
	args  []string
	err   string
	fatal bool
}

func (e event) String() string {
	if e.err != "" {
		return fmt.Sprintf("err(%q, fatal=%v)", e.err, e.fatal)
	}
	return fmt.Sprintf("cmd%q", e.args)
}

// decodeStream feeds input to a decoder chunk bytes at a time, the way a
// connection does: unconsumed bytes stay in front of the buffer. It stops at
// the first fatal error. It also checks the decoder's contract as it goes.
func decodeStream(t testing.TB, limits Limits, input []byte, chunk int) (events []event, rest int) {
	d := NewDecoder(limits)
	var buf []byte
	fed := 0
	for {
		if fed < len(input) {
			end := min(len(input), fed+chunk)
			buf = append(buf, input[fed:end]...)
			fed = end
		}
		for {
			args, n, err := d.Next(buf)
			if n < 0 || n > len(buf) {
				t.Fatalf("Next consumed %d of %d bytes", n, len(buf))
			}
			if args != nil && err != nil {
				t.Fatalf("Next returned a command and an error")
			}
			if args != nil {
				if len(args) > limits.ArgsMax {
					t.Fatalf("command with %d args passed the limit %d", len(args), limits.ArgsMax)
				}
				if n > limits.CommandBytesMax+1 {
					t.Fatalf("command of %d bytes passed the limit %d", n, limits.CommandBytesMax)
				}
				e := event{}
				for _, a := range args {
					e.args = append(e.args, string(a))
				}
				events = append(events, e)
			}
			if err != nil {
				events = append(events, event{err: err.Msg, fatal: err.Fatal})
				if err.Fatal {
					return events, len(buf)
				}
			}
			buf = buf[n:]
			if args == nil && err == nil && n == 0 {
				break
			}
		}
		if fed == len(input) {
			return events, len(buf)
		}
		if len(buf) > limits.CommandBytesMax+headerBytesMax {
			t.Fatalf("decoder left %d bytes pending, more than a command may hold", len(buf))
		}
	}
}

func TestDecoder(t *testing.T) {
	long := strings.Repeat("x", 200)
	cases := []struct {
		name string
		in   string
		want string // events joined by " "
		rest int    // bytes left undecoded at the end; -1: not checked (after a fatal error it depends on the chunking)
	}{
		{"multibulk", "*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n", `cmd["PING" "hi"]`, 0},
		{"pipeline", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", `cmd["PING"] cmd["PING"]`, 0},
		{"empty bulk", "*2\r\n$4\r\nPING\r\n$0\r\n\r\n", `cmd["PING" ""]`, 0},
		{"inline", "PING hi\r\nCAPTURE  a\tb c 1\n", `cmd["PING" "hi"] cmd["CAPTURE" "a" "b" "c" "1"]`, 0},
		{"empty inline", "\r\n   \r\nPING\r\n", `cmd["PING"]`, 0},
		{"empty multibulk", "*0\r\n*-1\r\nPING\r\n", `cmd["PING"]`, 0},
		{"half written", "*2\r\n$4\r\nPING\r\n$2\r\nh", ``, 19},
		{"half header", "*2\r\n$4", ``, 6},
		{"bad count", "*x\r\nPING\r\n", `err("Protocol error: invalid multibulk length", fatal=true)`, -1},
		{"count without CR", "*1\n$4\r\nPING\r\n", `err("Protocol error: invalid multibulk length", fatal=true)`, -1},
		{"endless count", "*11111111111111111111111111111111", `err("Protocol error: invalid multibulk length", fatal=true)`, -1},
		{"not a bulk", "*1\r\n:4\r\n", `err("Protocol error: expected '$', got ':'", fatal=true)`, -1},
		{"negative bulk", "*1\r\n$-2\r\nxx", `err("Protocol error: invalid bulk length", fatal=true)`, -1},
		{"bulk length past int64", "*1\r\n$9223372036854775807\r\nabc\r\n", `err("Protocol error: invalid bulk length", fatal=true)`, -1},
		{"huge bulk", "*1\r\n$99999999\r\nabc\r\n", `err("command is longer than the limit of 128 bytes (command bytes max)", fatal=false)`, 0},
		{"bulk too long then ping", "*2\r\n$4\r\nPING\r\n$200\r\n" + long + "\r\n*1\r\n$4\r\nPING\r\n",
			`err("command is longer than the limit of 128 bytes (command bytes max)", fatal=false) cmd["PING"]`, 0},
		{"too many args then ping", "*9\r\n" + strings.Repeat("$1\r\na\r\n", 9) + "*1\r\n$4\r\nPING\r\n",
			`err("command has 9 arguments, more than the limit of 8 (args max)", fatal=false) cmd["PING"]`, 0},
		{"too many inline args", "a b c d e f g h i\r\nPING\r\n",
			`err("command has more than the limit of 8 arguments (args max)", fatal=false) cmd["PING"]`, 0},
		{"inline too long then ping", long + "\r\nPING\r\n",
			`err("command is longer than the limit of 128 bytes (command bytes max)", fatal=false) cmd["PING"]`, 0},
		{"bulk without CRLF", "*1\r\n$4\r\nPINGxx", `err("Protocol error: bulk string not terminated by CRLF", fatal=true)`, -1},
		{"garbage while skipping", "*9\r\n$1\r\na\r\nzzzz\r\n", `err("command has 9 arguments, more than the limit of 8 (args max)", fatal=false) err("Protocol error: expected '$', got 'z'", fatal=true)`, -1},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 7, 1 << 20} {
			t.Run(fmt.Sprintf("%s/chunk%d", c.name, chunk), func(t *testing.T) {
				events, rest := decodeStream(t, testLimits, []byte(c.in), chunk)
				var got []string
				for _, e := range events {
					got = append(got, e.String())
				}
				if g := strings.Join(got, " "); g != c.want {
					t.Errorf("events:\n got %s\nwant %s", g, c.want)
				}
				if c.rest >= 0 && rest != c.rest {
					t.Errorf("rest: got %d bytes, want %d", rest, c.rest)
				}
			})
		}
	}
}

func TestDecoderArgsAliasInput(t *testing.T) {
	d := NewDecoder(testLimits)
	in := []byte("*1\r\n$4\r\nPING\r\n")
	args, _, _ := d.Next(in)
	if len(args) != 1 || &args[0][0] != &in[8] {
		t.Fatalf("args do not alias the input")
	}
	if cap(args[0]) != 4 {
		t.Fatalf("an argument's capacity %d reaches past it: appending to it would overwrite the next bytes", cap(args[0]))
	}
}

// appendCommand encodes args as a RESP multibulk command.
func appendCommand(b []byte, args []string) []byte {
	b = AppendArray(b, len(args))
	for _, a := range args {
		b = AppendBulk(b, a)
	}
	return b
}

func TestDecoderRoundTrip(t *testing.T) {
	cmds := [][]string{{"CAPTURE", "sku-1", "new", "retail", "3"}, {"PING"}, {"STOCK.SET", "é", "w\r\n1", "c", "s", "1", "2"}}
	var in []byte
	for _, c := range cmds {
		in = appendCommand(in, c)
	}
	events, rest := decodeStream(t, testLimits, in, 5)
	if rest != 0 || len(events) != len(cmds) {
		t.Fatalf("got %v (rest %d)", events, rest)
	}
	for i, e := range events {
		if strings.Join(e.args, "|") != strings.Join(cmds[i], "|") {
			t.Errorf("command %d: got %q, want %q", i, e.args, cmds[i])
		}
	}
}

func BenchmarkDecoder(b *testing.B) {
	var in []byte
	for i := 0; i < 64; i++ {
		in = appendCommand(in, []string{"CAPTURE", "sku-000123", "new", "retail", "2"})
	}
	d := NewDecoder(Limits{CommandBytesMax: 64 << 10, ArgsMax: 64})
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		buf := in
		for len(buf) > 0 {
			_, n, _ := d.Next(buf)
			buf = buf[n:]
		}
	}
	if !bytes.HasPrefix(in, []byte("*5")) {
		b.Fatal("bad input")
	}
}
