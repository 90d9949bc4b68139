package ingest_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"allot/client"
	"allot/ingest"
)

// The reconnect faults of the tenth audit of `allot ingest mysql`: a
// replication connection lost in the middle of a transaction (go-mysql
// resumed at the last event it had read, so the rest of the transaction
// arrived without its table map and the ingester stopped), and a
// reconnect that keeps failing (retried silently forever).

// binlogProxy forwards TCP connections to the project's MariaDB. Armed
// with cutAt n, it cuts the binlog connection right after forwarding the
// n-th table map event of its table, between a transaction's table map
// and its rows; refusing, it cuts every connection it carries and closes
// new ones as they arrive.
type binlogProxy struct {
	t      *testing.T
	ln     net.Listener
	target string
	table  []byte

	mu       sync.Mutex
	conns    map[net.Conn]bool
	cutAt    int // table maps of table to forward before the cut; 0: none
	maps     int // table maps of table forwarded
	cuts     int
	refusing bool
	accepted int
	dumps    []uint32 // the positions of the COM_BINLOG_DUMPs forwarded
	mapEnds  []uint32 // the end positions of the table maps of table forwarded since arm
}

func startBinlogProxy(t *testing.T, target, table string) *binlogProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &binlogProxy{t: t, ln: ln, target: target, table: []byte(table), conns: map[net.Conn]bool{}}
	t.Cleanup(func() {
		ln.Close()
		p.cutAll()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.accepted++
			refusing := p.refusing
			p.mu.Unlock()
			if refusing {
				c.Close()
				continue
			}
			p.mu.Lock()
			target := p.target // redirect may change it
			p.mu.Unlock()
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			var binlog sync.Once
			isBinlog := make(chan struct{})
			go func() { // the client's packets: a COM_BINLOG_DUMP marks the binlog connection
				p.copyPackets(up, c, func(payload []byte) bool {
					if len(payload) > 0 && (payload[0] == 0x12 || payload[0] == 0x1e) {
						binlog.Do(func() { close(isBinlog) })
					}
					if len(payload) >= 5 && payload[0] == 0x12 {
						p.mu.Lock()
						p.dumps = append(p.dumps, binary.LittleEndian.Uint32(payload[1:5]))
						p.mu.Unlock()
					}
					return false
				})
				up.Close()
			}()
			go func() { // the server's packets: cut after the armed table map
				p.copyPackets(c, up, func(payload []byte) bool {
					select {
					case <-isBinlog:
					default:
						return false
					}
					// An event packet: OK byte, then the event header
					// (timestamp, type 19 = TABLE_MAP_EVENT, ...).
					if len(payload) < 20 || payload[0] != 0 || payload[5] != 0x13 || !bytes.Contains(payload, p.table) {
						return false
					}
					p.mu.Lock()
					defer p.mu.Unlock()
					p.maps++
					p.mapEnds = append(p.mapEnds, binary.LittleEndian.Uint32(payload[14:18])) // the header's log_pos
					if p.cutAt > 0 && p.maps == p.cutAt {
						p.cuts++
						return true
					}
					return false
				})
				if tc, ok := c.(*net.TCPConn); ok {
					tc.CloseWrite() // what was forwarded arrives before the FIN
				}
				c.Close()
				up.Close()
			}()
		}
	}()
	return p
}

// copyPackets copies MySQL packets from src to dst until either fails or
// cut, called with each packet's payload after it was forwarded, says to
// stop.
func (p *binlogProxy) copyPackets(dst, src net.Conn, cut func(payload []byte) bool) {
	head := make([]byte, 4)
	for {
		if _, err := io.ReadFull(src, head); err != nil {
			return
		}
		n := int(head[0]) | int(head[1])<<8 | int(head[2])<<16
		payload := make([]byte, n)
		if _, err := io.ReadFull(src, payload); err != nil {
			return
		}
		if _, err := dst.Write(append(append([]byte{}, head...), payload...)); err != nil {
			return
		}
		if cut(payload) {
			return
		}
	}
}

