package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
	"allot/server/servertest"
	"allot/services"
)

// A primary that does not know it was deposed must not answer from its
// state. The log's sequence check refuses its writes, but a read, an
// idempotent repeat or an op that changes nothing writes no frame: it was
// answered from the engine's state alone, and a primary cut off from
// NATS (its renewals timing out, which the keeper took for a warning)
// answered them, for as long as it was cut off, from a state the new
// primary had moved past.

// A proxy to one NATS server (servertest.StartFilterProxy) with the
// servers the cluster advertises (INFO connect_urls) taken out of the
// server's INFO lines (filterNATS): a client that knew of them reconnected
// to them directly once the proxy cut it, and was never cut off. Close
// cuts it for good: the client can neither reach the server through it
// nor connect again.

// filterNATS copies the server's side of a NATS connection from up to c,
// rewriting INFO lines without connect_urls. It parses the protocol (a
// message's payload is copied by its length, whatever bytes it holds).
func filterNATS(c io.Writer, up io.Reader) error {
	r := bufio.NewReaderSize(up, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return err
		}
		op, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(" "))
		switch strings.ToUpper(string(op)) {
		case "INFO":
			var info map[string]any
			if err := json.Unmarshal(bytes.TrimSpace(line[len(op):]), &info); err != nil {
				return err
			}
			delete(info, "connect_urls")
			delete(info, "ws_connect_urls")
			b, _ := json.Marshal(info)
			line = append(append([]byte("INFO "), b...), "\r\n"...)
		case "MSG", "HMSG":
			f := strings.Fields(string(line))
			n, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				return err
			}
			payload := make([]byte, n+2)
			if _, err := io.ReadFull(r, payload); err != nil {
				return err
			}
			line = append(line, payload...)
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

// refusedOrGone reports whether err is a refusal (nothing applied) or a
// node that no longer listens: either way no answer from stale state.
func refusedOrGone(err error) bool {
	return err != nil && (errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrConnect))
}

