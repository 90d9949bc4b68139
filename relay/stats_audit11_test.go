package relay_test

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"allot/relay"
	"allot/server/servertest"
)

// The relay logs its Stats every StatsEvery while they change, not only
// when it stops, and says nothing more while they stay the same.
func TestRelayAudit11StatsLoggedPeriodically(t *testing.T) {
	_, url := privateBroker(t)
	ch := openChannel(t, url)
	const exchange, queue = "audit11.stats", "audit11.stats.q"
	defer ch.QueueDelete(queue, false, false, false)
	s := servertest.Start(t, servertest.Options{})
	var log syncBuffer
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: exchange, Queue: queue,
		Checkpoint: filepath.Join(t.TempDir(), "cp"), Block: 50 * time.Millisecond, RetryPause: 50 * time.Millisecond,
		StatsEvery: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	stop := runRelay(t, r)
	defer stop()
	stock(t, s.Engine, 0, 3)
	waitPosition(t, r, 3)
	waitLog(t, &log, "position=3 events=3 messages=3 resent=0 reconnects=0", 1)
	stock(t, s.Engine, 3, 2)
	waitPosition(t, r, 5)
	waitLog(t, &log, "position=5 events=5", 1)
	n := strings.Count(log.String(), "relay: stats")
	time.Sleep(time.Second)
	if m := strings.Count(log.String(), "relay: stats"); m != n {
		t.Errorf("%d more stats lines while nothing changed:\n%s", m-n, log.String())
	}
}
