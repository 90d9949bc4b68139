package resp

import (
	"bytes"
	"fmt"
	"strconv"
)

// headerBytesMax bounds one "*<count>\r\n" or "$<len>\r\n" header line. 20
// digits cover every int64; more is garbage, not a long command.
const headerBytesMax = 24

// digitsMax is the most digits a count or a length may have: 18 digits
// cannot overflow an int64 in the arithmetic below.
const digitsMax = 18

// bulkBytesMax is the longest bulk string the decoder skips when it breaks
// Limits.CommandBytesMax: a longer length is a protocol error (fatal), as
// Redis refuses one past proto-max-bulk-len (512 MB by default). Skipping
// a length no client will ever send the bytes of (readHeader passes up to
// 10^18-1) would swallow every later command on the connection without a
// reply: the connection would look open and be dead. A command bytes max
// above it raises it (a length the limit takes is never fatal).
const bulkBytesMax = 512 << 20

// ArgsMaxFloor is the least Limits.ArgsMax: the arguments of the longest
// contract command of fixed length, its name included (STOCK.SET <sku>
// <warehouse> <condition> <source> <count> <price> ID <key>). A floor of 8,
// from before ID, let a limit refuse a well-formed STOCK.SET.
const ArgsMaxFloor = 9

// Limits bound one command. Both are named settings of allot serve.
type Limits struct {
	// CommandBytesMax bounds the whole frame of one command, headers
	// included (or one inline line).
	CommandBytesMax int
	// ArgsMax bounds the number of arguments, the command name included.
	ArgsMax int
}

// Validate checks the limits.
func (l Limits) Validate() error {
	if l.CommandBytesMax < 64 {
		return fmt.Errorf("resp: command bytes max must be at least 64, got %d", l.CommandBytesMax)
	}
	if l.ArgsMax < ArgsMaxFloor {
		return fmt.Errorf("resp: args max must be at least %d (STOCK.SET ... ID <key>, the longest command of fixed length, has %d), got %d", ArgsMaxFloor, ArgsMaxFloor, l.ArgsMax)
	}
	return nil
}

// Error is a decoding failure. Msg is what the client is told after "-ERR ".
// Fatal means the framing is lost: the server replies and closes the
// connection. A non-fatal error concerns one command, which the decoder
// skips to its end.
type Error struct {
	Msg   string
	Fatal bool
}

func (e *Error) Error() string { return e.Msg }

// Fatal protocol errors, worded as Redis words them so that clients and
// people recognise them.
var (
	errMultibulkLength = &Error{Msg: "Protocol error: invalid multibulk length", Fatal: true}
	errBulkLength      = &Error{Msg: "Protocol error: invalid bulk length", Fatal: true}
	errBulkEnd         = &Error{Msg: "Protocol error: bulk string not terminated by CRLF", Fatal: true}
)

// Decoder splits a byte stream into commands. It is a small state machine:
// between calls it remembers only whether it is skipping the rest of a
// command that broke a limit. A command that is not yet complete is decoded
// again from its start on the next call; that costs a scan of its headers
// only (bulk payloads are stepped over by length), and commands are bounded
// by Limits, so it stays linear in practice and keeps the decoder free of
// partial-command state.
//
// The zero Decoder is not usable: build one with NewDecoder.
type Decoder struct {
	limits Limits
	args   [][]byte

	// Skipping a command that broke a limit:
	skipLine  bool // an inline command: up to and including its '\n'
	skipArgs  int  // bulk arguments whose headers are still to read
	skipBytes int  // payload bytes (CRLF included) of the current bulk
}

// NewDecoder returns a decoder that enforces limits (Validate them first).
func NewDecoder(limits Limits) *Decoder {
	return &Decoder{limits: limits, args: make([][]byte, 0, 8)}
}

// Skipping reports whether the decoder is in the middle of skipping a
// command that broke a limit.
func (d *Decoder) Skipping() bool {
	return d.skipLine || d.skipArgs > 0 || d.skipBytes > 0
}

