package relay_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/relay"
	"allot/server/servertest"
)

// A round the broker did not confirm names no history: when the relay's
// next read reaches a server of another history (here the next node of its
// list, the first one gone), every message of that server carries that
// server's history, and the checkpoint saved after its round names the
// history of the event it holds. The relay named the history after the
// first server's event before the round was confirmed, and went on
// publishing the second server's events under it.
func TestRelayAudit14FailedFirstRoundNamesNoHistory(t *testing.T) {
	for _, tc := range []struct {
		name string
		from uint64 // the checkpoint's seq: 0 is none, above 0 a seq alone
	}{
		{"fresh", 0},
		{"seq alone", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := sharedAMQP(t)
			name := auditName(t)
			ch := broker(t, url, name)
			a := servertest.Start(t, servertest.Options{})
			b := servertest.Start(t, servertest.Options{})
			stock(t, a.Engine, 0, 4)
			stock(t, b.Engine, 100, 6)
			pa := servertest.StartCutProxy(t, a.RESPAddr())
			cp := filepath.Join(t.TempDir(), "cp")
			if tc.from > 0 {
				if err := relay.WriteCheckpoint(cp, tc.from); err != nil {
					t.Fatal(err)
				}
			}
			var log syncBuffer
			r, err := relay.New(relay.Config{Addr: pa.Addr() + "," + b.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name,
				Checkpoint: cp, Block: 50 * time.Millisecond, ConfirmTimeout: 300 * time.Millisecond,
				RetryPause: 50 * time.Millisecond, RetryPauseMax: 200 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			var fault faultNet
			fault.set(faultDrop)
			r.SetDial(fault.dial)
			// The pause after the first failure (the unconfirmed round)
			// waits until the first server is gone and the broker confirms
			// again; the other pauses are the clock's.
			failed, resume := make(chan struct{}), make(chan struct{})
			var first sync.Once
			r.SetRetryClock(func() float64 { return 0.5 }, func(ctx context.Context, d time.Duration) {
				first.Do(func() {
					close(failed)
					select {
					case <-resume:
					case <-ctx.Done():
					}
				})
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
			})
			var once sync.Once
			stop := runRelay(t, r)
			defer once.Do(stop)
			select {
			case <-failed:
			case <-time.After(20 * time.Second):
				t.Fatalf("no failed round after 20 s:\n%s", log.String())
			}
			if l := firstLine(log.String(), "not confirmed"); !strings.Contains(l, "from="+strconv.FormatUint(tc.from+1, 10)) {
				t.Fatalf("the first failure is not the unconfirmed round of seq %d on:\n%s", tc.from+1, log.String())
			}
			pa.Close()
			fault.set(faultNone)
			close(resume)
			for deadline := time.Now().Add(20 * time.Second); r.Stats.Position.Load() < 6; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the relay is at %d after 20 s, want 6 (the second server's events); its first refusal: %s",
						r.Stats.Position.Load(), firstLine(log.String(), "trying the next"))
				}
			}
			once.Do(stop)

			events := streamEvents(t, b.RESPAddr(), 6)
			want := relay.HistoryAt(&events[0])
			if tc.from > 0 {
				want = relay.HistoryAt(&events[tc.from-1])
			}
			other := relay.HistoryAt(&streamEvents(t, a.RESPAddr(), 1)[0])
			msgs := collect(t, ch, name)
			if len(msgs) == 0 {
				t.Fatal("no message")
			}
			for _, m := range msgs {
				if m.history != want {
					t.Errorf("seq %d (%s) of the second server carries allot-history %q, want its own %q (the first server's is named %q)",
						m.seq, m.key, m.history, want, other)
				}
			}
			if _, err := checkDelivery(events[tc.from:], msgs, r.Stats.Resent.Load()); err != nil {
				t.Error(err)
			}
			saved, err := relay.LoadCheckpoint(cp)
			if err != nil {
				t.Fatal(err)
			}
			if saved.Seq != 6 || saved.History != want || saved.Event != relay.Fingerprint(&events[5]) {
				t.Errorf("checkpoint %+v; want seq 6 of history %q, event %s (the second server's)", saved, want, relay.Fingerprint(&events[5]))
			}
		})
	}
}
