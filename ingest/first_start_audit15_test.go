package ingest_test

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestAudit15FirstStreamStartRetriesALostConnection: the connection to the
// source is lost while the ingester starts its binary log stream the first
// time after its snapshot (here: the connection that registers as a
// replica is cut). The README: "A lost connection to the source is
// retried forever, 0.1 s to 5 s apart, from the last committed
// transaction". Only a connection lost once the stream ran was retried; at
// the first start the ingester stopped ("starting the binlog stream at
// …: … EOF"), and the table's changes were not followed.
// (TestAudit14ReconnectSendsNoKill failed now and then this way, when its
// cut met the first start.)
func TestAudit15FirstStreamStartRetriesALostConnection(t *testing.T) {
	r, dsn := newRig15(t, columns12)
	tbl := "`" + r.table + "`"
	r.exec("INSERT INTO " + tbl + " VALUES ('S1', 'Eins', 'Acme')")
	m, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target := m.Addr
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	cut := false
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(c, up); c.Close() }()
			go func() {
				defer up.Close()
				defer c.Close()
				head := make([]byte, 4)
				for {
					if _, err := io.ReadFull(c, head); err != nil {
						return
					}
					payload := make([]byte, int(head[0])|int(head[1])<<8|int(head[2])<<16)
					if _, err := io.ReadFull(c, payload); err != nil {
						return
					}
					if len(payload) > 0 && payload[0] == 0x15 { // COM_REGISTER_SLAVE
						mu.Lock()
						first := !cut
						cut = true
						mu.Unlock()
						if first {
							return // the first registration: the connection is lost
						}
					}
					if _, err := up.Write(append(head, payload...)); err != nil {
						return
					}
				}
			}()
		}
	}()
	m.Addr = ln.Addr().String()
	in := r.ingest12(m.FormatDSN(), "--server-id", fmt.Sprint(1_960_000+r.stamp/1000%30_000))
	r.waitRecord(in, "S1", "Eins|Acme|[]")
	r.exec("INSERT INTO " + tbl + " VALUES ('S2', 'Zwei', 'Acme')")
	deadline := time.Now().Add(10 * time.Second)
	for r.record("S2") != "Zwei|Acme|[]" {
		select {
		case <-in.done:
			t.Fatalf("the ingester stopped; its log:\n%s", in.logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("S2 is %q after 10s; the ingester's log:\n%s", r.record("S2"), in.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if !cut {
		t.Fatal("no connection registered as a replica: the test cut nothing")
	}
}
