package relay_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/changes"
	"allot/client"
	"allot/relay"
	"allot/server/servertest"
)

// checkDelivery checks the relay's promise and no more: what it allows
// passes, with its duplicates counted, including the case relay/doc.go
// names (a round that failed part-way is sent again, and the resent copy
// of seq 1, whose first copy was lost, arrives after seq 3 of its SKU);
// what breaks the promise fails, including what the rule "a seq not above
// the last one of its key is a repeat" let through.
func TestCheckDeliveryAudit13ChecksThePromise(t *testing.T) {
	ev := func(seq uint64, skus ...string) changes.Event {
		e := changes.Event{Seq: seq, Op: "stock", Rows: []changes.Row{}}
		for _, s := range skus {
			e.Rows = append(e.Rows, changes.Row{SKU: s, Warehouse: "w", Condition: "c", Source: "s", Delta: 1, CountAfter: 1})
		}
		return e
	}
	events := []changes.Event{ev(1, "a"), ev(2, "b"), ev(3, "a", "b"), ev(4)}
	msg := func(key string, seq uint64) message { return message{key: key, seq: seq, ev: events[seq-1]} }
	resent := func(key string, seq uint64) message {
		m := msg(key, seq)
		m.resent = true
		return m
	}
	for _, tc := range []struct {
		name        string
		msgs        []message
		relayResent int64
		want        deliveries
	}{
		{"each once", []message{msg("a", 1), msg("b", 2), msg("a", 3), msg("b", 3), msg("_", 4)}, 0, deliveries{}},
		{"a duplicate marked and counted", []message{msg("a", 1), msg("b", 2), msg("a", 3), resent("a", 1), msg("b", 3), msg("_", 4)}, 1,
			deliveries{duplicates: 1, resent: 1}},
		{"first copies lost, sent again marked", []message{msg("a", 1), msg("b", 2), resent("a", 3), resent("b", 3), msg("_", 4)}, 2,
			deliveries{resent: 2}},
		{"marked messages lost with their round", []message{msg("a", 1), msg("b", 2), resent("a", 3), msg("b", 3), msg("_", 4)}, 5,
			deliveries{resent: 1}},
		{"a resent first copy after a later seq of its SKU", []message{msg("b", 2), msg("a", 3), msg("b", 3), resent("a", 1), msg("_", 4)}, 1,
			deliveries{resent: 1}},
		{"a restarted relay's unmarked repeats", []message{msg("a", 1), msg("b", 2), msg("a", 1), msg("b", 2), msg("a", 3), msg("b", 3), msg("_", 4), msg("_", 4)}, -1,
			deliveries{duplicates: 3}},
	} {
		got, err := checkDelivery(events, tc.msgs, tc.relayResent)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v and no error", tc.name, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name        string
		msgs        []message
		relayResent int64
	}{
		// Seq 1 touches only a: a message of it for b is misrouted, and
		// must not pass as a repeat because b already had seq 3.
		{"a misrouted message below the key's last seq", []message{msg("a", 1), msg("b", 2), msg("a", 3), msg("b", 3), msg("_", 4), msg("b", 1)}, -1},
		{"an unmarked duplicate from a relay never restarted", []message{msg("a", 1), msg("b", 2), msg("a", 1), msg("a", 3), msg("b", 3), msg("_", 4)}, 0},
		{"more marked messages than the relay sent again", []message{msg("a", 1), msg("b", 2), resent("a", 3), resent("b", 3), msg("_", 4)}, 1},
		{"an event lost", []message{msg("a", 1), msg("a", 3), msg("b", 3), msg("_", 4)}, -1},
		{"first deliveries out of order", []message{msg("a", 3), msg("a", 1), msg("b", 2), msg("b", 3), msg("_", 4)}, -1},
		{"an unmarked first copy after a later seq, restarted relay", []message{msg("b", 2), msg("a", 3), msg("b", 3), msg("a", 1), msg("_", 4)}, -1},
	} {
		if got, err := checkDelivery(events, tc.msgs, tc.relayResent); err == nil {
			t.Errorf("%s: the check passed (%+v)", tc.name, got)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
}

// The check has the power to fail a relay that breaks its promise: the
// real relay, made to skip an event, to publish two events of a SKU out of
// order, or to send an event twice without saying so, fails it; the sound
// relay passes.
func TestRelayAudit13CheckDeliveryCatchesBrokenRelays(t *testing.T) {
	url := sharedAMQP(t)
	const last = 12 // seqs 1..12 over sku0, sku1, sku2 in turn
	for _, tc := range []struct {
		name   string
		broken func([]changes.Event) []changes.Event
	}{
		{"sound", nil},
		{"skips seq 6", func(evs []changes.Event) []changes.Event {
			return slices.DeleteFunc(slices.Clone(evs), func(ev changes.Event) bool { return ev.Seq == 6 })
		}},
		{"reorders within a SKU", func(evs []changes.Event) []changes.Event {
			evs = slices.Clone(evs)
			for i := range evs {
				for j := i + 1; j < len(evs); j++ {
					if sharesKey(&evs[i], &evs[j]) {
						evs[i], evs[j] = evs[j], evs[i]
						return evs
					}
				}
			}
			return evs
		}},
		{"sends seq 6 twice, unmarked", func(evs []changes.Event) []changes.Event {
			for _, ev := range evs {
				if ev.Seq == 6 {
					return append(slices.Clone(evs), ev)
				}
			}
			return evs
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := auditName(t)
			ch := broker(t, url, name)
			s := servertest.Start(t, servertest.Options{})
			stock(t, s.Engine, 0, last)
			r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name,
				Checkpoint: filepath.Join(t.TempDir(), "cp"), BatchMax: 4, Block: 50 * time.Millisecond, RetryPause: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if tc.broken != nil {
				r.SetBroken(tc.broken)
			}
			stop := runRelay(t, r)
			waitPosition(t, r, last)
			stop()
			counted, err := checkDelivery(streamEvents(t, s.RESPAddr(), last), collect(t, ch, name), r.Stats.Resent.Load())
			switch {
			case tc.broken == nil && err != nil:
				t.Fatalf("the sound relay failed the check: %v", err)
			case tc.broken != nil && err == nil:
				t.Fatalf("a relay that %s passed the check (%+v)", tc.name, counted)
			case err != nil:
				t.Logf("caught: %v", err)
			}
		})
	}
}

// sharesKey reports whether a and b have a routing key in common.
func sharesKey(a, b *changes.Event) bool {
	for _, k := range relay.RoutingKeys(a, nil) {
		if slices.Contains(relay.RoutingKeys(b, nil), k) {
			return true
		}
	}
	return false
}

// streamEvents reads events 1..last from the server at addr.
func streamEvents(t *testing.T, addr string, last uint64) []changes.Event {
	t.Helper()
	cl, err := client.New(client.Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var events []changes.Event
	for uint64(len(events)) < last {
		evs, err := cl.Changes(context.Background(), uint64(len(events)), changes.CountMax, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			t.Fatalf("the server has %d events, want %d", len(events), last)
		}
		events = append(events, evs...)
	}
	return events[:last]
}

// collect takes every message out of queue, in queue order, as a
// consumer sees it.
func collect(t *testing.T, ch *amqp.Channel, queue string) []message {
	t.Helper()
	var msgs []message
	for _, d := range drain(t, ch, queue) {
		ev, err := changes.ParseEvent(d.Body)
		if err != nil {
			t.Fatalf("message %d: %v", len(msgs), err)
		}
		seq, err := strconv.ParseUint(d.MessageId, 10, 64)
		if err != nil || ev.Seq != seq {
			t.Fatalf("message %d: id %q, body seq %d", len(msgs), d.MessageId, ev.Seq)
		}
		history, _ := d.Headers["allot-history"].(string)
		msgs = append(msgs, message{key: d.RoutingKey, seq: seq, ev: ev, resent: d.Headers["resent"] == true, history: history})
	}
	return msgs
}
