package server_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"allot/server"
	"allot/server/servertest"
)

// The RESP golden files hold exchanges with a fresh server: each "> " line
// is one command (its words separated by spaces; a word written as a Go
// string literal "..." may hold spaces or any byte), the lines after it are
// the exact reply, one RESP line each without its CRLF. Lines starting with
// "#" and blank lines are kept as they are. -rewrite regenerates the
// replies; review the diff.

type respStep struct {
	pre   []string // comments and blank lines before the command
	line  string   // the command line, without "> "
	reply []string
}

func parseRESPGolden(t *testing.T, text string) (steps []respStep, trailer []string) {
	var pre []string
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "> "):
			steps = append(steps, respStep{pre: pre, line: l[2:]})
			pre = nil
		case l == "" || strings.HasPrefix(l, "#"):
			pre = append(pre, l)
		default:
			if len(steps) == 0 {
				t.Fatalf("reply line %q before any command", l)
			}
			s := &steps[len(steps)-1]
			if len(pre) > 0 {
				t.Fatalf("reply line %q after a comment", l)
			}
			s.reply = append(s.reply, l)
		}
	}
	return steps, pre
}

// words splits a command line into arguments.
func words(t *testing.T, line string) []string {
	var out []string
	for len(line) > 0 {
		line = strings.TrimLeft(line, " ")
		if line == "" {
			break
		}
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				t.Fatalf("bad quoted word in %q: %v", line, err)
			}
			w, _ := strconv.Unquote(q)
			out = append(out, w)
			line = line[len(q):]
			continue
		}
		end := strings.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		out = append(out, line[:end])
		line = line[end:]
	}
	return out
}

func TestRESPGolden(t *testing.T) {
	files := map[string]server.Config{
		"resp_contract.txt": {},
		"resp_auth.txt":     {Password: "s3cret"},
	}
	for name, cfg := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			steps, trailer := parseRESPGolden(t, string(text))
			s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: cfg, Clock: servertest.FixedClock{At: time.UnixMilli(1_700_000_000_000)}})
			w := dialWire(t, s.RESPAddr())
			g := &golden{t: t, path: path}
			for _, st := range steps {
				g.step(st.pre, st.line, lines(exchange(w, words(t, st.line))), st.reply)
			}
			g.finish(trailer)
		})
	}
}

// exchange sends one command and reads its reply; QUIT's reply is followed
// by the server closing the connection, which the golden file shows.
func exchange(w *wire, args []string) string {
	w.send(command(args...))
	r := w.reply()
	if len(args) > 0 && strings.EqualFold(args[0], "QUIT") {
		if w.closed() {
			r += "(connection closed)\r\n"
		}
	}
	return r
}
