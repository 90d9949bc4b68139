package server_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"allot/server"
	"allot/server/servertest"
)

// redisCLI runs redis-cli against addr with args and returns its output.
func redisCLI(t *testing.T, addr string, stdin string, args ...string) string {
	t.Helper()
	cli := servertest.RequireTool(t, "redis-cli")
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestRedisCLI runs each contract command through redis-cli in its human
// output format (--no-raw), as a person would see it.
func TestRedisCLI(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "PONG\n"},
		{[]string{"STOCK.SET", "sku-1", "w2", "new", "retail", "5", "100"}, "OK\n"},
		{[]string{"STOCK.SET", "sku-1", "w1", "new", "retail", "1", "90"}, "OK\n"},
		{[]string{"CAPTURE", "sku-1", "new", "retail", "3"}, "1) 1) \"w1\"\n   2) (integer) 1\n2) 1) \"w2\"\n   2) (integer) 2\n"},
		{[]string{"CAPTURE", "sku-1", "new", "retail", "9"}, "(error) INSUFFICIENT available 3\n"},
		{[]string{"RELEASE", "sku-1", "w1", "new", "retail", "2"}, "(integer) 2\n"},
		{[]string{"RELEASE", "sku-1", "w7", "new", "retail", "2"}, "(error) NOTFOUND no such row\n"},
		{[]string{"STOCK.GET", "sku-1", "w2", "new", "retail"}, "1) (integer) 3\n2) (integer) 100\n"},
		{[]string{"STOCK.GET", "sku-1", "w7", "new", "retail"}, "(nil)\n"},
		{[]string{"AVAILABLE", "sku-1", "new", "retail"}, "(integer) 5\n"},
		{[]string{"CAPTURE", "sku-1", "new", "retail", "lots"}, "(error) ERR quantity must be an integer from 1 to 2147483647\n"},
		{[]string{"CLIENT", "SETNAME", "cli"}, "OK\n"},
	}
	for _, st := range steps {
		if got := redisCLI(t, s.RESPAddr(), "", append([]string{"--no-raw"}, st.args...)...); got != st.want {
			t.Errorf("redis-cli %s:\n got %q\nwant %q", strings.Join(st.args, " "), got, st.want)
		}
	}
	// Commands on stdin, and the mass-insertion mode (--pipe), which ends
	// with an ECHO of a marker.
	got := redisCLI(t, s.RESPAddr(), "AVAILABLE sku-1 new retail\nCAPTURE sku-1 new retail 1\n", "--no-raw")
	if want := "(integer) 5\n1) 1) \"w1\"\n   2) (integer) 1\n"; got != want {
		t.Errorf("commands on stdin:\n got %q\nwant %q", got, want)
	}
	load := string(command("STOCK.SET", "sku-2", "w1", "new", "retail", "10", "1")) + string(command("STOCK.SET", "sku-2", "w2", "new", "retail", "10", "1"))
	if got := redisCLI(t, s.RESPAddr(), load, "--pipe"); !strings.Contains(got, "errors: 0, replies: 2") {
		t.Errorf("redis-cli --pipe: %q", got)
	}
	if got := redisCLI(t, s.RESPAddr(), "", "AVAILABLE", "sku-2", "new", "retail"); got != "20\n" {
		t.Errorf("after --pipe: AVAILABLE %q", got)
	}
}

// TestRedisCLIInteractive runs redis-cli's interactive prompt on a
// terminal (script(1) provides one; TERM=dumb keeps its line editor from
// querying the cursor position).
func TestRedisCLIInteractive(t *testing.T) {
	cli := servertest.RequireTool(t, "redis-cli")
	script, err := exec.LookPath("script")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("script(1) (Debian bsdutils) is missing: %v", err)
		}
		t.Skipf("script(1) (Debian bsdutils) is missing: %v", err)
	}
	for _, pass := range []string{"", "s3cret"} {
		t.Run("password="+pass, func(t *testing.T) {
			s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{Password: pass}})
			host, port, _ := net.SplitHostPort(s.RESPAddr())
			line := cli + " -h " + host + " -p " + port
			if pass != "" {
				line += " -a " + pass + " --no-auth-warning"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, script, "-qfec", line, "/dev/null")
			cmd.Env = append(os.Environ(), "TERM=dumb")
			input := []string{"PING", "CLIENT SETNAME me", "STOCK.SET s w new r 5 1", "CAPTURE s new r 2", "CAPTURE s new r 20", "STOCK.GET s x new r", "QUIT"}
			cmd.Stdin = strings.NewReader(strings.Join(input, "\n") + "\n")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("interactive redis-cli: %v\n%s", err, out)
			}
			text := strings.ReplaceAll(string(out), "\r", "")
			// The terminal echoes the input lines when script writes them,
			// before the first prompt or after it, as the scheduler has it:
			// out of the text, so that each prompt is followed by its reply.
			for _, l := range input {
				text = strings.Replace(text, l+"\n", "", 1)
			}
			prompt := host + ":" + port + "> "
			for _, want := range []string{
				prompt + "PONG\n",
				prompt + "OK\n" + prompt + "OK\n",
				prompt + "1) 1) \"w\"\n   2) (integer) 2\n",
				prompt + "(error) INSUFFICIENT available 3\n",
				prompt + "(nil)\n",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("the session lacks %q:\n%s", want, text)
				}
			}
		})
	}
}
