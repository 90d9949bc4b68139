package relay_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/changes"
	"allot/client"
	"allot/relay"
	"allot/services"
)

// privateBrokerOffset moves a private RabbitMQ node's ports (AMQP 15403,
// distribution 15404, epmd 15405) clear of the shared node (14672) and of
// the other tests' private ones (TestRelaySurvivesKills uses 317).
const privateBrokerOffset = 731

// privateBroker starts a RabbitMQ node of the test's own, which it may
// pause or put under a resource alarm without touching the node other tests
// share, and stops it at the end. It returns the node's Config and URL.
func privateBroker(t *testing.T) (services.Config, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a RabbitMQ node of its own")
	}
	// A short directory: the node's unix sockets must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "relay11-")
	if err != nil {
		t.Fatal(err)
	}
	scfg := services.WithPortOffset(services.Config{Dir: dir, Timeout: 3 * time.Minute}, privateBrokerOffset)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	if err := services.Up(ctx, scfg, services.RabbitMQ); err != nil {
		services.Down(context.Background(), scfg, services.RabbitMQ)
		os.RemoveAll(dir)
		if os.Getenv("CI") == "true" {
			t.Fatalf("RabbitMQ is needed: %v", err)
		}
		t.Skipf("RabbitMQ is not available (CI=true makes this a failure): %v", err)
	}
	t.Cleanup(func() {
		services.Resume(context.Background(), scfg, services.RabbitMQ)
		services.Down(context.Background(), scfg, services.RabbitMQ)
		os.RemoveAll(dir)
	})
	t.Logf("private RabbitMQ up in %v", time.Since(began).Round(time.Millisecond))
	addr, err := services.Addr(scfg, services.RabbitMQ)
	if err != nil {
		t.Fatal(err)
	}
	return scfg, "amqp://guest:guest@" + addr + "/"
}

// rabbitmqctl runs rabbitmqctl against the private node of scfg. The node
// is found as services starts it (services/rabbitmq.go): node name
// allot@localhost, its own epmd on the AMQP port + 2, and the Erlang cookie
// in the instance directory, which is the node's HOME.
func rabbitmqctl(t *testing.T, scfg services.Config, args ...string) string {
	t.Helper()
	addr, _ := services.Addr(scfg, services.RabbitMQ)
	_, portText, _ := strings.Cut(addr, ":")
	port, _ := strconv.Atoi(portText)
	home := filepath.Join(scfg.Dir, services.RabbitMQ)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/lib/rabbitmq/bin/rabbitmqctl", append([]string{"-n", "allot@localhost"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "ERL_EPMD_PORT="+strconv.Itoa(port+2), "RABBITMQ_NODENAME=allot@localhost",
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(home, "rabbitmq-env.conf"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// openChannel opens a connection and channel of the test's own to url.
func openChannel(t *testing.T, url string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// drain takes every message out of queue, in queue order.
func drain(t *testing.T, ch *amqp.Channel, queue string) []amqp.Delivery {
	t.Helper()
	var ds []amqp.Delivery
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatalf("reading queue %s: %v", queue, err)
		}
		if !ok {
			return ds
		}
		ds = append(ds, d)
	}
}

// seqOf is a delivery's seq (its message id).
func seqOf(d amqp.Delivery) uint64 {
	seq, _ := strconv.ParseUint(d.MessageId, 10, 64)
	return seq
}

// checkConsumed applies the consumer's rule of relay/doc.go to what a
// queue bound to every routing key got: a message whose (routing key, seq)
// was handled before is a repeat and is dropped, whatever came between it
// and its first copy. Every event from..last of the server at addr must reach
// every SKU it touches, with its body. It returns the repeats without the
// header resent: none unless a relay was restarted (a new relay does not
// know what the one before it sent).
func checkConsumed(t *testing.T, addr string, from, last uint64, ds []amqp.Delivery) (unmarked int) {
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
	type delivery struct {
		key string
		seq uint64
	}
	handled := map[delivery]bool{}
	for i, d := range ds {
		seq := seqOf(d)
		if seq < from || seq > last {
			t.Errorf("message %d: seq %d is not in %d..%d", i, seq, from, last)
			continue
		}
		ev, err := changes.ParseEvent(d.Body)
		if err != nil || fmt.Sprint(ev) != fmt.Sprint(events[seq-1]) {
			t.Errorf("message %d: seq %d body %s (%v), the stream says %+v", i, seq, d.Body, err, events[seq-1])
		}
		k := delivery{d.RoutingKey, seq}
		if handled[k] {
			if d.Headers["resent"] != true {
				t.Logf("message %d: seq %d for %q again, without the header resent", i, seq, d.RoutingKey)
				unmarked++
			}
			continue
		}
		handled[k] = true
	}
	for _, ev := range events[from-1 : last] {
		for _, key := range relay.RoutingKeys(&ev, nil) {
			if !handled[delivery{key, ev.Seq}] {
				t.Errorf("seq %d never reached the queue for %q", ev.Seq, key)
			}
		}
	}
	return unmarked
}
