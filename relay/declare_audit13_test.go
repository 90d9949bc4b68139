package relay_test

import (
	"encoding/binary"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/relay"
	"allot/server/servertest"
	"allot/services"
)

// silentConn drops every write of a method frame of one class (40
// exchange, 50 queue): to the relay, the broker took the connection and
// never answers that declaration, though it answers the rest (heartbeats
// included, so no heartbeat timeout ends the wait).
type silentConn struct {
	net.Conn
	class uint16
}

func (c *silentConn) Write(p []byte) (int, error) {
	if len(p) >= 11 && p[0] == 1 && binary.BigEndian.Uint16(p[7:9]) == c.class {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// A broker that never answers a declaration does not hold the relay: the
// setup of the channel is bounded by ConnectTimeout, and the relay logs
// an error naming the broker and what it was declaring, and retries.
func TestRelayAudit13DeclarationsBounded(t *testing.T) {
	url := sharedAMQP(t)
	brokerAddr, _ := services.Addr(services.Config{}, services.RabbitMQ)
	s := servertest.Start(t, servertest.Options{})
	stock(t, s.Engine, 0, 1)
	for _, tc := range []struct {
		what  string
		class uint16
	}{
		{"exchange", 40},
		{"queue", 50},
	} {
		t.Run(tc.what, func(t *testing.T) {
			name := auditName(t)
			broker(t, url, name)
			var log syncBuffer
			r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name,
				Checkpoint: filepath.Join(t.TempDir(), "cp"), Block: 50 * time.Millisecond,
				RetryPause: 50 * time.Millisecond, ConnectTimeout: 300 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			r.SetDial(func(network, addr string) (net.Conn, error) {
				c, err := amqp.DefaultDial(5*time.Second)(network, addr)
				if err != nil {
					return nil, err
				}
				return &silentConn{Conn: c, class: tc.class}, nil
			})
			stop := runRelay(t, r)
			defer stop()
			waitLogAll(t, &log, "no answer", brokerAddr, tc.what, name)
			t.Log(firstLine(log.String(), "no answer"))
			if pos := r.Stats.Position.Load(); pos != 0 {
				t.Errorf("the relay checkpointed %d with no %s declared", pos, tc.what)
			}
		})
	}
}

// A listener that takes the connection and never says a word: the AMQP
// handshake is bounded, and the error names the broker and the handshake.
func TestRelayAudit13SilentBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	s := servertest.Start(t, servertest.Options{})
	var log syncBuffer
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: "amqp://guest:guest@" + ln.Addr().String() + "/",
		Checkpoint: filepath.Join(t.TempDir(), "cp"), RetryPause: 50 * time.Millisecond, ConnectTimeout: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	stop := runRelay(t, r)
	defer stop()
	waitLogAll(t, &log, "broker "+ln.Addr().String(), "handshake")
	t.Log(firstLine(log.String(), "handshake"))
}

// waitLogAll waits until one line of the log holds every one of wants.
func waitLogAll(t *testing.T, log *syncBuffer, wants ...string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, line := range strings.Split(log.String(), "\n") {
			all := true
			for _, w := range wants {
				all = all && strings.Contains(line, w)
			}
			if all {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 15 s no line of the log holds all of %q:\n%s", wants, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstLine returns the first line of text that holds what.
func firstLine(text, what string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, what) {
			return line
		}
	}
	return ""
}
