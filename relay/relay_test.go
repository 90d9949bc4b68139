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
		ConfirmTimeout: 5 * time.Second, RetryPause: 100 * time.Millisecond,
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
	key string
	seq uint64
	ev  changes.Event
}

// checkDelivery is the consumer's check: every event reaches every SKU it
// touches at least once, and per SKU, once repeats (seq not above the last
// seen for that SKU) are dropped, events come in seq order with none
// missing. It returns how many repeats it dropped.
func checkDelivery(events []changes.Event, msgs []message) (repeats int, err error) {
	expected := map[string][]uint64{}
	bySeq := map[uint64]*changes.Event{}
	for i := range events {
		ev := &events[i]
		bySeq[ev.Seq] = ev
		for _, k := range relay.RoutingKeys(ev, nil) {
			expected[k] = append(expected[k], ev.Seq)
		}
	}
	next := map[string]int{}
	last := map[string]uint64{}
	for i, m := range msgs {
		want, ok := bySeq[m.seq]
		if !ok {
			return repeats, fmt.Errorf("message %d: seq %d is no event of the stream", i, m.seq)
		}
		if fmt.Sprint(*want) != fmt.Sprint(m.ev) {
			return repeats, fmt.Errorf("message %d: seq %d body %+v, the stream says %+v", i, m.seq, m.ev, *want)
		}
		if m.seq <= last[m.key] {
			repeats++
			continue
		}
		exp := expected[m.key]
		if next[m.key] >= len(exp) || exp[next[m.key]] != m.seq {
			w := "nothing more"
			if next[m.key] < len(exp) {
				w = strconv.FormatUint(exp[next[m.key]], 10)
			}
			return repeats, fmt.Errorf("message %d: key %q got seq %d, expected %s", i, m.key, m.seq, w)
		}
		next[m.key]++
		last[m.key] = m.seq
	}
	for k, exp := range expected {
		if next[k] != len(exp) {
			return repeats, fmt.Errorf("key %q: %d of %d events delivered; first missing seq %d", k, next[k], len(exp), exp[next[k]])
		}
	}
	return repeats, nil
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
	msg := func(key string, seq uint64) message { return message{key, seq, events[seq-1]} }
	good := []message{msg("a", 1), msg("b", 2), msg("a", 3), msg("a", 1), msg("b", 3), msg("_", 4), msg("a", 3)}
	if n, err := checkDelivery(events, good); err != nil || n != 2 {
		t.Fatalf("good delivery: %d repeats, %v", n, err)
	}
	for name, bad := range map[string][]message{
		"lost":      {msg("a", 1), msg("b", 2), msg("a", 3), msg("_", 4)},
		"reordered": {msg("a", 3), msg("a", 1), msg("b", 2), msg("b", 3), msg("_", 4)},
		"wrong key": {msg("a", 1), msg("b", 2), msg("a", 3), msg("b", 3), msg("a", 4)},
		"bad body":  {msg("a", 1), {"b", 2, events[0]}, msg("a", 3), msg("b", 3), msg("_", 4)},
	} {
		if _, err := checkDelivery(events, bad); err == nil {
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
// once, in order per SKU, and the repeats are counted.
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
		msgs = append(msgs, message{key: d.RoutingKey, seq: seq, ev: ev})
	}
	ch.QueueDelete(queue, false, false, false)
	repeats, err := checkDelivery(events, msgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events, %d messages, %d repeats dropped by the consumer's check", len(events), len(msgs), repeats)
}

func must(v uint64, err error) uint64 {
	if err != nil {
		panic(err)
	}
	return v
}