// Next decodes the next command at the start of b. It returns one of:
//   - args != nil: a command of n bytes; args alias b.
//   - err != nil: reply "-ERR " + err.Msg; when err.Fatal the stream is
//     lost, else decoding goes on after the n bytes consumed.
//   - args == nil, err == nil, n > 0: n bytes were consumed without a
//     command (an empty command, or part of a command being skipped); call
//     again.
//   - args == nil, err == nil, n == 0: b holds no complete command; read
//     more bytes and call again with the unconsumed ones in front.
func (d *Decoder) Next(b []byte) (args [][]byte, n int, err *Error) {
	if d.Skipping() {
		n, err = d.skip(b)
		return nil, n, err
	}
	if len(b) == 0 {
		return nil, 0, nil
	}
	if b[0] == '*' {
		return d.multibulk(b)
	}
	return d.inline(b)
}

// readHeader reads "<prefix><digits>\r\n" at b[i:]. It returns the number,
// the index after the line, and ok=false with a nil error when the line is
// not complete yet.
func readHeader(b []byte, i int, bad *Error) (v int, next int, ok bool, err *Error) {
	// The common case in one pass: 1 to digitsMax digits and CRLF. Anything
	// else (a sign, garbage, a line not complete yet) takes the general
	// path, whose answers this one agrees with (FuzzReadHeader); a header
	// was 13% of the server's CPU per pipelined CAPTURE.
	j := i + 1
	for j < len(b) && j-i <= digitsMax && '0' <= b[j] && b[j] <= '9' {
		v = v*10 + int(b[j]-'0')
		j++
	}
	if j > i+1 && j+1 < len(b) && b[j] == '\r' && b[j+1] == '\n' && b[i] != '\n' {
		return v, j + 2, true, nil
	}
	return readHeaderLine(b, i, bad)
}

// oneDigitHeader reads the header at b[i] when it is one digit and CRLF
// (a count under 10, an argument under 10 bytes: most of them), as
// readHeader reads it (FuzzReadHeader), without its loop and call: a
// pipeline of captures decodes in 28% less time (BenchmarkDecoder), the
// headers were over a third of it. ok false: ask readHeader.
func oneDigitHeader(b []byte, i int) (v int, next int, ok bool) {
	if i+3 < len(b) && '0' <= b[i+1] && b[i+1] <= '9' && b[i+2] == '\r' && b[i+3] == '\n' {
		return int(b[i+1] - '0'), i + 4, true
	}
	return 0, 0, false
}

// readHeaderLine is readHeader's general path: it finds the line's end
// first, then checks what is before it.
func readHeaderLine(b []byte, i int, bad *Error) (v int, next int, ok bool, err *Error) {
	end := bytes.IndexByte(b[i:min(len(b), i+headerBytesMax)], '\n')
	if end < 0 {
		if len(b)-i >= headerBytesMax {
			return 0, 0, false, bad
		}
		return 0, 0, false, nil
	}
	end += i
	if end < i+2 || b[end-1] != '\r' {
		return 0, 0, false, bad
	}
	digits := b[i+1 : end-1]
	neg := false
	if len(digits) > 0 && digits[0] == '-' {
		neg = true
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > digitsMax {
		return 0, 0, false, bad
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, 0, false, bad
		}
		v = v*10 + int(c-'0')
	}
	if neg {
		v = -v
	}
	return v, end + 1, true, nil
}

