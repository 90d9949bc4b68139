package resp

import (
	"bytes"
	"strconv"
	"testing"

	"allot/catalog"
	"allot/inventory"
)

// replyLen returns the length of the one RESP2 reply at the start of b, or
// -1 when b does not start with a well-framed reply: what a client's
// reader needs, checked strictly (a simple string, error or integer holds
// no CR or LF; a bulk's length is its payload's; an integer is one).
func replyLen(b []byte) int {
	line := func() (string, int) {
		end := bytes.Index(b, []byte("\r\n"))
		if end < 1 || bytes.IndexByte(b[:end], '\n') >= 0 || bytes.IndexByte(b[:end], '\r') >= 0 {
			return "", -1
		}
		return string(b[1:end]), end + 2
	}
	if len(b) == 0 {
		return -1
	}
	s, n := line()
	if n < 0 {
		return -1
	}
	switch b[0] {
	case '+', '-':
		return n
	case ':':
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return -1
		}
		return n
	case '$':
		size, err := strconv.Atoi(s)
		if err != nil || size < -1 {
			return -1
		}
		if size == -1 {
			return n
		}
		if len(b)-n < size+2 || b[n+size] != '\r' || b[n+size+1] != '\n' {
			return -1
		}
		return n + size + 2
	case '*':
		count, err := strconv.Atoi(s)
		if err != nil || count < -1 {
			return -1
		}
		for k := 0; k < count; k++ {
			m := replyLen(b[n:])
			if m < 0 {
				return -1
			}
			n += m
		}
		return n
	}
	return -1
}

// checkOneReply fails unless out is exactly one well-framed reply.
func checkOneReply(t *testing.T, what string, out []byte) {
	t.Helper()
	if n := replyLen(out); n != len(out) {
		t.Fatalf("%s: reply %q is not one well-framed RESP reply (framed %d of %d bytes)", what, out, n, len(out))
	}
}

// FuzzReplyFramingAudit17: whatever text an error carries (a detail, a
// hold id, a mismatch), every encoder writes exactly one well-framed
// reply: a CR or LF from a client's input never splits a line.
func FuzzReplyFramingAudit17(f *testing.F) {
	for _, s := range []string{"", "plain", "a\r\nb", "\r", "\n", "-ERR x\r\n+OK", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkOneReply(t, "AppendError", AppendError(nil, s))
		checkOneReply(t, "AppendErr", AppendErr(nil, s))
		checkOneReply(t, "AppendBulk", AppendBulk(nil, s))
		checkOneReply(t, "AppendBulkBytes", AppendBulkBytes(nil, []byte(s)))
		if s != "" {
			checkOneReply(t, "AppendSimple", AppendSimple(nil, s))
		}
		g := inventory.GroupKey{SKU: s, Condition: s, Source: s}
		for k := inventory.Kind(1); k <= inventory.KindSearch; k++ {
			op := inventory.Op{Kind: k, Hold: s, Key: g.Row(s), Lines: []inventory.Demand{{Group: g, N: 1}}}
			for c := inventory.CodeOK; c <= inventory.CodeConfirmed+1; c++ {
				r := inventory.Result{Code: c, Detail: s, Record: &catalog.Record{Title: s, Brand: s}}
				checkOneReply(t, k.String()+"/"+c.String(), AppendResult(nil, &op, &r))
			}
		}
	})
}

// FuzzParseIntAudit17 checks ParseInt against strconv.ParseInt on the
// grammar ParseInt documents: an optional '-' and 1..19 digits.
func FuzzParseIntAudit17(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-1", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "9999999999999999999", "00000000000000000001", "+1", " 1", "1.0", "", "-"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := ParseInt(b)
		digits := b
		if len(digits) > 0 && digits[0] == '-' {
			digits = digits[1:]
		}
		grammar := len(digits) >= 1 && len(digits) <= 19
		for _, c := range digits {
			grammar = grammar && '0' <= c && c <= '9'
		}
		want, err := strconv.ParseInt(string(b), 10, 64)
		wantOK := grammar && err == nil
		if ok != wantOK || (ok && got != want) {
			t.Fatalf("ParseInt(%q) = %d %v; want %d %v", b, got, ok, want, wantOK)
		}
	})
}

// FuzzDecodeOpAudit17: any arguments to any op command (NUL-separated,
// past the decoder's limits too: a HOLD of many lines) decode to an op
// that passes its check or to an error detail, never a panic; the op
// applied to a state holding a row of each of its groups gives a reply
// that is one well-framed RESP reply.
func FuzzDecodeOpAudit17(f *testing.F) {
	for _, seed := range []string{
		"CAPTURE\x00s1\x00new\x00retail\x002",
		"CAPTURE\x00s1\x00new\x00retail\x002\x00ID\x00k1",
		"RELEASE\x00s1\x00w1\x00new\x00retail\x001",
		"STOCK.SET\x00s1\x00w1\x00new\x00retail\x0010\x00999\x00id\x00k",
		"STOCK.GET\x00s1\x00w1\x00new\x00retail",
		"AVAILABLE\x00s1\x00new\x00retail",
		"HOLD\x00h1\x00600000\x00s1\x00new\x00retail\x002\x00s2\x00new\x00retail\x001\x00s1\x00new\x00retail\x001",
		"ORDER\x00s1\x00new\x00retail\x002\x00s2\x00new\x00retail\x001\x00ID\x00o-1",
		"CONFIRM\x00h1", "CANCEL\x00h1", "HOLD.GET\x00h1",
		"HOLD\x00h\x00-1\x00s\x00c\x00s\x001",
		"ORDER\x00s\x00c\x00s\x001\x00XX\x00k",
	} {
		f.Add([]byte(seed))
	}
	in := NewStringInterner(64)
	f.Fuzz(func(t *testing.T, b []byte) {
		args := bytes.Split(b, []byte{0})
		name := Lookup(args[0])
		if name.Kind() == 0 {
			return
		}
		var op inventory.Op
		if d := DecodeOp(name, args, in, &op); d != "" {
			checkOneReply(t, "error", AppendErr(nil, d))
			return
		}
		if d := op.Check(); d != "" {
			t.Fatalf("%q decoded to an op that fails its check: %s", args, d)
		}
		st := inventory.NewState()
		st.SetTime(1000)
		stock := func(row inventory.RowKey) {
			s := inventory.Stock(row, 5, 100)
			if s.Check() == "" {
				st.Apply(&s, nil)
			}
		}
		if op.Key.Warehouse != "" {
			stock(op.Key)
		}
		stock(op.Key.Group().Row("w1"))
		for _, l := range op.Lines {
			stock(l.Group.Row("w1"))
		}
		r := st.Apply(&op, nil)
		checkOneReply(t, name.String(), AppendResult(nil, &op, &r))
	})
}
