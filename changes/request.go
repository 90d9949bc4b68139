package changes

import (
	"strconv"
	"time"
)

// Request is a parsed CHANGES command.
type Request struct {
	After uint64
	Count int
	Block time.Duration
}

// ParseRequest parses the arguments of `CHANGES <after-seq> [COUNT n]
// [BLOCK ms]` (args[0] is the command name; options in any order, each at
// most once, names in any case). It returns the request, or what was wrong.
// BLOCK 0 means do not wait (unlike Redis's XREAD, where it means forever:
// a wait here is always bounded, by BlockMax).
func ParseRequest(args [][]byte) (Request, string) {
	req := Request{Count: CountDefault}
	if len(args) < 2 || len(args)%2 != 0 || len(args) > 6 {
		return req, "wrong number of arguments for 'changes' command (CHANGES <after-seq> [COUNT n] [BLOCK ms])"
	}
	after, ok := parseUint(args[1], 1<<63-1)
	if !ok {
		return req, "after-seq must be an integer from 0 to 9223372036854775807"
	}
	req.After = after
	var seenCount, seenBlock bool
	for i := 2; i < len(args); i += 2 {
		switch {
		case equalFold(args[i], "COUNT") && !seenCount:
			seenCount = true
			n, ok := parseUint(args[i+1], CountMax)
			if !ok || n < 1 {
				return req, "COUNT must be an integer from 1 to 10000"
			}
			req.Count = int(n)
		case equalFold(args[i], "BLOCK") && !seenBlock:
			seenBlock = true
			ms, ok := parseUint(args[i+1], uint64(BlockMax/time.Millisecond))
			if !ok {
				return req, "BLOCK must be an integer from 0 to 60000 milliseconds"
			}
			req.Block = time.Duration(ms) * time.Millisecond
		default:
			return req, "syntax error: expected COUNT <n> or BLOCK <ms> (each at most once), got '" + printable(args[i]) + "'"
		}
	}
	return req, ""
}

// ParseAfter parses a cursor as HTTP's after parameter and Last-Event-ID
// carry it.
func ParseAfter(s string) (uint64, bool) { return parseUint([]byte(s), 1<<63-1) }

// parseUint parses decimal digits only (no sign, no spaces) up to max.
func parseUint(b []byte, max uint64) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, n <= max
}

func equalFold(b []byte, upper string) bool {
	if len(b) != len(upper) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// printable quotes at most 32 bytes of b for an error message, control
// bytes escaped.
func printable(b []byte) string {
	if len(b) > 32 {
		b = b[:32]
	}
	q := strconv.QuoteToASCII(string(b))
	return q[1 : len(q)-1]
}