// TestCutOffPrimaryAnswersNothingStale: the primary's link to NATS is
// cut (its NATS connection goes through proxies that stop); the standby
// takes the lapsed lease; a row and a hold are made on the new primary.
// The old primary, sent a read of the new row's group, a release of the
// new row (NOTFOUND in its state) and a confirm of the new hold (NOTFOUND
// too), must refuse them all (or no longer listen), never answer them.
func TestCutOffPrimaryAnswersNothingStale(t *testing.T) {
	c := newShardCluster(t)
	var proxies []*servertest.CutProxy
	var urls []string
	for _, n := range services.NATSNodes {
		addr, err := services.Addr(c.nats, n)
		if err != nil {
			t.Fatal(err)
		}
		p := servertest.StartFilterProxy(t, addr, filterNATS)
		proxies = append(proxies, p)
		urls = append(urls, "nats://"+p.Addr())
	}
	a := c.start("a", "--cluster", strings.Join(urls, ","))
	if p := c.waitPrimary("", 30*time.Second); p != a {
		t.Fatalf("primary %s, want a", p.id)
	}
	b := c.start("b")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := a.cli.Stock(ctx, rowKey("old", "w1"), 5, 1); err != nil {
		t.Fatal(err)
	}
	waitSameRows(t, b, a)

	for _, p := range proxies {
		p.Close()
	}
	cut := time.Now()
	// Each node is asked on one connection that follows no redirect
	// (Client.Do sends a mutation a standby refuses to the node it
	// names, the old primary here).
	direct := func(p *nodeProc) func(op inventory.Op) (inventory.Result, error) {
		cli, err := client.New(client.Config{Addr: p.resp, PoolSize: 1, DialTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return func(op inventory.Op) (inventory.Result, error) {
			cn, err := cli.Conn(ctx)
			if err != nil {
				return inventory.Result{}, err
			}
			defer cn.Close()
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			defer rcancel()
			return cn.Do(rctx, op, nil)
		}
	}
	toB, toA := direct(b), direct(a)
	// Meanwhile a read goes to the old primary every 20 ms.
	type answer struct {
		sent time.Time
		err  error
	}
	var answers []answer
	polled := make(chan struct{})
	pollCtx, stopPoll := context.WithCancel(ctx)
	go func() {
		defer close(polled)
		poll := direct(a)
		for pollCtx.Err() == nil {
			sent := time.Now()
			_, err := poll(inventory.Available(groupKey("old")))
			answers = append(answers, answer{sent, err})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	fresh := rowKey("fresh", "w1")
	var took time.Time // when b acknowledged its first write
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := toB(inventory.Stock(fresh, 10, 1))
		if err == nil && res.Code == inventory.CodeOK {
			took = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b took no writes within 30 s of the cut (at %s): %+v %v; the lease names %q; its revisions kept:\n%s\na:\n%s\nb:\n%s",
				cut.Format("15:04:05.000"), res, err, c.primary(), c.leaseHistory(), a.tail(), b.tail())
		}
	}
	t.Logf("%s cut off from NATS; %s primary %v later", a.id, b.id, time.Since(cut).Round(time.Millisecond))
	if res, err := toB(inventory.Hold("h-fresh", time.Minute.Milliseconds(), []inventory.Demand{{Group: fresh.Group(), N: 4}})); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("hold on the new primary: %+v %v", res, err)
	}
	next := b

	var bad []string
	for _, op := range []inventory.Op{inventory.Available(fresh.Group()), inventory.Release(fresh, 1), inventory.Confirm("h-fresh")} {
		res, err := toA(op)
		t.Logf("%s on the old primary %v after the cut: %s %v", op.Kind, time.Since(cut).Round(time.Millisecond), res.Code, err)
		if !refusedOrGone(err) {
			bad = append(bad, fmt.Sprintf("%s answered %s (count %d) %v", op.Kind, res.Code, res.Count, err))
		}
	}
	time.Sleep(200 * time.Millisecond)
	stopPoll()
	<-polled
	var lastOK, firstUnavailable time.Duration
	kinds := map[string]int{}
	for _, an := range answers {
		if an.err != nil {
			msg := an.err.Error()
			if i := strings.Index(msg, "127.0.0.1:"); i >= 0 {
				msg = msg[:i]
			}
			kinds[msg]++
		}
		switch {
		case an.err == nil:
			lastOK = an.sent.Sub(cut)
			if !an.sent.Before(took) {
				bad = append(bad, fmt.Sprintf("a read sent %v after the cut, after %s took writes, was answered", an.sent.Sub(cut).Round(time.Millisecond), b.id))
			}
		case errors.Is(an.err, client.ErrUnavailable) && firstUnavailable == 0:
			firstUnavailable = an.sent.Sub(cut)
		}
	}
	t.Logf("errors of the reads of the old primary: %v", kinds)
	t.Logf("reads of the old primary: %d; the last answered sent %v after the cut, the first UNAVAILABLE %v after (0: none, it stopped listening first); %s took writes %v after",
		len(answers), lastOK.Round(time.Millisecond), firstUnavailable.Round(time.Millisecond), b.id, took.Sub(cut).Round(time.Millisecond))
	if len(bad) > 0 {
		t.Fatalf("the old primary, cut off from NATS %v ago while %s took over, answered from its stale state instead of refusing (UNAVAILABLE):\n%s",
			time.Since(cut).Round(time.Millisecond), next.id, strings.Join(bad, "\n"))
	}
	if !strings.Contains(a.tail(), "the lease was not renewed in time") {
		t.Errorf("a's log does not say it stepped down for its lease:\n%s", a.tail())
	}
	// The new primary has what it acknowledged.
	if res, err := next.cli.Get(ctx, fresh); err != nil || res.Count != 6 {
		t.Fatalf("the new row on %s: %+v %v", next.id, res, err)
	}
}
