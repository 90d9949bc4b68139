package remote_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"allot/catalog"
	"allot/client"
	"allot/engine"
	"allot/inventory"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// TestStoreReportsDataDir: a store that started its own server says where
// that server keeps its journal (store.DataDirer), so that the bench
// measures the fdatasync bound of an fsync run on that file system and
// reports it, instead of probing the system's temporary folder.
func TestStoreReportsDataDir(t *testing.T) {
	bin := servertest.BuildAllot(t)
	dir := t.TempDir()
	st, err := remote.Open(context.Background(), store.Config{DataDir: dir, Durability: store.DurabilityWrite}, remote.Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, ok := any(st).(store.DataDirer)
	if !ok {
		t.Fatal("the store does not implement store.DataDirer: the bench cannot tell where its server's journal is")
	}
	if got := d.DataDir(); got != dir {
		t.Fatalf("DataDir() = %q, want the server's data directory %q", got, dir)
	}

	// A server given by address: its data directory is unknown.
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	at, err := remote.Open(context.Background(), store.Config{Addr: s.RESPAddr(), Durability: store.DurabilityWrite}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	if got := any(at).(store.DataDirer).DataDir(); got != "" {
		t.Fatalf("DataDir() of a server given by --addr = %q, want empty (unknown)", got)
	}
}

// TestLoadEmptiesAPreviousRunsRows: a server given by --addr (or a data
// directory reused) still holds the rows an earlier run loaded. A Load of
// other rows of the same group must leave the group holding only what it
// loaded: otherwise captures take units the checker never sees, and a
// correct engine fails the check.
func TestLoadEmptiesAPreviousRunsRows(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	ctx := context.Background()
	cfg := store.Config{Addr: s.RESPAddr(), Durability: store.DurabilityWrite}
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	other := inventory.GroupKey{SKU: "s", Condition: "c", Source: "p"}

	first, err := remote.Open(ctx, cfg, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Load(ctx, []inventory.Row{
		{Key: g.Row("w1"), Count: 5, Price: 1},
		{Key: g.Row("w2"), Count: 5, Price: 1},
		{Key: other.Row("w1"), Count: 4, Price: 1},
	}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	// The next run, by another store (another bench process).
	st, err := remote.Open(ctx, cfg, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows := []inventory.Row{{Key: g.Row("w2"), Count: 1, Price: 2}}
	if err := st.Load(ctx, rows); err != nil {
		t.Fatal(err)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	res, err := se.Capture(ctx, g, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != inventory.CodeInsufficient || res.Available != 1 {
		t.Fatalf("capture of 2 from a group loaded with 1 unit: %v %v available %d, want insufficient with 1 (the previous run's rows still sell)", res.Code, res.Lines, res.Available)
	}
	got, err := st.Rows(ctx)
	if err != nil || len(got) != 1 || got[0] != rows[0] {
		t.Fatalf("Rows: %v %v, want %v", got, err, rows)
	}
}

// TestSearchAfterALostConnection: after a call fails on a lost connection,
// the session's next call takes a fresh connection (the Session's
// promise), searches included.
func TestSearchAfterALostConnection(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	p := servertest.StartCutProxy(t, s.RESPAddr())
	ctx := context.Background()
	st, err := remote.Open(ctx, store.Config{Addr: p.Addr(), Durability: store.DurabilityWrite}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs := []catalog.Record{{SKU: "s1", Title: "Blue kettle", Brand: "Acme"}}
	rows := []inventory.Row{{Key: inventory.RowKey{SKU: "s1", Warehouse: "w", Condition: "c", Source: "o"}, Count: 3, Price: 1}}
	if err := st.LoadCatalog(ctx, recs, rows); err != nil {
		t.Fatal(err)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	ss := se.(store.SearchSession)
	q := catalog.Query{Prefix: "blue", Limit: 10}
	if out, err := ss.Search(ctx, q, nil); err != nil || len(out) != 1 {
		t.Fatalf("search before the cut: %v %v", out, err)
	}
	p.Cut()
	// The call that meets the cut fails; which one that is depends on
	// when the client notices, so allow one failure.
	if _, err := ss.Search(ctx, q, nil); err == nil {
		t.Log("the first search after the cut went through")
	}
	out, err := ss.Search(ctx, q, nil)
	if err != nil || len(out) != 1 || out[0].Available != 3 {
		t.Fatalf("search on a fresh connection after a lost one: %v %v", out, err)
	}
	outs := make([][]catalog.Result, 2)
	if err := se.(store.SearchPipeliner).SearchPipeline(ctx, []catalog.Query{q, q}, outs); err != nil {
		t.Fatalf("pipelined search after a lost connection: %v", err)
	}

	// A failed capture, then a search: the search takes a fresh connection.
	p.Cut()
	g := rows[0].Key.Group()
	if _, err := se.Capture(ctx, g, 1, nil); err == nil {
		t.Log("the capture after the cut went through")
	} else if !client.MaybeApplied(err) && !errors.Is(err, store.ErrServerDown) {
		t.Logf("capture after the cut: %v", err)
	}
	if out, err := ss.Search(ctx, q, nil); err != nil || len(out) != 1 {
		t.Fatalf("search after a failed capture: %v %v", out, err)
	}
}

// TestCaptureCutIsUnknown: a capture whose connection is cut after the
// request left is an error (its outcome unknown), never a refusal the
// bench would count as not applied; and the session carries on.
func TestCaptureCutIsUnknown(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	p := servertest.StartCutProxy(t, s.RESPAddr())
	ctx := context.Background()
	for _, shared := range []bool{false, true} {
		st, err := remote.Open(ctx, store.Config{Addr: p.Addr(), Durability: store.DurabilityWrite}, remote.Options{Shared: shared})
		if err != nil {
			t.Fatal(err)
		}
		g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
		if err := st.Load(ctx, []inventory.Row{{Key: g.Row("w"), Count: 100, Price: 1}}); err != nil {
			t.Fatal(err)
		}
		se, err := st.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := se.Capture(ctx, g, 1, nil); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("shared %v: capture: %v %v", shared, res.Code, err)
		}
		p.Cut()
		res, err := se.Capture(ctx, g, 1, nil)
		if err == nil && res.Code != inventory.CodeOK {
			t.Fatalf("shared %v: capture on a cut connection: %v with no error: the bench would count it not applied", shared, res.Code)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			res, err = se.Capture(ctx, g, 1, nil)
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("shared %v: capture after the cut: %v %v", shared, res.Code, err)
		}
		se.Close()
		st.Close()
	}
}

// fakeStandby answers RESP as a standby of a cluster does: HELLO says
// allot in the given durability, every other command is refused as "not
// primary", naming primary.
func fakeStandby(t *testing.T, durability, primary string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				rd := bufio.NewReader(c)
				for {
					args, err := readCommand(rd)
					if err != nil {
						return
					}
					var reply string
					switch strings.ToUpper(args[0]) {
					case "HELLO":
						reply = "*6\r\n$6\r\nserver\r\n$5\r\nallot\r\n$4\r\nrole\r\n$7\r\nstandby\r\n$10\r\ndurability\r\n$" + strconv.Itoa(len(durability)) + "\r\n" + durability + "\r\n"
					default:
						reply = "-UNAVAILABLE not primary, primary at " + primary + "\r\n"
					}
					if _, err := c.Write([]byte(reply)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// readCommand reads one RESP command (an array of bulk strings).
func readCommand(rd *bufio.Reader) ([]string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("bad command header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		h, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(h, "$")))
		if err != nil {
			return nil, fmt.Errorf("bad bulk header %q", h)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// TestLoadAtAStandbyOfManyRows: opened at a standby of a cluster, a Load of
// many rows (pipelined sets, which the standby refuses naming the primary)
// goes to the primary, as a Load of one row does.
func TestLoadAtAStandbyOfManyRows(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	standby := fakeStandby(t, "write", s.RESPAddr())
	ctx := context.Background()
	st, err := remote.Open(ctx, store.Config{Addr: standby, Durability: store.DurabilityWrite}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	rows := []inventory.Row{{Key: g.Row("w1"), Count: 2, Price: 1}, {Key: g.Row("w2"), Count: 3, Price: 1}}
	if err := st.Load(ctx, rows); err != nil {
		t.Fatalf("Load of %d rows at a standby: %v", len(rows), err)
	}
	got, err := st.Rows(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("Rows: %v %v", got, err)
	}
}

// TestDescribeSaysHowSessionsConnect: allot and allot-mux run the same
// server; what differs is how the sessions reach it, and the result's
// description must say which.
func TestDescribeSaysHowSessionsConnect(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	ctx := context.Background()
	for _, tc := range []struct {
		shared bool
		want   string
	}{{false, "a connection per session"}, {true, "sessions share one connection"}} {
		st, err := remote.Open(ctx, store.Config{Addr: s.RESPAddr(), Durability: store.DurabilityWrite}, remote.Options{Shared: tc.shared})
		if err != nil {
			t.Fatal(err)
		}
		desc, err := st.Describe(ctx)
		st.Close()
		if err != nil || !strings.Contains(desc, tc.want) {
			t.Errorf("shared %v: Describe = %q %v, want it to say %q", tc.shared, desc, err, tc.want)
		}
	}
}

// TestSharedConnectionStaysClosed: after the store's Close, a session of
// the shared connection that is called again fails rather than open a new
// connection that nothing would ever close.
func TestSharedConnectionStaysClosed(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	ctx := context.Background()
	st, err := remote.Open(ctx, store.Config{Addr: s.RESPAddr(), Durability: store.DurabilityWrite}, remote.Options{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	if err := st.Load(ctx, []inventory.Row{{Key: g.Row("w"), Count: 5, Price: 1}}); err != nil {
		t.Fatal(err)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := se.Capture(ctx, g, 1, nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("capture: %v %v", res.Code, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if res, err := se.Capture(ctx, g, 1, nil); err == nil {
		t.Fatalf("capture after the store's Close: %v with no error (a new connection was opened)", res.Code)
	}
}

// TestPipelinedSessionFollowsAStandbysRefusal: a pipelined session at a
// standby gets its pipeline refused, naming the primary; that pipeline's
// outcome is unknown (an error), and the session's next pipeline goes to
// the primary. It used to stay at the standby for good: a refusal inside a
// pipeline of several ops hid the primary's address.
func TestPipelinedSessionFollowsAStandbysRefusal(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	standby := fakeStandby(t, "write", s.RESPAddr())
	ctx := context.Background()
	st, err := remote.Open(ctx, store.Config{Addr: standby, Durability: store.DurabilityWrite, Pipeline: 2}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	p, ok := se.(store.Pipeliner)
	if !ok {
		t.Fatal("the session does not pipeline")
	}
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	ops := []inventory.Op{inventory.Stock(g.Row("w1"), 2, 1), inventory.Stock(g.Row("w2"), 3, 1)}
	res := make([]inventory.Result, len(ops))
	if err := p.Pipeline(ctx, ops, res); err == nil {
		t.Fatal("a pipeline at a standby succeeded")
	}
	if err := p.Pipeline(ctx, ops, res); err != nil {
		t.Fatalf("the next pipeline did not go to the primary: %v", err)
	}
	if got, err := s.Engine.Get(g.Row("w2")); err != nil || got.Count != 3 {
		t.Fatalf("the primary holds %+v %v, want w2 at 3", got, err)
	}
}
