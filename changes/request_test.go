package changes

import (
	"bytes"
	"strconv"
	"testing"
	"time"
)

func split(s string) [][]byte { return bytes.Fields([]byte(s)) }

func TestParseRequest(t *testing.T) {
	cases := []struct {
		in   string
		want Request
		err  bool
	}{
		{"CHANGES 0", Request{0, 100, 0}, false},
		{"changes 42 count 7", Request{42, 7, 0}, false},
		{"CHANGES 5 BLOCK 250 COUNT 10000", Request{5, 10000, 250 * time.Millisecond}, false},
		{"CHANGES 5 block 60000", Request{5, 100, time.Minute}, false},
		{"CHANGES 9223372036854775807", Request{1<<63 - 1, 100, 0}, false},
		{"CHANGES", Request{}, true},
		{"CHANGES -1", Request{}, true},
		{"CHANGES +1", Request{}, true},
		{"CHANGES 9223372036854775808", Request{}, true},
		{"CHANGES 1 COUNT 0", Request{}, true},
		{"CHANGES 1 COUNT 10001", Request{}, true},
		{"CHANGES 1 BLOCK 60001", Request{}, true},
		{"CHANGES 1 COUNT 1 COUNT 2", Request{}, true},
		{"CHANGES 1 COUNT", Request{}, true},
		{"CHANGES 1 LIMIT 3", Request{}, true},
		{"CHANGES 1 COUNT 1 BLOCK 1 COUNT 1", Request{}, true},
	}
	for _, c := range cases {
		got, detail := ParseRequest(split(c.in))
		if (detail != "") != c.err || (!c.err && got != c.want) {
			t.Errorf("%q: %+v, %q; want %+v (error %v)", c.in, got, detail, c.want, c.err)
		}
	}
}

// Never panics; what it accepts is in range and round-trips.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{"CHANGES 0", "CHANGES 12 COUNT 5 BLOCK 100", "changes 1 block 0", "CHANGES 1 COUNT 99999", "CHANGES x", "CHANGES 1 COUNT 1 COUNT 1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		args := bytes.Split(line, []byte(" "))
		req, detail := ParseRequest(args)
		if detail != "" {
			return
		}
		if req.Count < 1 || req.Count > CountMax || req.Block < 0 || req.Block > BlockMax || req.After > 1<<63-1 {
			t.Fatalf("%q accepted out of range: %+v", line, req)
		}
		again, detail := ParseRequest(split("CHANGES " + strconv.FormatUint(req.After, 10) + " COUNT " + strconv.Itoa(req.Count) + " BLOCK " + strconv.FormatInt(req.Block.Milliseconds(), 10)))
		if detail != "" || again != req {
			t.Fatalf("%q: %+v does not round-trip: %+v %q", line, req, again, detail)
		}
	})
}
