package server_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/engine"
	"allot/server"
	"allot/server/servertest"
)

// TestRESPGoldenPipelined sends each RESP golden file's commands as one
// stream, cut into chunks of random sizes written with pauses between
// some of them (so that the server reads commands split anywhere, and
// several in one read), and wants the golden replies back, in order and
// byte for byte, then the connection closed after a final QUIT. It runs
// on both RESP I/O modes, with several cuttings each, in write and fsync
// modes: the loop and the
// goroutine path must answer a pipelined stream as the contract does one
// command at a time.
func TestRESPGoldenPipelined(t *testing.T) {
	files := map[string]server.Config{
		"resp_contract.txt": {},
		"resp_auth.txt":     {Password: "s3cret"},
	}
	for name, cfg := range files {
		text, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		steps, _ := parseRESPGolden(t, string(text))
		var stream, want bytes.Buffer
		quit := false
		for _, st := range steps {
			args := words(t, st.line)
			stream.Write(command(args...))
			reply := st.reply
			if strings.EqualFold(args[0], "QUIT") {
				quit = true
				reply = reply[:len(reply)-1] // "(connection closed)" is the test's, not a reply
			}
			for _, l := range reply {
				want.WriteString(l + "\r\n")
			}
		}
		for _, mode := range []string{server.RESPIOLoop, server.RESPIOGoroutine} {
			for seed := uint64(1); seed <= 10; seed++ {
				d := engine.DurabilityWrite
				if seed > 6 {
					d = engine.DurabilityFsync // rounds parked for the flusher
				}
				t.Run(fmt.Sprintf("%s/%s/%s/%d", name, mode, d, seed), func(t *testing.T) {
					cfg := cfg
					cfg.RESPIO = mode
					s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: cfg, Durability: d,
						Clock: servertest.FixedClock{At: time.UnixMilli(1_700_000_000_000)}})
					want := want.Bytes()
					if d == engine.DurabilityFsync { // HELLO names the mode
						want = bytes.ReplaceAll(want, []byte("durability\r\n$5\r\nwrite\r\n"), []byte("durability\r\n$5\r\nfsync\r\n"))
					}
					got, err := pipelined(s.RESPAddr(), stream.Bytes(), len(want), quit, rand.New(rand.NewPCG(seed, 11)))
					if d := diffReplies(got, want); d != "" {
						t.Fatal(d)
					}
					if err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// pipelined writes stream to a fresh connection in random chunks while
// reading n bytes of replies; then nothing more may come, and with quit
// the server must close the connection. It returns what it read (fewer
// than n bytes if the server closed early or stopped answering for 10 s),
// and an error when the rest went wrong. It never ends the test: it runs
// on goroutines.
func pipelined(addr string, stream []byte, n int, quit bool, rng *rand.Rand) ([]byte, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	nc.(*net.TCPConn).SetNoDelay(true)
	sent := make(chan error, 1)
	go func() {
		for rest := stream; len(rest) > 0; {
			k := min(1+rng.IntN(64), len(rest))
			if rng.IntN(4) == 0 {
				k = min(1+rng.IntN(2048), len(rest))
			}
			if _, err := nc.Write(rest[:k]); err != nil {
				sent <- err
				return
			}
			rest = rest[k:]
			if rng.IntN(3) == 0 {
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
			}
		}
		sent <- nil
	}()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, n)
	k, _ := io.ReadFull(nc, got)
	if err := <-sent; err != nil {
		return got[:k], fmt.Errorf("sending: %w", err)
	}
	if k == n {
		wait := 200 * time.Millisecond
		if quit {
			wait = 10 * time.Second
		}
		nc.SetReadDeadline(time.Now().Add(wait))
		var extra [256]byte
		m, err := nc.Read(extra[:])
		switch {
		case m > 0:
			return got, fmt.Errorf("%d bytes after the last reply: %q", m, extra[:m])
		case quit && err != io.EOF:
			return got, fmt.Errorf("after QUIT's reply: %v, want the connection closed", err)
		}
	}
	return got[:k], nil
}

// TestRESPConcurrentPipelined: many connections at once, each pipelining
// a random stream of commands on rows, holds, orders and catalog records
// of its own (valid ones, refusals, malformed ones), cut into random
// chunks; every connection's
// replies must be byte for byte those of its stream run alone, one
// command at a time, on a fresh server. Half of the streams end with QUIT.
// It runs on both RESP I/O modes in write and fsync modes: rounds parked
// for the flusher, direct replies and hand-offs interleave across the
// connections.
func TestRESPConcurrentPipelined(t *testing.T) {
	const conns, commands = 12, 150
	clock := servertest.FixedClock{At: time.UnixMilli(1_700_000_000_000)}
	streams := make([][]byte, conns)
	wants := make([][]byte, conns)
	ref := servertest.Start(t, servertest.Options{NoHTTP: true, Clock: clock, Durability: engine.DurabilityWrite,
		Config: server.Config{RESPIO: server.RESPIOGoroutine}})
	for k := range conns {
		rng := rand.New(rand.NewPCG(uint64(k), 23))
		w := dialWire(t, ref.RESPAddr())
		var stream, want bytes.Buffer
		for i := range commands {
			args := randomCommand(rng, fmt.Sprintf("c%02d", k))
			if i == commands-1 && k%2 == 0 {
				args = []string{"QUIT"}
			}
			stream.Write(command(args...))
			w.send(command(args...))
			want.WriteString(w.reply())
		}
		streams[k], wants[k] = stream.Bytes(), want.Bytes()
	}
	for _, mode := range []string{server.RESPIOLoop, server.RESPIOGoroutine} {
		for _, d := range []engine.Durability{engine.DurabilityWrite, engine.DurabilityFsync} {
			t.Run(fmt.Sprintf("%s/%s", mode, d), func(t *testing.T) {
				s := servertest.Start(t, servertest.Options{NoHTTP: true, Clock: clock, Durability: d,
					Config: server.Config{RESPIO: mode}})
				got := make([][]byte, conns)
				errs := make([]error, conns)
				var wg sync.WaitGroup
				for k := range conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						got[k], errs[k] = pipelined(s.RESPAddr(), streams[k], len(wants[k]), k%2 == 0, rand.New(rand.NewPCG(uint64(k), 29)))
					}()
				}
				wg.Wait()
				for k := range conns {
					if d := diffReplies(got[k], wants[k]); d != "" {
						t.Errorf("connection %d: %s", k, d)
					} else if errs[k] != nil {
						t.Errorf("connection %d: %v", k, errs[k])
					}
				}
			})
		}
	}
}

// randomCommand returns a command on rows, holds, orders and catalog
// records named after p.
func randomCommand(rng *rand.Rand, p string) []string {
	sku := func() string { return fmt.Sprintf("%s-s%d", p, rng.IntN(3)) }
	wh := func() string { return fmt.Sprintf("w%d", rng.IntN(2)) }
	hold := func() string { return fmt.Sprintf("%s-h%d", p, rng.IntN(4)) }
	n := func(lo, hi int) string { return fmt.Sprint(lo + rng.IntN(hi-lo+1)) }
	switch rng.IntN(19) {
	case 14:
		args := []string{"ORDER", sku(), "new", "o", n(1, 2), sku(), "new", "o", "1"}
		if rng.IntN(2) == 0 {
			args = append(args, "ID", fmt.Sprintf("%s-k%d", p, rng.IntN(3)))
		}
		return args
	case 15:
		// Titles start with the connection's name and a space: its
		// searches see its records alone.
		return []string{"CATALOG.SET", sku(), fmt.Sprintf("%s %c%d", p, 'a'+rng.IntN(3), rng.IntN(3)), "brand" + n(0, 1), "size", n(1, 3)}
	case 16:
		return []string{"CATALOG.GET", sku()}
	case 17:
		return []string{"CATALOG.DEL", sku()}
	case 18:
		args := []string{"SEARCH", p + " " + "abc"[:rng.IntN(2)]}
		if rng.IntN(2) == 0 {
			args = append(args, "BRAND", "brand1")
		}
		return append(args, "LIMIT", n(1, 3))
	case 0, 1:
		return []string{"STOCK.SET", sku(), wh(), "new", "o", n(0, 6), n(1, 9)}
	case 2, 3:
		return []string{"CAPTURE", sku(), "new", "o", n(1, 3)}
	case 4:
		return []string{"RELEASE", sku(), wh(), "new", "o", n(1, 2)}
	case 5:
		return []string{"STOCK.GET", sku(), wh(), "new", "o"}
	case 6:
		return []string{"AVAILABLE", sku(), "new", "o"}
	case 7, 8:
		args := []string{"HOLD", hold(), "600000", sku(), "new", "o", n(1, 2)}
		if rng.IntN(2) == 0 {
			args = append(args, sku(), "new", "o", "1")
		}
		return args
	case 9:
		return []string{"CONFIRM", hold()}
	case 10:
		return []string{"CANCEL", hold()}
	case 11:
		return []string{"HOLD.GET", hold()}
	case 12:
		return []string{"PING"}
	}
	switch rng.IntN(3) {
	case 0:
		return []string{"CAPTURE", sku()} // wrong arity
	case 1:
		return []string{"NOPE", p}
	}
	return []string{"ECHO", p}
}

// diffReplies says where got first differs from want, or "" when equal.
func diffReplies(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(i-80, 0)
	return fmt.Sprintf("the replies differ at byte %d of %d (got %d):\ngot  %q\nwant %q", i, len(want), len(got),
		got[from:min(i+80, len(got))], want[from:min(i+80, len(want))])
}
