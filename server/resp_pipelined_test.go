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
					got := pipelined(t, s.RESPAddr(), stream.Bytes(), len(want), quit, rand.New(rand.NewPCG(seed, 11)))
					if !bytes.Equal(got, want) {
						i := 0
						for i < len(got) && i < len(want) && got[i] == want[i] {
							i++
						}
						from := max(i-80, 0)
						t.Fatalf("the replies differ at byte %d of %d (got %d):\ngot  %q\nwant %q", i, len(want), len(got),
							got[from:min(i+80, len(got))], want[from:min(i+80, len(want))])
					}
				})
			}
		}
	}
}

// pipelined writes stream to a fresh connection in random chunks while
// reading n bytes of replies; then nothing more may come, and with quit
// the server must close the connection. It returns what it read (fewer
// than n bytes if the server closed early or stopped answering for 10 s).
func pipelined(t *testing.T, addr string, stream []byte, n int, quit bool, rng *rand.Rand) []byte {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
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
		t.Fatalf("sending: %v", err)
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
			t.Fatalf("%d bytes after the last reply: %q", m, extra[:m])
		case quit && err != io.EOF:
			t.Fatalf("after QUIT's reply: %v, want the connection closed", err)
		}
	}
	return got[:k]
}
