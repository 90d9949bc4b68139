package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/services"
	"allot/services/servicestest"
	"allot/store"
)

func openAudit(t *testing.T) *Store {
	t.Helper()
	servicestest.Require(t, services.RabbitMQ)
	st, err := Open(context.Background(), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// deleteQueue deletes the space's queue behind its back, as the broker
// does when the queue's x-expires lease runs out.
func deleteQueue(t *testing.T, st *Store, sp *space) {
	t.Helper()
	ch, err := st.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueueDelete(sp.queue, false, false, false); err != nil {
		t.Fatal(err)
	}
}

// redeclare declares the space's queue again, as RWOpen did.
func redeclare(t *testing.T, st *Store, sp *space) {
	t.Helper()
	ch, err := st.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	args := amqp.Table{"x-expires": int32(queueExpiry / time.Millisecond)}
	if _, err := ch.QueueDeclare(sp.queue, sp.opts.Durable, false, false, false, args); err != nil {
		t.Fatal(err)
	}
}

// TestUnroutablePublishIsNotAcknowledged: messages are published with
// mandatory set, but nobody listened for the broker's basic.return, so a
// message that reached no queue (the queue gone) was confirmed by the
// broker (a confirm acks an unroutable message) or committed, and Write
// reported it published: the bench counted ops that did not happen.
func TestUnroutablePublishIsNotAcknowledged(t *testing.T) {
	ctx := context.Background()
	st := openAudit(t)
	for _, o := range []store.RWOptions{
		{Lock: store.RWLockHard, Durable: true, Confirm: true},
		{Lock: store.RWLockHard, Durable: false, Confirm: true},
		{Lock: store.RWLockHard, Durable: true, Transactional: true},
	} {
		t.Run(fmt.Sprintf("durable=%v,tx=%v", o.Durable, o.Transactional), func(t *testing.T) {
			rs, err := st.RWOpen(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			sp := rs.(*space)
			defer sp.Close()
			se, err := sp.Session(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer se.Close()
			if err := se.Write(ctx, []store.RWRecord{{Key: "before", Value: 1}}); err != nil {
				t.Fatalf("write to the live queue: %v", err)
			}
			deleteQueue(t, st, sp)
			if err := se.Write(ctx, []store.RWRecord{{Key: "x", Value: 2}, {Key: "y", Value: 3}}); err == nil {
				t.Fatal("Write to a deleted queue succeeded: the broker returned the messages and Write counted them as published")
			}
			// The session stays usable once the queue is back.
			redeclare(t, st, sp)
			if err := se.Write(ctx, []store.RWRecord{{Key: "after", Value: 4}}); err != nil {
				t.Fatalf("write once the queue is back: %v", err)
			}
		})
	}
}

// TestLoadToDeletedQueueFails: Load publishes with confirms too; a message
// returned unroutable must fail it.
func TestLoadToDeletedQueueFails(t *testing.T) {
	ctx := context.Background()
	st := openAudit(t)
	rs, err := st.RWOpen(ctx, store.RWOptions{Lock: store.RWLockHard, Durable: true, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	sp := rs.(*space)
	defer sp.Close()
	deleteQueue(t, st, sp)
	if err := sp.Load(ctx, []store.RWRecord{{Key: "a", Value: 1}, {Key: "b", Value: 2}}); err == nil {
		t.Fatal("Load into a deleted queue succeeded")
	}
}

// TestQueueOutlivesItsExpiryWhileOpen: the queue is declared with
// x-expires so that one left by a dead process goes away; but the broker
// counts a queue with no consumer as unused however many messages are
// published to it, so a WRITE run longer than the expiry (publishers
// only) lost its queue, and every confirmed message in it, mid-run.
func TestQueueOutlivesItsExpiryWhileOpen(t *testing.T) {
	ctx := context.Background()
	st := openAudit(t)
	defer func(e time.Duration) { queueExpiry = e }(queueExpiry)
	queueExpiry = 1500 * time.Millisecond
	rs, err := st.RWOpen(ctx, store.RWOptions{Lock: store.RWLockHard, Durable: true, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	sp := rs.(*space)
	defer sp.Close()
	se, err := sp.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	written := 0
	for deadline := time.Now().Add(3 * queueExpiry); time.Now().Before(deadline); written++ {
		if err := se.Write(ctx, []store.RWRecord{{Key: fmt.Sprint("k", written), Value: int64(written)}}); err != nil {
			t.Fatalf("write %d, %v after the queue was declared: %v", written, time.Since(deadline.Add(-3*queueExpiry)), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	recs, err := sp.Records(ctx)
	if err != nil {
		t.Fatalf("Records after %d confirmed writes: %v", written, err)
	}
	if len(recs) != written {
		t.Fatalf("%d messages in the queue, %d confirmed", len(recs), written)
	}
}

// TestDialErrorHidesThePassword: a connection error quoted the whole URL
// given with --addr, password and all, into the run's error (and so into
// the results file and the report).
func TestDialErrorHidesThePassword(t *testing.T) {
	for _, addr := range []string{"amqp://bench:s3cret-pw@127.0.0.1:1/", "amqp://bench:s3cret-pw@127.0.0.1:1/%zz"} {
		_, err := Open(context.Background(), store.Config{Addr: addr, Timeout: time.Second})
		if err == nil {
			t.Fatalf("%s: connected", addr)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("error quotes the password: %v", err)
		}
	}
}

// TestMalformedAddrIsNotServerDown: a URL that does not parse (a typo in
// --addr) was reported as store.ErrServerDown ("server is not reachable",
// status server_down), since url.Error passes for a net.Error.
func TestMalformedAddrIsNotServerDown(t *testing.T) {
	_, err := Open(context.Background(), store.Config{Addr: "amqp://bench:pw@127.0.0.1:14672/%zz"})
	if err == nil || errors.Is(err, store.ErrServerDown) {
		t.Fatalf("malformed URL: err %v, want an error that is not ErrServerDown", err)
	}
	// A '/' in the password hides it from redacted, and the URL parser
	// quotes part of it: neither may reach the error.
	_, err = Open(context.Background(), store.Config{Addr: "amqp://bench:se/cret@127.0.0.1:14672/"})
	if err == nil || strings.Contains(err.Error(), "se/cret") || strings.Contains(err.Error(), ":se") {
		t.Fatalf("a password with a '/': err %v, want an error that shows none of it", err)
	}
}

func TestRedacted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"amqp://guest:guest@127.0.0.1:14672/", "amqp://guest:xxxxx@127.0.0.1:14672/"},
		{"amqp://u@h:1/", "amqp://u@h:1/"},
		{"amqp://h:1/v@h", "amqp://h:1/v@h"},
		{"amqps://u:p@ss@h:1/vh", "amqps://u:xxxxx@h:1/vh"},
		{"h:1", "h:1"},
	} {
		if got := redacted(c.in); got != c.want {
			t.Errorf("redacted(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestDrainTakesWhatWasDelivered: Records consumed with auto-ack and,
// after drainWait with nothing new, returned as soon as the broker said
// the queue held no ready message; but messages the broker had already
// delivered (and so removed) sat in the consumer's buffer unread, and
// were lost when the channel closed: the checker then blamed the broker
// for missing messages. drainWait is shortened to make the window wide.
func TestDrainTakesWhatWasDelivered(t *testing.T) {
	ctx := context.Background()
	st := openAudit(t)
	defer func(d time.Duration) { drainWait = d }(drainWait)
	drainWait = time.Microsecond
	rs, err := st.RWOpen(ctx, store.RWOptions{Lock: store.RWLockHard, Durable: false, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	const n = 20000
	recs := make([]store.RWRecord, n)
	for i := range recs {
		recs[i] = store.RWRecord{Key: fmt.Sprint("m", i), Value: int64(i)}
	}
	for round := 0; round < 3; round++ {
		if err := rs.Load(ctx, recs); err != nil {
			t.Fatal(err)
		}
		got, err := rs.Records(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("round %d: Records drained %d of the %d messages in the queue", round, len(got), n)
		}
	}
}

// TestVersionedRefused: RWStore's contract has a combination the
// datastore cannot express refused with ErrRWUnsupported (its own example
// is a versioned modify on a queue); RWOpen took Versioned silently.
func TestVersionedRefused(t *testing.T) {
	st := openAudit(t)
	sp, err := st.RWOpen(context.Background(), store.RWOptions{Lock: store.RWLockHard, Versioned: true, Durable: true, Confirm: true})
	if err == nil {
		sp.Close()
	}
	if !errors.Is(err, store.ErrRWUnsupported) {
		t.Fatalf("RWOpen(Versioned) on a queue: err %v, want ErrRWUnsupported", err)
	}
}