func (d *Decoder) multibulk(b []byte) ([][]byte, int, *Error) {
	count, i, ok := oneDigitHeader(b, 0)
	if !ok {
		var err *Error
		if count, i, ok, err = readHeader(b, 0, errMultibulkLength); !ok {
			return nil, 0, err
		}
	}
	if count <= 0 {
		// "*0" and "*-1" are empty commands; Redis ignores them too.
		return nil, i, nil
	}
	if count > d.limits.ArgsMax {
		d.skipArgs = count
		return nil, i, &Error{Msg: "command has " + strconv.Itoa(count) +
			" arguments, more than the limit of " + strconv.Itoa(d.limits.ArgsMax) + " (args max)"}
	}
	args := d.args[:0]
	for k := 0; k < count; k++ {
		// The common argument in one step: "$<digit>\r\n", its bytes and
		// CRLF, all in b and within the command's limit. Anything else
		// takes the general path below, which reads such an argument the
		// same way and answers every other case.
		if !noFastBulk && len(b)-i >= 4 {
			h := b[i : i+4 : i+4]
			if size, next := int(h[1]-'0'), i+4; h[0] == '$' && h[1]-'0' <= 9 && h[2] == '\r' && h[3] == '\n' &&
				next+size+2 <= d.limits.CommandBytesMax && len(b)-next >= size+2 {
				if t := b[next+size : next+size+2 : next+size+2]; t[0] == '\r' && t[1] == '\n' {
					args = append(args, b[next:next+size:next+size])
					i = next + size + 2
					continue
				}
			}
		}
		if i == len(b) {
			return nil, 0, nil
		}
		if b[i] != '$' {
			return nil, 0, &Error{Msg: "Protocol error: expected '$', got " + strconv.QuoteRune(rune(b[i])), Fatal: true}
		}
		size, next, ok := oneDigitHeader(b, i)
		if !ok {
			var err *Error
			if size, next, ok, err = readHeader(b, i, errBulkLength); !ok {
				return nil, 0, err
			}
		}
		if size < 0 || size > max(bulkBytesMax, d.limits.CommandBytesMax) {
			return nil, 0, errBulkLength
		}
		if next+size+2 > d.limits.CommandBytesMax {
			// Consume what was read, skip this bulk and the rest.
			d.skipBytes = size + 2
			d.skipArgs = count - k - 1
			return nil, next, d.tooLong()
		}
		if len(b)-next < size+2 {
			return nil, 0, nil
		}
		if b[next+size] != '\r' || b[next+size+1] != '\n' {
			return nil, 0, errBulkEnd
		}
		args = append(args, b[next:next+size:next+size])
		i = next + size + 2
	}
	d.args = args
	return args, i, nil
}

// noFastBulk turns multibulk's one-step read of a one-digit argument
// off, for tests that compare it with the general path.
var noFastBulk bool

func (d *Decoder) tooLong() *Error {
	return &Error{Msg: "command is longer than the limit of " + strconv.Itoa(d.limits.CommandBytesMax) + " bytes (command bytes max)"}
}

// inline decodes a command written as one line of words separated by spaces
// or tabs (what a person types into telnet or nc). Quotes have no meaning.
func (d *Decoder) inline(b []byte) ([][]byte, int, *Error) {
	window := b[:min(len(b), d.limits.CommandBytesMax)]
	end := bytes.IndexByte(window, '\n')
	if end < 0 {
		if len(window) == d.limits.CommandBytesMax {
			d.skipLine = true
			return nil, len(window), d.tooLong()
		}
		return nil, 0, nil
	}
	line := b[:end]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args := d.args[:0]
	for len(line) > 0 {
		for len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			line = line[1:]
		}
		w := 0
		for w < len(line) && line[w] != ' ' && line[w] != '\t' {
			w++
		}
		if w == 0 {
			break
		}
		if len(args) == d.limits.ArgsMax {
			return nil, end + 1, &Error{Msg: "command has more than the limit of " + strconv.Itoa(d.limits.ArgsMax) + " arguments (args max)"}
		}
		args = append(args, line[:w:w])
		line = line[w:]
	}
	d.args = args
	if len(args) == 0 {
		return nil, end + 1, nil
	}
	return args, end + 1, nil
}

// skip consumes bytes of a command that broke a limit.
func (d *Decoder) skip(b []byte) (int, *Error) {
	if d.skipLine {
		end := bytes.IndexByte(b, '\n')
		if end < 0 {
			return len(b), nil
		}
		d.skipLine = false
		return end + 1, nil
	}
	n := 0
	for {
		if d.skipBytes > 0 {
			take := min(d.skipBytes, len(b)-n)
			d.skipBytes -= take
			n += take
			if d.skipBytes > 0 {
				return n, nil
			}
		}
		if d.skipArgs == 0 {
			return n, nil
		}
		if n == len(b) {
			return n, nil
		}
		if b[n] != '$' {
			d.skipArgs = 0
			return n, &Error{Msg: "Protocol error: expected '$', got " + strconv.QuoteRune(rune(b[n])), Fatal: true}
		}
		size, next, ok, err := readHeader(b, n, errBulkLength)
		if !ok {
			if err != nil {
				d.skipArgs = 0
			}
			return n, err
		}
		if size < 0 || size > max(bulkBytesMax, d.limits.CommandBytesMax) {
			d.skipArgs = 0
			return n, errBulkLength
		}
		d.skipArgs--
		d.skipBytes = size + 2
		n = next
	}
}
