package remote_test

import (
	"context"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// TestAudit17SessionAfterARestart: a session holds its connection between
// calls. After the server restarted at the same address (a deploy, a
// node of a cluster starting a new term), that connection is closed; a
// capture sent into it failed with an unknown outcome although the server
// never read it, and the bench counted an op that may have been applied.
// The client's pool checks an idle connection before it carries a
// request; the session's, and a record session's, now pass through that
// check, so the first call after the restart goes on a new connection and
// is applied once.
func TestAudit17SessionAfterARestart(t *testing.T) {
	dir := t.TempDir()
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite, Dir: dir})
	addr := s.RESPAddr()
	ctx := context.Background()
	st, err := remote.Open(ctx, store.Config{Addr: addr, Durability: store.DurabilityWrite}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	if err := st.Load(ctx, []inventory.Row{{Key: g.Row("w"), Count: 10, Price: 1}}); err != nil {
		t.Fatal(err)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	sp, err := st.RWOpen(ctx, store.RWOptions{Lock: store.RWLockHard, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	rs, err := sp.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if res, err := se.Capture(ctx, g, 1, nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("capture: %v %v", res.Code, err)
	}
	if err := rs.Write(ctx, []store.RWRecord{{Key: "r", Value: 7}}); err != nil {
		t.Fatal(err)
	}

	s.Stop()
	servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite, Dir: dir, Config: server.Config{RESPAddr: addr}})
	time.Sleep(20 * time.Millisecond) // idle past the pool's check threshold (1 ms), whatever the restart took

	res, err := se.Capture(ctx, g, 1, nil)
	if err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("capture after the restart: %v %v; it was sent into the connection the old server closed", res.Code, err)
	}
	v, found, err := rs.Read(ctx, "r")
	if err != nil || !found || v != 7 {
		t.Fatalf("record read after the restart: %d %v %v; it was sent into the connection the old server closed", v, found, err)
	}
	rows, err := st.Rows(ctx)
	if err != nil || len(rows) != 1 || rows[0].Count != 8 {
		t.Fatalf("rows after two captures of 10: %v %v, want a count of 8", rows, err)
	}
}
