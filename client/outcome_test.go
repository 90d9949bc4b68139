package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"allot/client"
	"allot/engine"
	"allot/inventory"
	"allot/server/servertest"
	"allot/vfs"
)

// TestOutcomeClasses: a write whose fdatasync fails gets -UNKNOWN
// (client.ErrOutcomeUnknown: applied in memory, maybe not durable) and,
// without a key, is not retried; after that the engine is fail-stop: every
// request gets -UNAVAILABLE (client.ErrUnavailable, never applied), which
// the client retries on its own a bounded number of times before it gives
// up. A keyed request whose outcome is unknown is retried (and then meets
// UNAVAILABLE); HTTP says the same with "applied".
func TestOutcomeClasses(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	s := servertest.Start(t, servertest.Options{Dir: "/d", FS: fs, Durability: engine.DurabilityFsync, JournalMayFail: true})
	c := newClient(t, s.RESPAddr(), client.Config{})
	ctx := context.Background()
	if res, err := c.Stock(ctx, rowW1, 5, 1); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("stock: %+v %v", res, err)
	}
	fs.FailSyncs(true)
	_, err := c.Capture(ctx, group, 1, nil)
	if !errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("capture during a failing fdatasync: want ErrOutcomeUnknown, got %v", err)
	}
	fs.FailSyncs(false)
	_, err = c.Capture(ctx, group, 1, nil)
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("capture after the failure: want ErrUnavailable, got %v", err)
	}
	op := inventory.Capture(group, 1)
	op.IdempotencyKey = "k1"
	if _, err := c.Do(ctx, op, nil); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("keyed capture after the failure: want ErrUnavailable, got %v", err)
	}
	if _, err := c.Get(ctx, rowW1); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("a read after the failure: want ErrUnavailable, got %v", err)
	}
	// The server saw the unkeyed unknown once, and each refused capture
	// 1 + RetriesMax times.
	res, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want := fmt.Sprintf(`allot_ops_total{op="capture",protocol="resp",result="error"} %d`, 1+2*(1+client.RetriesMax))
	if !strings.Contains(string(body), want+"\n") {
		t.Fatalf("metrics do not show %q", want)
	}
	// HTTP says the same with "applied".
	res, err = http.Post("http://"+s.HTTPAddr()+"/v1/capture", "application/json", strings.NewReader(`{"sku":"sku-1","condition":"new","source":"retail","quantity":1}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 503 || !strings.Contains(string(body), `"error":"unavailable","applied":false`) {
		t.Fatalf("HTTP after the failure: %d %s", res.StatusCode, body)
	}
}

// TestHoldLinesBound: a hold of 64 lines fits the server's default limits;
// 65 lines are refused with the contract's error and change nothing.
func TestHoldLinesBound(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{})
	ctx := context.Background()
	if _, err := c.Stock(ctx, rowW1, 1000, 1); err != nil {
		t.Fatal(err)
	}
	lines := make([]inventory.Demand, 65)
	for i := range lines {
		lines[i] = inventory.Demand{Group: group, N: 1}
	}
	res, err := c.Hold(ctx, "big", time.Minute, lines[:64])
	if err != nil || res.Code != inventory.CodeOK || len(res.Allocations) != 1 || res.Allocations[0].Count != 64 {
		t.Fatalf("64-line hold: %+v %v", res, err)
	}
	res, err = c.Hold(ctx, "bigger", time.Minute, lines)
	if err != nil || res.Code != inventory.CodeInvalid || res.Detail != "a hold or an order takes 1 to 64 lines" {
		t.Fatalf("65-line hold: %+v %v", res, err)
	}
	if res, _ := c.Available(ctx, group); res.Count != 1000-64 {
		t.Fatalf("available %d after the refused hold", res.Count)
	}
}
