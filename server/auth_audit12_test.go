package server_test

import (
	"strings"
	"testing"
	"time"

	"allot/server"
	"allot/server/servertest"
)

// With a password set, a RESP connection that does not authenticate
// within AuthTimeout gets -ERR naming why and is closed, whether it sent
// nothing or only commands refused with NOAUTH; one that authenticated in
// time stays open past it, and so does every connection when no password
// is set; served by a goroutine or by the event loop.
func TestUnauthenticatedRESPConnectionsAreClosed(t *testing.T) {
	for _, io := range []string{server.RESPIOGoroutine, server.RESPIOLoop} {
		t.Run(io, func(t *testing.T) { testUnauthenticatedClosed(t, io) })
	}
}

func testUnauthenticatedClosed(t *testing.T, io string) {
	const timeout = 300 * time.Millisecond
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{
		Password: "pw", AuthTimeout: timeout, RESPIO: io}})
	silent := dialWire(t, s.RESPAddr())
	noauth := dialWire(t, s.RESPAddr())
	noauth.send(command("PING"))
	if got := noauth.reply(); !strings.HasPrefix(got, "-NOAUTH") {
		t.Fatalf("PING before AUTH: %q", got)
	}
	authed := dialWire(t, s.RESPAddr())
	authed.send(command("AUTH", "pw"))
	if got := authed.reply(); got != "+OK\r\n" {
		t.Fatalf("AUTH: %q", got)
	}
	start := time.Now()
	for name, w := range map[string]*wire{"silent": silent, "noauth": noauth} {
		got := w.reply()
		if !strings.HasPrefix(got, "-ERR not authenticated within the auth timeout") || !strings.Contains(got, "--auth-timeout") {
			t.Fatalf("%s connection past the auth timeout: %q", name, got)
		}
		if !w.closed() {
			t.Fatalf("%s connection stays open past the auth timeout", name)
		}
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("closed after %v, the timeout is %v", waited, timeout)
	}
	time.Sleep(2 * timeout)
	authed.send(command("PING"))
	if got := authed.reply(); got != "+PONG\r\n" {
		t.Fatalf("an authenticated connection past the auth timeout: %q", got)
	}
	// HELLO ... AUTH authenticates too.
	hello := dialWire(t, s.RESPAddr())
	hello.send(command("HELLO", "2", "AUTH", "default", "pw"))
	hello.reply()
	time.Sleep(2 * timeout)
	hello.send(command("PING"))
	if got := hello.reply(); got != "+PONG\r\n" {
		t.Fatalf("a connection authenticated by HELLO past the auth timeout: %q", got)
	}

	open := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{AuthTimeout: timeout, RESPIO: io}})
	w := dialWire(t, open.RESPAddr())
	time.Sleep(2 * timeout)
	w.send(command("PING"))
	if got := w.reply(); got != "+PONG\r\n" {
		t.Fatalf("no password, past the auth timeout: %q", got)
	}
}

// Shutdown still wakes a connection waiting to authenticate at once: the
// authentication deadline never replaces the shutdown's.
func TestShutdownWakesAConnectionWaitingToAuthenticate(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{
		Password: "pw", AuthTimeout: time.Hour, RESPIO: server.RESPIOGoroutine}})
	w := dialWire(t, s.RESPAddr())
	w.send(command("PING"))
	w.reply()
	start := time.Now()
	s.Stop()
	if !w.closed() {
		t.Fatal("the connection stays open after shutdown")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("shutdown took %v with a connection waiting to authenticate", took)
	}
}
