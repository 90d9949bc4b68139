package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"allot/catalog"
	"allot/client"
)

// TestCatalogSetPipelineReportsTheWorstClass: every reply of a pipeline
// of catalog sets is read, and the error must carry the worst class among
// them (unknown outcome, then refusal, then a plain error reply): the
// first error reply alone hid a later -UNKNOWN or -UNAVAILABLE behind a
// plain -ERR, and the caller took records that may be applied for ones
// refused.
func TestCatalogSetPipelineReportsTheWorstClass(t *testing.T) {
	ctx := context.Background()
	const (
		invalid     = "-ERR title: must be 1..256 bytes\r\n"
		refused     = "-UNAVAILABLE replication: no quorum\r\n"
		unknown     = "-UNKNOWN engine: outcome unknown\r\n"
		notPrimary  = "-UNAVAILABLE not primary, primary at 127.0.0.1:1\r\n"
		applied     = "+OK\r\n"
		primaryAddr = "127.0.0.1:1"
	)
	for _, tc := range []struct {
		replies []string
		want    error // nil: a plain error reply, no class
	}{
		{[]string{invalid, applied, unknown}, client.ErrOutcomeUnknown},
		{[]string{invalid, refused}, client.ErrOutcomeUnknown}, // of several: the others may be applied
		{[]string{refused, invalid, unknown}, client.ErrOutcomeUnknown},
		{[]string{invalid, applied, invalid}, nil},
		{[]string{notPrimary}, client.ErrUnavailable},
	} {
		addr := heldReplies(t, tc.replies...)
		c := newClient(t, addr, client.Config{})
		cn, err := c.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		recs := make([]catalog.Record, len(tc.replies))
		for i := range recs {
			recs[i] = catalog.Record{SKU: fmt.Sprint("s", i), Title: "t", Brand: "b"}
		}
		err = cn.CatalogSetPipeline(ctx, recs)
		if cn.Err() != nil {
			t.Errorf("replies %q: the connection broke: %v", tc.replies, cn.Err())
		}
		cn.Close()
		if err == nil {
			t.Fatalf("replies %q: no error", tc.replies)
		}
		for _, class := range []error{client.ErrOutcomeUnknown, client.ErrUnavailable} {
			if got := errors.Is(err, class); got != (class == tc.want) {
				t.Errorf("replies %q: %v: errors.Is(%v) = %v", tc.replies, err, class, got)
			}
		}
		if got, want := client.MaybeApplied(err), tc.want == client.ErrOutcomeUnknown; got != want {
			t.Errorf("replies %q: %v: MaybeApplied = %v, want %v", tc.replies, err, got, want)
		}
		var ce *client.CatalogSetError
		if !errors.As(err, &ce) {
			t.Fatalf("replies %q: %T %v, want a *client.CatalogSetError", tc.replies, err, err)
		}
		var failed []int
		for i, r := range tc.replies {
			if r != applied {
				failed = append(failed, i)
			}
		}
		if ce.Records != len(tc.replies) || len(ce.Replies) != len(failed) {
			t.Fatalf("replies %q: %+v, want every error reply", tc.replies, ce)
		}
		for j, r := range ce.Replies {
			if r.Index != failed[j] || r.SKU != recs[failed[j]].SKU || "-"+r.Err.Msg+"\r\n" != tc.replies[failed[j]] {
				t.Errorf("replies %q: error reply %d is %+v (%v)", tc.replies, j, r, r.Err)
			}
		}
		if tc.replies[0] == notPrimary {
			if addr, ok := client.PrimaryOf(err); !ok || addr != primaryAddr {
				t.Errorf("replies %q: PrimaryOf = %q, %v; want %q", tc.replies, addr, ok, primaryAddr)
			}
		}
	}
}
