package resp

import (
	"fmt"
	"strings"
	"testing"
)

// TestDecoderAbsurdBulkLengthIsFatalAudit17: a bulk length no client will
// ever send the bytes of (here about a terabyte, or 10^18-1: at most 18
// digits pass readHeader) used to be taken as "well framed, too long":
// the decoder answered one -ERR and then skipped that many bytes, so every
// later command on the connection was swallowed without a reply, for ever.
// The connection looked open but was dead. Redis refuses a bulk length past
// proto-max-bulk-len (512 MB) as a protocol error and closes; so does the
// decoder now. A length up to that bound that only breaks the command
// limit is still skipped, and the connection stays usable.
func TestDecoderAbsurdBulkLengthIsFatalAudit17(t *testing.T) {
	ping := "*1\r\n$4\r\nPING\r\n"
	tooLong := `err("command is longer than the limit of 128 bytes (command bytes max)", fatal=false)`
	invalid := `err("Protocol error: invalid bulk length", fatal=true)`
	cases := []struct {
		name, in, want string
	}{
		{"terabyte", "*1\r\n$999999999999\r\nabc\r\n" + ping, invalid},
		{"18 digits", "*2\r\n$4\r\nPING\r\n$999999999999999999\r\nabc\r\n" + ping, invalid},
		{"just past the bound", fmt.Sprintf("*1\r\n$%d\r\nabc\r\n", bulkBytesMax+1) + ping, invalid},
		{"while skipping", "*9\r\n$1\r\na\r\n$999999999999\r\nabc\r\n" + ping,
			`err("command has 9 arguments, more than the limit of 8 (args max)", fatal=false) ` + invalid},
		// At the bound: too long, skipped; the PING inside it is payload.
		{"at the bound", fmt.Sprintf("*1\r\n$%d\r\n", bulkBytesMax) + ping, tooLong},
		// A skippable length, really sent: the next command is answered.
		{"skippable", "*1\r\n$300\r\n" + strings.Repeat("x", 300) + "\r\n" + ping, tooLong + ` cmd["PING"]`},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 7, 1 << 20} {
			events, _ := decodeStream(t, testLimits, []byte(c.in), chunk)
			var got []string
			for _, e := range events {
				got = append(got, e.String())
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("%s, reads of %d: events\n got %s\nwant %s", c.name, chunk, g, c.want)
			}
		}
	}
}

// TestArgsMaxFloorTakesStockSetWithIDAudit17: the floor of args max was 8
// ("the longest contract command has 7"), from before ID <key>: STOCK.SET
// with ID has 9 arguments, so a limit Validate accepted refused a
// well-formed contract command.
func TestArgsMaxFloorTakesStockSetWithIDAudit17(t *testing.T) {
	if err := (Limits{CommandBytesMax: 1024, ArgsMax: 8}).Validate(); err == nil {
		t.Fatal("args max 8 accepted: it refuses STOCK.SET ... ID <key>")
	}
	l := Limits{CommandBytesMax: 1024, ArgsMax: ArgsMaxFloor}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	words := []string{"STOCK.SET", "sku", "w1", "new", "retail", "5", "100", "ID", "k1"}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(words))
	for _, w := range words {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(w), w)
	}
	args, n, err := NewDecoder(l).Next([]byte(b.String()))
	if err != nil || n != b.Len() || len(args) != len(words) {
		t.Fatalf("STOCK.SET with ID at the floor: %d args, %d of %d bytes, %v", len(args), n, b.Len(), err)
	}
}

// A command bytes max above 512 MB takes bulks that long: the fatal bound
// on a bulk's length is the larger of the two (a 600 MB bulk under a
// 1 GiB limit was a protocol error, the connection closed).
func TestBulkBoundFollowsALargerLimitAudit17(t *testing.T) {
	l := Limits{CommandBytesMax: 1 << 30, ArgsMax: 16}
	in := fmt.Sprintf("*1\r\n$%d\r\nabc", 600<<20)
	args, n, err := NewDecoder(l).Next([]byte(in))
	if err != nil || n != 0 || args != nil {
		t.Fatalf("a 600 MB bulk under a 1 GiB limit: %d args, %d bytes taken, %v; want to wait for its bytes", len(args), n, err)
	}
	// Past the limit, and past 512 MB: fatal.
	in = fmt.Sprintf("*1\r\n$%d\r\nabc", (1<<30)+1)
	if _, _, err := NewDecoder(l).Next([]byte(in)); err == nil || !err.Fatal {
		t.Fatalf("a bulk past both bounds: %v, want a fatal protocol error", err)
	}
}
