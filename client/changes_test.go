package client_test

import (
	"context"
	"errors"
	"testing"

	"allot/client"
	"allot/server/servertest"
)

// A cursor past the server's newest seq is refused with a typed error that
// names both seqs; a cursor older than the journal keeps is a
// *TrimmedError (server/changes_test.go), and neither is the other.
func TestChangesPastTheNewestSeq(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{})
	ctx := context.Background()
	if _, err := c.Stock(ctx, rowW1, 5, 100); err != nil {
		t.Fatal(err)
	}
	_, err := c.Changes(ctx, 7, 1, 0)
	var fe *client.FutureError
	if !errors.As(err, &fe) || fe.After != 7 || fe.Newest != 1 {
		t.Fatalf("CHANGES 7 after one event: %v (%T), want a *client.FutureError after 7, newest 1", err, err)
	}
	var te *client.TrimmedError
	if errors.As(err, &te) {
		t.Fatalf("a cursor past the newest seq read as trimmed: %v", err)
	}
	evs, err := c.Changes(ctx, 1, 1, 0)
	if err != nil || len(evs) != 0 {
		t.Fatalf("CHANGES at the newest seq: %v, %v; want none and no error", evs, err)
	}
}
