package relay

import (
	"errors"
	"strings"
	"testing"

	"allot/client"
)

// A relay given a shard's nodes moves to the next node after any failed
// read, and stops only when every node refused the checkpoint as trimmed
// (naming the oldest seq any of them keeps).
func TestReadFailedMovesAcrossNodes(t *testing.T) {
	r, err := New(Config{Addr: "127.0.0.1:1, 127.0.0.1:2,127.0.0.1:3", AMQPURL: "amqp://x", Checkpoint: "cp"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.closeNodes()
	if len(r.nodes) != 3 || r.nodes[1].addr != "127.0.0.1:2" {
		t.Fatalf("nodes %+v", r.nodes)
	}
	if err := r.readFailed(10, errors.New("connection refused")); err != nil || r.cur != 1 {
		t.Fatalf("a dead node: %v, now at node %d, want none and node 1", err, r.cur)
	}
	if err := r.readFailed(10, &client.TrimmedError{Oldest: 50}); err != nil || r.cur != 2 {
		t.Fatalf("one node trimmed: %v, now at node %d, want none and node 2", err, r.cur)
	}
	if err := r.readFailed(10, &client.TrimmedError{Oldest: 40}); err != nil || r.cur != 0 {
		t.Fatalf("two of three trimmed: %v, now at node %d, want none and node 0", err, r.cur)
	}
	err = r.readFailed(10, &client.TrimmedError{Oldest: 60})
	if err == nil || !strings.Contains(err.Error(), "oldest seq 40") || !errors.As(err, new(*client.TrimmedError)) {
		t.Fatalf("every node trimmed: %v, want the relay to stop naming oldest seq 40", err)
	}

	one, err := New(Config{Addr: "127.0.0.1:1", AMQPURL: "amqp://x", Checkpoint: "cp"})
	if err != nil {
		t.Fatal(err)
	}
	defer one.closeNodes()
	if err := one.readFailed(10, errors.New("connection refused")); err != nil || one.cur != 0 {
		t.Fatalf("one node, a failed read: %v, node %d", err, one.cur)
	}
	if err := one.readFailed(10, &client.TrimmedError{Oldest: 50}); err == nil {
		t.Fatal("one node that refused the checkpoint as trimmed: the relay went on")
	}

	for _, addr := range []string{"a:1,,b:2", "a:1, "} {
		if _, err := New(Config{Addr: addr, AMQPURL: "amqp://x", Checkpoint: "cp"}); err == nil || !strings.Contains(err.Error(), "empty address") {
			t.Errorf("Addr %q: %v, want an error naming the empty address", addr, err)
		}
	}
}
