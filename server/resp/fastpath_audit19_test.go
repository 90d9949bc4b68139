package resp

import (
	"fmt"
	"testing"
)

// stepAll feeds in to a new decoder chunk bytes at a time, with or without
// multibulk's one-step read of one-digit arguments (noFastBulk), and
// records every Next: what it returned, what it consumed, its error and
// the decoder's skip state.
func stepAll(limits Limits, in []byte, chunk int, noFast bool) []string {
	noFastBulk = noFast
	defer func() { noFastBulk = false }()
	d := NewDecoder(limits)
	var out []string
	var buf []byte
	fed := 0
	for iter := 0; iter < 100000; iter++ {
		if fed < len(in) {
			end := min(len(in), fed+chunk)
			buf = append(buf, in[fed:end]...)
			fed = end
		}
		for {
			args, n, err := d.Next(buf)
			s := fmt.Sprintf("n=%d args=%q skip=%v/%d/%d", n, args, d.skipLine, d.skipArgs, d.skipBytes)
			if err != nil {
				s += fmt.Sprintf(" err=%q fatal=%v", err.Msg, err.Fatal)
			}
			out = append(out, s)
			if err != nil && err.Fatal {
				return out
			}
			buf = buf[n:]
			if n == 0 {
				break
			}
		}
		if fed == len(in) {
			return out
		}
	}
	return out
}

// FuzzFastPathDiff: the decoder answers any input, whole or in pieces,
// under any limits, the same with the one-step read of one-digit
// arguments as without it.
func FuzzFastPathDiff(f *testing.F) {
	for _, s := range []string{
		"*5\r\n$7\r\nCAPTURE\r\n$5\r\nsku-1\r\n$3\r\nnew\r\n$6\r\nretail\r\n$1\r\n2\r\n",
		"*2\r\n$1\r\na\r\n$9\r\n123456789\r\n",
		"*2\r\n$1\r\na\r\n$9\r\n12345678X\r\n",
		"*3\r\n$0\r\n\r\n$1\r\nab\r\n",
		"*1\r\n$:\r\nxx\r\n", "*1\r\n$/\r\n", "CAPTURE a b\r\n",
		"*9\r\n$9\r\n123456789\r\n$9\r\n123456789\r\n$9\r\n123456789\r\n$9\r\n123456789\r\n$9\r\n123456789\r\n$9\r\n123456789\r\n$9\r\n123456789\r\n$1\r\nz\r\n$1\r\nq\r\n*1\r\n$1\r\nx\r\n",
	} {
		f.Add([]byte(s), uint8(0), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, lim uint8, chunk uint8) {
		limits := Limits{CommandBytesMax: 64 + int(lim%64), ArgsMax: 9 + int(lim/64)}
		for _, c := range []int{len(in) + 1, 1, int(chunk%7) + 1} {
			a := stepAll(limits, in, c, false)
			b := stepAll(limits, in, c, true)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("chunk %d limits %+v:\nfast %v\nslow %v", c, limits, a, b)
			}
		}
	})
}

// TestFastPathDiffBoundaries: every command of up to 9 one-digit
// arguments of 0 to 9 bytes each, followed by another command, against
// every command length limit around its length, whole and in pieces,
// decodes the same with the one-step read as without it.
func TestFastPathDiffBoundaries(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for size := 0; size <= 9; size++ {
			cmd := []byte(fmt.Sprintf("*%d\r\n", n))
			for k := 0; k < n; k++ {
				cmd = append(cmd, fmt.Sprintf("$%d\r\n", size)...)
				for j := 0; j < size; j++ {
					cmd = append(cmd, byte('a'+j))
				}
				cmd = append(cmd, "\r\n"...)
			}
			cmd = append(cmd, "*1\r\n$1\r\nx\r\n"...)
			for lim := 64; lim <= 140; lim++ {
				limits := Limits{CommandBytesMax: lim, ArgsMax: 9}
				for _, c := range []int{len(cmd) + 1, 1, 3} {
					a := stepAll(limits, cmd, c, false)
					b := stepAll(limits, cmd, c, true)
					if fmt.Sprint(a) != fmt.Sprint(b) {
						t.Fatalf("%q lim %d chunk %d:\n%v\n%v", cmd, lim, c, a, b)
					}
				}
			}
		}
	}
}
