package server_test

import (
	"strings"
	"testing"

	"allot/server/servertest"
)

// helloRole returns the role field of HELLO's answer.
func helloRole(t *testing.T, addr string) string {
	t.Helper()
	w := dialWire(t, addr)
	w.send(command("HELLO", "2"))
	l := lines(w.reply())
	for i := 0; i+2 < len(l); i++ {
		if l[i] == "role" {
			return l[i+2]
		}
	}
	t.Fatalf("HELLO 2: no role field in %q", strings.Join(l, " "))
	return ""
}

// A client must be able to tell a standby from the primary without
// sending a mutation: HELLO says "replica" on a standby, as Redis does.
func TestHelloRole(t *testing.T) {
	single := servertest.Start(t, servertest.Options{NoHTTP: true})
	if got := helloRole(t, single.RESPAddr()); got != "master" {
		t.Errorf("HELLO on a single node: role %q, want master", got)
	}
	standby := servertest.Start(t, servertest.Options{NoHTTP: true, Replicated: true})
	if !standby.Engine.Standby() {
		t.Fatal("the replicated engine did not open as a standby")
	}
	if got := helloRole(t, standby.RESPAddr()); got != "replica" {
		t.Errorf("HELLO on a standby: role %q, want replica", got)
	}
	w := dialWire(t, standby.RESPAddr())
	w.send(command("CAPTURE", "sku-1", "w1", "new", "1"))
	if got := w.reply(); !strings.HasPrefix(got, "-UNAVAILABLE not primary") {
		t.Errorf("CAPTURE on the standby answered %q, want UNAVAILABLE not primary", got)
	}
}