func (p *binlogProxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// arm cuts the binlog connection after the n-th table map of the table
// from now on.
func (p *binlogProxy) arm(n int) {
	p.mu.Lock()
	p.cutAt, p.maps, p.mapEnds = n, 0, nil
	p.mu.Unlock()
}

func (p *binlogProxy) refuse(on bool) {
	p.mu.Lock()
	p.refusing = on
	p.mu.Unlock()
	if on {
		p.cutAll()
	}
}

func (p *binlogProxy) cutCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// dsn is the replication user's DSN through the proxy.
func (p *binlogProxy) dsn(t *testing.T) string {
	m, err := mysql.ParseDSN(replDSN())
	if err != nil {
		t.Fatal(err)
	}
	m.Addr = p.ln.Addr().String()
	return m.FormatDSN()
}

// inProcess is an ingester run by the test process, so that its metrics
// can be read.
type inProcess struct {
	in   *ingest.Ingester
	done chan error
	mu   sync.Mutex
	log  []string
}

// ingestThrough starts an ingester of r's table reading the source at dsn
// and waits for its snapshot.
func (r *rig) ingestThrough(dsn string) *inProcess {
	r.t.Helper()
	c, err := client.New(client.Config{Addr: r.allot.Addr(), PoolSize: 4})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	ip := &inProcess{done: make(chan error, 1)}
	ip.in, err = ingest.New(ingest.Config{DSN: dsn, Table: r.table, SKUColumn: "id", TitleColumn: "name", BrandColumn: "brand",
		Addr: r.allot.Addr(), StateFile: r.state, ServerID: uint32(600000 + r.stamp/1000%1000000), CheckpointEvery: 100 * time.Millisecond},
		c, func(format string, args ...any) {
			ip.mu.Lock()
			ip.log = append(ip.log, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
			ip.mu.Unlock()
		})
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { ip.done <- ip.in.Run(ctx) }()
	r.t.Cleanup(func() {
		cancel()
		select {
		case <-ip.done:
		case <-time.After(10 * time.Second):
			r.t.Error("the ingester did not stop within 10s of its context's end")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(ip.logText(), "snapshot done") {
		select {
		case err := <-ip.done:
			r.t.Fatalf("the ingester stopped before its snapshot was done: %v; its log:\n%s", err, ip.logText())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no snapshot within 20s; the ingester's log:\n%s", ip.logText())
		}
	}
	return ip
}

func (ip *inProcess) logText() string {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	return strings.Join(ip.log, "\n")
}

// metric reads one sample of the ingester's /metrics text; -1 if absent.
func (ip *inProcess) metric(name string) int64 {
	var b strings.Builder
	ip.in.Metrics.WriteText(&b)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (-?[0-9]+)$`).FindStringSubmatch(b.String())
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// running fails t if the ingester has stopped.
func (ip *inProcess) running(t *testing.T, when string) {
	t.Helper()
	select {
	case err := <-ip.done:
		ip.done <- err
		t.Fatalf("%s the ingester stopped: %v; its log:\n%s", when, err, ip.logText())
	default:
	}
}

// waitCatalog waits up to 10 s for every SKU of want to have its record
// (title|brand|[]) in the catalog, or none.
func (r *rig) waitCatalog(ip *inProcess, want map[string]string) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var diff []string
		for sku, w := range want {
			if got := r.record(sku); got != w {
				diff = append(diff, fmt.Sprintf("%s is %q, want %q", sku, got, w))
			}
		}
		if len(diff) == 0 {
			return
		}
		select {
		case err := <-ip.done:
			ip.done <- err
			r.t.Fatalf("the ingester stopped (%v) with the catalog unlike the table: %s; its log:\n%s", err, strings.Join(diff, "; "), ip.logText())
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the catalog is not like the table after 10s: %s; the ingester's log:\n%s", strings.Join(diff, "; "), ip.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keyedEvents counts allot's catalog events keyed by the ingester, by key.
func (r *rig) keyedEvents() map[string]int {
	r.t.Helper()
	seen := map[string]int{}
	var after uint64
	for {
		evs, err := r.c.Changes(r.t.Context(), after, 10000, 0)
		if err != nil {
			r.t.Fatal(err)
		}
		if len(evs) == 0 {
			return seen
		}
		for _, e := range evs {
			if (e.Op == "catalog.set" || e.Op == "catalog.del") && strings.HasPrefix(e.Key, "mysql:") {
				seen[e.Key]++
			}
			after = e.Seq
		}
	}
}

// TestReconnectAudit10ConnectionLostInATransaction: the binlog connection
// is cut after the second table map of a three-statement transaction (the
// first statement's rows sent, the second's table map read, its rows
// not). The ingester must go on, the catalog must end up like the table
// (no row of the transaction skipped), no binlog row may be applied twice,
// and the reconnect must show in its metrics and its log.
func TestReconnectAudit10ConnectionLostInATransaction(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL", "")
	r.exec("INSERT INTO `" + r.table + "` VALUES ('S1','Snap one','Acme'),('S2','Snap two','Acme')")
	m, err := mysql.ParseDSN(replDSN())
	if err != nil {
		t.Fatal(err)
	}
	p := startBinlogProxy(t, m.Addr, r.table)
	ip := r.ingestThrough(p.dsn(t))
	r.waitCatalog(ip, map[string]string{"S1": "Snap one|Acme|[]", "S2": "Snap two|Acme|[]"})

	p.arm(2)
	tx, err := r.db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"INSERT INTO `" + r.table + "` VALUES ('T1','Tx one','Acme'),('T2','Tx two','Acme')",
		"UPDATE `" + r.table + "` SET name='Snap one updated' WHERE id='S1'",
		"INSERT INTO `" + r.table + "` VALUES ('T3','Tx three','Acme')",
	} {
		if _, err := tx.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r.waitCatalog(ip, map[string]string{"S1": "Snap one updated|Acme|[]", "S2": "Snap two|Acme|[]",
		"T1": "Tx one|Acme|[]", "T2": "Tx two|Acme|[]", "T3": "Tx three|Acme|[]"})
	if p.cutCount() != 1 {
		t.Fatalf("the proxy cut %d times after the transaction's second table map, want once: the test did not cut where it means to", p.cutCount())
	}
	// The stream goes on after the transaction.
	r.exec("INSERT INTO `" + r.table + "` VALUES ('A1','After','Acme')")
	r.waitCatalog(ip, map[string]string{"A1": "After|Acme|[]"})
	ip.running(t, "after the cut,")
	// It resumed from before the transaction, not from the middle of it,
	// where the rest of it would depend on table maps read before the cut.
	p.mu.Lock()
	dumps, mapEnds := append([]uint32{}, p.dumps...), append([]uint32{}, p.mapEnds...)
	p.mu.Unlock()
	if len(dumps) < 2 || len(mapEnds) < 2 {
		t.Fatalf("binlog dumps at %v, table maps of the transaction ending at %v: want a second dump after the cut", dumps, mapEnds)
	}
	t.Logf("binlog dumps at %v; the transaction's table maps end at %v (the cut came after %d)", dumps, mapEnds, mapEnds[1])
	if resumed := dumps[len(dumps)-1]; resumed >= mapEnds[0] {
		t.Errorf("after the cut the binlog was read again from %d, inside the transaction (its first table map ends at %d, the cut came after the one ending at %d): want its start", resumed, mapEnds[0], mapEnds[1])
	}

	// Nothing applied twice: the rows replayed from the transaction's
	// start carry the keys they had, which allot answers without applying.
	seen := r.keyedEvents()
	for k, n := range seen {
		if n > 1 {
			t.Errorf("key %s applied %d times", k, n)
		}
	}
	if len(seen) != 5 { // T1, T2, S1, T3, A1
		t.Errorf("%d keyed catalog events in allot's change stream, want 5 (one per row change): %v", len(seen), seen)
	}
	if n := ip.metric("allot_ingest_reconnects_total"); n < 1 {
		t.Errorf("allot_ingest_reconnects_total is %d after a lost connection, want at least 1", n)
	}
	if !strings.Contains(ip.logText(), "binlog stream") {
		t.Errorf("the ingester's log says nothing of the lost binlog stream:\n%s", ip.logText())
	}
	t.Logf("the ingester's log:\n%s", ip.logText())
}

// TestReconnectAudit10FailingReconnectIsLogged: the source cannot be
// reached for 2.5 s. The ingester must keep retrying (README: it retries
// until the source is back), log each failed attempt with its error at a
// bounded rate, count them in its metrics with the stream shown down, and
// follow the table again once the source is back.
func TestReconnectAudit10FailingReconnectIsLogged(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL", "")
	r.exec("INSERT INTO `" + r.table + "` VALUES ('S1','Snap one','Acme')")
	m, err := mysql.ParseDSN(replDSN())
	if err != nil {
		t.Fatal(err)
	}
	p := startBinlogProxy(t, m.Addr, r.table)
	ip := r.ingestThrough(p.dsn(t))
	r.waitCatalog(ip, map[string]string{"S1": "Snap one|Acme|[]"})
	// The stream starts after the snapshot: refusing connections before
	// it has would fail its first start, which is not a reconnect.
	for deadline := time.Now().Add(10 * time.Second); ip.metric("allot_ingest_source_connected") != 1 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if up := ip.metric("allot_ingest_source_connected"); up != 1 {
		t.Errorf("allot_ingest_source_connected is %d while the stream runs, want 1", up)
	}

	p.refuse(true)
	time.Sleep(2500 * time.Millisecond)
	ip.running(t, "while the source could not be reached,")
	logged := 0
	for _, l := range strings.Split(ip.logText(), "\n") {
		if strings.Contains(l, "reconnecting to the source") && strings.Contains(l, "failed") {
			logged++
		}
	}
	failures := ip.metric("allot_ingest_reconnect_failures_total")
	down := ip.metric("allot_ingest_source_connected")
	p.mu.Lock()
	accepted := p.accepted
	p.mu.Unlock()
	t.Logf("in 2.5s: %d failed attempts logged, allot_ingest_reconnect_failures_total %d, %d connections to the proxy", logged, failures, accepted)
	if logged < 2 {
		t.Errorf("%d failed reconnect attempts logged in 2.5s, want at least 2 (each with its error); the log:\n%s", logged, ip.logText())
	}
	if logged > 15 {
		t.Errorf("%d failed reconnect attempts logged in 2.5s: not a bounded rate", logged)
	}
	if failures < int64(logged) || failures < 2 {
		t.Errorf("allot_ingest_reconnect_failures_total is %d after %d logged failures, want as many (at least 2)", failures, logged)
	}
	if down != 0 {
		t.Errorf("allot_ingest_source_connected is %d while the source cannot be reached, want 0", down)
	}

	p.refuse(false)
	r.exec("INSERT INTO `" + r.table + "` VALUES ('A1','After','Acme')")
	r.waitCatalog(ip, map[string]string{"A1": "After|Acme|[]"})
	if up := ip.metric("allot_ingest_source_connected"); up != 1 {
		t.Errorf("allot_ingest_source_connected is %d after the reconnect, want 1", up)
	}
	t.Logf("the ingester's log:\n%s", ip.logText())
}
