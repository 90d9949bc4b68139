package relay

import (
	"errors"
	"strings"
	"testing"

	"allot/client"
)

// A node past whose newest seq the checkpoint is (a standby that trails,
// or another server) only moves the relay on; when every node refuses,
// one way or another, the relay stops naming each node's refusal.
func TestRelayAuditRefusalsAcrossNodes(t *testing.T) {
	r, err := New(Config{Addr: "127.0.0.1:1,127.0.0.1:2", AMQPURL: "amqp://x", Checkpoint: "cp"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.closeNodes()
	ahead := &client.FutureError{After: 10, Newest: 7}
	if err := r.readFailed(10, ahead); err != nil || r.cur != 1 {
		t.Fatalf("one node behind the checkpoint: %v, node %d; want none and node 1", err, r.cur)
	}
	err = r.readFailed(10, &client.TrimmedError{Oldest: 50})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1: checkpoint 10 in cp is past the newest seq 7") ||
		!strings.Contains(err.Error(), "127.0.0.1:2: client: change stream trimmed") || !errors.As(err, new(*client.TrimmedError)) {
		t.Fatalf("every node refused: %v", err)
	}
	for _, e := range []error{errors.New("connection refused"), &client.ServerError{Msg: "UNAVAILABLE change streams full"}, &client.ServerError{Msg: "ERR after x"}} {
		if refused(e) {
			t.Errorf("%v taken as a refusal for good", e)
		}
	}
}
