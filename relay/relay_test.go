package relay_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/changes"
	"allot/client"
	"allot/engine"
	"allot/inventory"
	"allot/relay"
	"allot/server/servertest"
	"allot/services"
)

// The relay under test runs as a child process (this test binary again),
// so that it can be killed with SIGKILL like a real one.
const childEnv = "ALLOT_RELAY_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

func runChild() int {
	batch, _ := strconv.Atoi(os.Getenv("RELAY_BATCH"))
	r, err := relay.New(relay.Config{
		Addr: os.Getenv("RELAY_ADDR"), AMQPURL: os.Getenv("RELAY_AMQP"), Queue: os.Getenv("RELAY_QUEUE"),
		Checkpoint: os.Getenv("RELAY_CHECKPOINT"), BatchMax: batch, Block: 200 * time.Millisecond,
		ConfirmTimeout: 5 * time.Second, RetryPause: 100 * time.Millisecond, RetryPauseMax: time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := r.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// message is one delivery as a consumer sees it.
type message struct {
	key     string
	seq     uint64
	ev      changes.Event
	resent  bool   // the header resent
	history string // the header allot-history
}

// deliveries is what checkDelivery counted.
type deliveries struct {
	duplicates int // messages after the first of their (routing key, seq)
	resent     int // messages with the header resent
}

// checkDelivery checks what a queue bound to every routing key received,
// in queue order, against what the relay promises (doc.go), no less and
// no more:
//   - every event of events reaches each of its routing keys
//     (RoutingKeys) at least once, with its body, and no message is of
//     another seq or of a key its event does not route to;
//   - per routing key, the first delivery of each seq comes in seq order,
//     but for one marked resent: a round that failed part-way (a nack, a
//     returned message) is sent again from its start, so the resent copy
//     of a seq whose first copy was lost may come after later seqs of its
//     key;
//   - any later message of a (routing key, seq) is a duplicate, allowed
//     and counted.
//
// relayResent is the relay's own count of the messages it sent again
// (Stats.Resent), or -1 when relays were restarted on the way (a new
// process sends again, unmarked and uncounted, what the one before may
// have sent). When it is known, every duplicate carries the header resent,
// and the messages so marked are no more than the relay counted (a marked
// message may be lost with its round, and counted again when sent once
// more).
//
// It once dropped as a repeat every seq not above the last one of its
// key, the rule doc.go tells consumers not to use: it failed the resent
// late first copy the relay may send, and let through, as a repeat, a
// message of a key its event does not touch below that key's last seq.
//
// An unmarked late first copy fails even after a restart: a restarted
// relay sends again, unmarked, what its predecessor wrote, a prefix the
// broker took in order; it would take a nack or a return the predecessor
// did not live to see, which the tests' queues never give.
func checkDelivery(events []changes.Event, msgs []message, relayResent int64) (counted deliveries, err error) {
	type delivery struct {
		key string
		seq uint64
	}
	bySeq := map[uint64]*changes.Event{}
	routed := map[delivery]bool{}
	for i := range events {
		ev := &events[i]
		bySeq[ev.Seq] = ev
		for _, k := range relay.RoutingKeys(ev, nil) {
			routed[delivery{k, ev.Seq}] = true
		}
	}
	delivered := map[delivery]bool{}
	last := map[string]uint64{} // per key, the seq of the last first delivery
	for i, m := range msgs {
		want, ok := bySeq[m.seq]
		if !ok {
			return counted, fmt.Errorf("message %d: seq %d is no event of the stream", i, m.seq)
		}
		if fmt.Sprint(*want) != fmt.Sprint(m.ev) {
			return counted, fmt.Errorf("message %d: seq %d body %+v, the stream says %+v", i, m.seq, m.ev, *want)
		}
		d := delivery{m.key, m.seq}
		if !routed[d] {
			return counted, fmt.Errorf("message %d: seq %d with routing key %q, which its event does not route to (%v)", i, m.seq, m.key, relay.RoutingKeys(want, nil))
		}
		if m.resent {
			counted.resent++
		}
		if delivered[d] {
			counted.duplicates++
			if relayResent >= 0 && !m.resent {
				return counted, fmt.Errorf("message %d: seq %d for %q again, without the header resent, from a relay never restarted", i, m.seq, m.key)
			}
			continue
		}
		if m.seq < last[m.key] && !m.resent {
			return counted, fmt.Errorf("message %d: the first delivery of seq %d for %q came after that of seq %d, and is not marked resent", i, m.seq, m.key, last[m.key])
		}
		delivered[d] = true
		last[m.key] = max(last[m.key], m.seq)
	}
	for i := range events {
		for _, k := range relay.RoutingKeys(&events[i], nil) {
			if !delivered[delivery{k, events[i].Seq}] {
				return counted, fmt.Errorf("seq %d never reached the queue for %q", events[i].Seq, k)
			}
		}
	}
	if relayResent >= 0 && int64(counted.resent) > relayResent {
		return counted, fmt.Errorf("%d messages marked resent, and the relay counted %d sent again", counted.resent, relayResent)
	}
	return counted, nil
}

func TestCheckDeliveryCatchesLossAndDisorder(t *testing.T) {
	ev := func(seq uint64, skus ...string) changes.Event {
		e := changes.Event{Seq: seq, Op: "stock", Rows: []changes.Row{}}
		for _, s := range skus {
			e.Rows = append(e.Rows, changes.Row{SKU: s, Warehouse: "w", Condition: "c", Source: "s", Delta: 1, CountAfter: 1})
		}
		return e
	}
	events := []changes.Event{ev(1, "a"), ev(2, "b"), ev(3, "a", "b"), ev(4)}
	msg := func(key string, seq uint64) message { return message{key: key, seq: seq, ev: events[seq-1]} }
	good := []message{msg("a", 1), msg("b", 2), msg("a", 3), msg("a", 1), msg("b", 3), msg("_", 4), msg("a", 3)}
	if n, err := checkDelivery(events, good, -1); err != nil || n.duplicates != 2 {
		t.Fatalf("good delivery: %d duplicates, %v", n.duplicates, err)
	}
	for name, bad := range map[string][]message{
		"lost":      {msg("a", 1), msg("b", 2), msg("a", 3), msg("_", 4)},
		"reordered": {msg("a", 3), msg("a", 1), msg("b", 2), msg("b", 3), msg("_", 4)},
		"wrong key": {msg("a", 1), msg("b", 2), msg("a", 3), msg("b", 3), msg("a", 4)},
		"bad body":  {msg("a", 1), {key: "b", seq: 2, ev: events[0]}, msg("a", 3), msg("b", 3), msg("_", 4)},
	} {
		if _, err := checkDelivery(events, bad, -1); err == nil {
			t.Errorf("%s: the check passed", name)
		}
	}
}

func TestRoutingKeys(t *testing.T) {
	ev := changes.Event{Rows: []changes.Row{{SKU: "b"}, {SKU: "a"}, {SKU: "b"}}}
	if got := fmt.Sprint(relay.RoutingKeys(&ev, nil)); got != "[b a]" {
		t.Errorf("keys %s", got)
	}
	if got := fmt.Sprint(relay.RoutingKeys(&changes.Event{}, nil)); got != "[_]" {
		t.Errorf("keys of a rowless event %s", got)
	}
}

func TestCheckpoint(t *testing.T) {
	name := filepath.Join(t.TempDir(), "cp")
	if seq, err := relay.ReadCheckpoint(name); err != nil || seq != 0 {
		t.Fatalf("missing checkpoint: %d %v", seq, err)
	}
	if err := relay.WriteCheckpoint(name, 42); err != nil {
		t.Fatal(err)
	}
	if seq, err := relay.ReadCheckpoint(name); err != nil || seq != 42 {
		t.Fatalf("checkpoint: %d %v", seq, err)
	}
	os.WriteFile(name, []byte("x\n"), 0o644)
	if _, err := relay.ReadCheckpoint(name); err == nil {
		t.Fatal("a garbled checkpoint was accepted")
	}
}

// produce runs a mix of every mutation on a few SKUs until stop closes.
func produce(t *testing.T, e *engine.Engine, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(11, 11))
	key := func(i int) inventory.RowKey {
		return inventory.RowKey{SKU: "sku" + strconv.Itoa(i%5), Warehouse: "w" + strconv.Itoa(i%2), Condition: "new", Source: "own"}
	}
	for i := 0; i < 10; i++ {
		e.Stock(key(i), 50, 100)
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		g := key(rng.IntN(5)).Group()
		var op inventory.Op
		switch rng.IntN(5) {
		case 0:
			op = inventory.Capture(g, 1)
		case 1:
			op = inventory.Release(key(rng.IntN(10)), 1)
		case 2:
			op = inventory.Hold("h"+strconv.Itoa(i), int64(5+rng.IntN(50)), []inventory.Demand{{Group: g, N: 1}})
		case 3:
			op = inventory.Order([]inventory.Demand{{Group: g, N: 1}, {Group: key(rng.IntN(5)).Group(), N: 1}})
		case 4:
			op = inventory.Confirm("h" + strconv.Itoa(i-rng.IntN(20)))
		}
		if _, err := e.Do(op, nil); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(3 * time.Millisecond)
	}
}

// The acceptance test of the relay: kill -9 of the relay (twice) and of
// RabbitMQ while events flow, and the first of the two allot addresses it
// was given gone for good; afterwards every event is in the queue at least
// once, first copies in order per SKU, the duplicates counted, and every
// message names the one history.
func TestRelaySurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a RabbitMQ node of its own")
	}
	ctx := context.Background()
	// A private node (its own directory and ports): the test kills it, and
	// must not kill the one other tests share.
	scfg := services.WithPortOffset(services.Config{Dir: filepath.Join(t.TempDir(), "services"), Timeout: 3 * time.Minute}, 317)
	began := time.Now()
	upCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := services.Up(upCtx, scfg, services.RabbitMQ); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("RabbitMQ is needed: %v", err)
		}
		t.Skipf("RabbitMQ is not available (CI=true makes this a failure): %v", err)
	}
	defer services.Down(context.Background(), scfg, services.RabbitMQ)
	t.Logf("RabbitMQ up in %v", time.Since(began).Round(time.Millisecond))
	addr, _ := services.Addr(scfg, services.RabbitMQ)
	amqpURL := "amqp://guest:guest@" + addr + "/"

	s := servertest.Start(t, servertest.Options{Durability: engine.DurabilityFsync})
	// The relay is given two addresses, as it would be a shard's nodes:
	// two proxies to the one server. The first dies for good early on, and
	// the relay must go on through the second.
	first, second := servertest.StartCutProxy(t, s.RESPAddr()), servertest.StartCutProxy(t, s.RESPAddr())
	checkpoint := filepath.Join(t.TempDir(), "relay.checkpoint")
	const queue = "relay.test"
	var children []*exec.Cmd
	startRelay := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "RELAY_ADDR="+first.Addr()+","+second.Addr(), "RELAY_AMQP="+amqpURL,
			"RELAY_QUEUE="+queue, "RELAY_CHECKPOINT="+checkpoint, "RELAY_BATCH=50")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, cmd)
		return cmd
	}
	defer func() {
		for _, c := range children {
			c.Process.Kill()
			c.Wait()
		}
	}()
	kill := func(c *exec.Cmd) {
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		produce(t, s.Engine, stop)
	}()
	r := startRelay()
	time.Sleep(700 * time.Millisecond)
	first.Close()
	t.Logf("the relay's first node gone at checkpoint %d of %d", must(relay.ReadCheckpoint(checkpoint)), s.Engine.DurableLSN())
	time.Sleep(800 * time.Millisecond)
	kill(r)
	t.Logf("relay killed at checkpoint %d of %d", must(relay.ReadCheckpoint(checkpoint)), s.Engine.DurableLSN())
	r = startRelay()
	time.Sleep(700 * time.Millisecond)
	if _, err := services.Kill(ctx, scfg, services.RabbitMQ); err != nil {
		t.Fatal(err)
	}
	t.Logf("RabbitMQ killed at checkpoint %d of %d", must(relay.ReadCheckpoint(checkpoint)), s.Engine.DurableLSN())
	time.Sleep(500 * time.Millisecond)
	restart := time.Now()
	if err := services.Up(upCtx, scfg, services.RabbitMQ); err != nil {
		t.Fatal(err)
	}
	t.Logf("RabbitMQ restarted in %v", time.Since(restart).Round(time.Millisecond))
	time.Sleep(1500 * time.Millisecond)
	kill(r)
	t.Logf("relay killed again at checkpoint %d of %d", must(relay.ReadCheckpoint(checkpoint)), s.Engine.DurableLSN())
	r = startRelay()
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	stopped := time.Now()
	// Holds may still expire: wait for the stream to settle, then for the
	// relay to confirm all of it.
	var last uint64
	deadline := time.Now().Add(90 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the relay is at %d, the stream at %d, after 90 s", must(relay.ReadCheckpoint(checkpoint)), s.Engine.DurableLSN())
		}
		last = s.Engine.DurableLSN()
		if cp := must(relay.ReadCheckpoint(checkpoint)); cp == last && s.Engine.Stats().State.HoldsActive == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the relay caught up with %d events %v after the producer stopped", last, time.Since(stopped).Round(time.Millisecond))
	r.Process.Signal(syscall.SIGTERM)
	r.Wait()

	// Every event, from allot itself.
	cl, err := client.New(client.Config{Addr: s.RESPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var events []changes.Event
	for uint64(len(events)) < last {
		evs, err := cl.Changes(ctx, uint64(len(events)), changes.CountMax, 0)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, evs...)
	}
	events = events[:last]

	// Everything in the queue, in queue order.
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	var msgs []message
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		ev, err := changes.ParseEvent(d.Body)
		if err != nil {
			t.Fatalf("message %d: %v", len(msgs), err)
		}
		seq, _ := strconv.ParseUint(d.MessageId, 10, 64)
		if hs, _ := d.Headers["seq"].(int64); uint64(hs) != seq || ev.Seq != seq {
			t.Fatalf("message %d: id %q, header %v, body seq %d", len(msgs), d.MessageId, d.Headers["seq"], ev.Seq)
		}
		history, _ := d.Headers["allot-history"].(string)
		msgs = append(msgs, message{key: d.RoutingKey, seq: seq, ev: ev, resent: d.Headers["resent"] == true, history: history})
	}
	ch.QueueDelete(queue, false, false, false)
	// The relay was restarted: what a killed one sent, its successor sends
	// again unmarked and uncounted.
	counted, err := checkDelivery(events, msgs, -1)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		if m.history == "" || m.history != msgs[0].history {
			t.Fatalf("message %d (seq %d) names history %q, message 0 %q: one relay checkpoint, one history", i, m.seq, m.history, msgs[0].history)
		}
	}
	t.Logf("%d events, %d messages, %d duplicates (%d messages marked resent)", len(events), len(msgs), counted.duplicates, counted.resent)
}

func must(v uint64, err error) uint64 {
	if err != nil {
		panic(err)
	}
	return v
}
