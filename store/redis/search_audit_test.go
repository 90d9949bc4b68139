package redis

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"allot/catalog"
	"allot/store"
)

// A brand query walks the title prefix's members once. It once read each
// chunk of the range with ZRANGEBYLEX ... LIMIT <members already read>
// <chunk>, and Redis walks its skip list from the range's first member to
// that offset again for every chunk: a query whose brand is rare among n
// titles of the prefix cost n²/(2·chunk) steps (at a million records,
// seconds a query), where one walk costs n. The test watches the commands
// the script runs (MONITOR) and requires every chunk to start where the
// last one ended: LIMIT 0.
func TestBrandQueryWalksOnce(t *testing.T) {
	ctx := context.Background()
	st := open(t).(*Store)
	defer st.Close()
	const n = 2000 // several chunks
	recs := make([]catalog.Record, n)
	for i := range recs {
		recs[i] = catalog.Record{SKU: fmt.Sprintf("walk-%06d", i), Title: fmt.Sprintf("walk %06d", i), Brand: "common"}
	}
	recs[n-1].Brand = "rare"
	if err := st.LoadCatalog(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	ss := se.(store.SearchSession)
	q := catalog.Query{Prefix: "walk", Brand: "rare", Limit: 1}
	if _, err := ss.Search(ctx, q, nil); err != nil { // the script loaded
		t.Fatal(err)
	}

	mon, err := net.DialTimeout("tcp", store.RedisAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	mon.SetDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(mon)
	if _, err := mon.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", line, err)
	}
	got, err := ss.Search(ctx, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SKU != recs[n-1].SKU {
		t.Fatalf("%+v, want %s alone", got, recs[n-1].SKU)
	}
	marker := fmt.Sprintf("walk-done-%d", time.Now().UnixNano())
	if err := st.client.Echo(ctx, marker).Err(); err != nil {
		t.Fatal(err)
	}
	index := st.catalog.space.Load().index
	chunks := 0
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading MONITOR: %v", err)
		}
		if strings.Contains(line, marker) {
			break
		}
		if !strings.Contains(line, `"ZRANGEBYLEX" "`+index+`"`) {
			continue
		}
		chunks++
		if i := strings.Index(line, `"LIMIT" "`); i < 0 || !strings.HasPrefix(line[i+len(`"LIMIT" "`):], `0"`) {
			t.Fatalf("a chunk read at an offset into the range: %s", strings.TrimSpace(line))
		}
	}
	if chunks < n/256 {
		t.Fatalf("saw %d chunk reads, want at least %d", chunks, n/256)
	}
}
