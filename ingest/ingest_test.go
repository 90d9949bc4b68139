package ingest_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"allot/catalog"
	"allot/client"
	"allot/server/servertest"
	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/remote"
)

// ingester is `allot ingest mysql` as a process, so that it can be killed.
type ingester struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  *strings.Builder
}

func startIngester(t *testing.T, bin string, args ...string) *ingester {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"ingest", "mysql"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &ingester{cmd: cmd, done: make(chan struct{}), log: &strings.Builder{}}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			in.log.WriteString(sc.Text() + "\n")
		}
		cmd.Wait()
		close(in.done)
	}()
	return in
}

func (in *ingester) kill() {
	in.cmd.Process.Signal(syscall.SIGKILL)
	<-in.done
}

type row struct{ sku, name, brand, colour string }

// TestIngestFollowsAndSurvivesKills: MariaDB started by the project, a
// table loaded, `allot ingest` started; inserts, updates and deletes
// appear in allot within 1 s; the ingester and allot are each killed with
// SIGKILL while changes stream in and restarted; at the end the catalog
// equals the table row by row and no binlog event was applied twice (the
// change stream holds each idempotency key at most once).
func TestIngestFollowsAndSurvivesKills(t *testing.T) {
	bin := servertest.BuildAllot(t)
	servicestest.Require(t, "mariadb")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := sql.Open("mysql", services.MariaDBDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logBin int
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin").Scan(&logBin); err != nil {
		t.Fatal(err)
	}
	if logBin == 0 {
		// Started before the binlog was configured: restart it with
		// services/mariadb.cnf as it is now.
		if err := services.Down(ctx, services.Config{}, "mariadb"); err != nil {
			t.Fatal(err)
		}
		servicestest.Require(t, "mariadb")
		db.Close()
		if db, err = sql.Open("mysql", services.MariaDBDSN); err != nil {
			t.Fatal(err)
		}
	}
	table := fmt.Sprintf("ingest_test_%d", time.Now().UnixNano())
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE `" + table + "` (id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL, colour VARCHAR(64) NOT NULL) ENGINE=InnoDB")
	defer db.Exec("DROP TABLE `" + table + "`")
	var vals []string
	var args []any
	for i := range 300 {
		vals = append(vals, "(?,?,?,?)")
		args = append(args, fmt.Sprintf("P%04d", i), fmt.Sprintf("Größe Artikel %d", i), []string{"Acme", "Über", "ſoft"}[i%3], "red")
	}
	exec("INSERT INTO `"+table+"` VALUES "+strings.Join(vals, ","), args...)

	dir := t.TempDir()
	allot, err := remote.StartProcess(ctx, bin, store.Config{DataDir: filepath.Join(dir, "data"), Durability: store.DurabilityFsync})
	if err != nil {
		t.Fatal(err)
	}
	addr := allot.Addr()
	defer func() { allot.Stop(30 * time.Second) }()
	c, err := client.New(client.Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ingestArgs := []string{"--dsn", strings.Replace(services.MariaDBDSN, "allot:allot@", "allot_repl:allot_repl@", 1),
		"--table", table, "--sku", "id", "--title", "name", "--brand", "brand", "--attributes", "colour",
		"--addr", addr, "--state", filepath.Join(dir, "state.json"), "--metrics", "", "--server-id", "4242"}
	in := startIngester(t, bin, ingestArgs...)
	defer func() { in.kill() }()

	waitFor := func(what string, limit time.Duration, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > limit {
				t.Fatalf("%s: not within %v; ingester log:\n%s", what, limit, in.log.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	get := func(sku string) (catalog.Record, bool) {
		r, found, err := c.CatalogGet(ctx, sku)
		if err != nil {
			return catalog.Record{}, false
		}
		return r, found
	}
	waitFor("the snapshot", time.Minute, func() bool { _, ok := get("P0299"); return ok })
	hits, err := c.Search(ctx, catalog.Query{Prefix: "GRÖSSE"}, nil)
	if err != nil || len(hits) != 0 {
		t.Fatalf("ß is not folded to ss: %v %v", hits, err)
	}
	hits, err = c.Search(ctx, catalog.Query{Prefix: "größe artikel 29", Brand: "SOFT", Limit: 100}, nil)
	if err != nil || len(hits) == 0 {
		t.Fatalf("search after the snapshot: %v %v", hits, err)
	}

	// Inserts, updates and deletes are searchable within 1 s.
	exec("INSERT INTO `"+table+"` VALUES (?,?,?,?)", "NEW1", "Zebra Streifen", "Acme", "black")
	d := waitFor("an insert", time.Second, func() bool {
		h, _ := c.Search(ctx, catalog.Query{Prefix: "zebra"}, nil)
		return len(h) == 1 && h[0].SKU == "NEW1"
	})
	t.Logf("insert visible after %v", d)
	exec("UPDATE `"+table+"` SET name = ? WHERE id = ?", "Zebra Gestreift", "NEW1")
	d = waitFor("an update", time.Second, func() bool { r, _ := get("NEW1"); return r.Title == "Zebra Gestreift" })
	t.Logf("update visible after %v", d)
	exec("DELETE FROM `"+table+"` WHERE id = ?", "NEW1")
	d = waitFor("a delete", time.Second, func() bool { _, ok := get("NEW1"); return !ok })
	t.Logf("delete visible after %v", d)

	// A stream of changes; the ingester and then allot are killed with
	// SIGKILL in the middle of it and restarted.
	changes := make(chan error, 1)
	go func() {
		for i := range 400 {
			var err error
			switch i % 4 {
			case 0:
				_, err = db.ExecContext(ctx, "INSERT INTO `"+table+"` VALUES (?,?,?,?)", fmt.Sprintf("S%04d", i), fmt.Sprintf("Stream %d", i), "Acme", "blue")
			case 1:
				_, err = db.ExecContext(ctx, "UPDATE `"+table+"` SET name = ?, colour = ? WHERE id = ?", fmt.Sprintf("Umbenannt %d", i), "green", fmt.Sprintf("P%04d", i%300))
			case 2:
				_, err = db.ExecContext(ctx, "DELETE FROM `"+table+"` WHERE id = ?", fmt.Sprintf("P%04d", (i+150)%300))
			case 3:
				// One transaction of several rows, and a SKU that moves.
				_, err = db.ExecContext(ctx, "UPDATE `"+table+"` SET id = ? WHERE id = ?", fmt.Sprintf("M%04d", i), fmt.Sprintf("S%04d", i-3))
			}
			if err != nil {
				changes <- err
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		changes <- nil
	}()
	time.Sleep(150 * time.Millisecond)
	in.kill()
	time.Sleep(100 * time.Millisecond)
	in = startIngester(t, bin, ingestArgs...)
	time.Sleep(300 * time.Millisecond)
	allot.Kill()
	time.Sleep(100 * time.Millisecond)
	if allot, err = remote.StartProcess(ctx, bin, store.Config{DataDir: filepath.Join(dir, "data"), Durability: store.DurabilityFsync}, "--resp", addr); err != nil {
		t.Fatal(err)
	}
	if err := <-changes; err != nil {
		t.Fatal(err)
	}

	// The catalog converges to the table, row by row.
	want := map[string]catalog.Record{}
	rows, err := db.QueryContext(ctx, "SELECT id, name, brand, colour FROM `"+table+"`")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.sku, &r.name, &r.brand, &r.colour); err != nil {
			t.Fatal(err)
		}
		want[r.sku] = catalog.Record{SKU: r.sku, Title: r.name, Brand: r.brand, Attributes: []catalog.Attribute{{Name: "colour", Value: r.colour}}}
	}
	rows.Close()
	var everySKU []string
	for i := range 400 {
		everySKU = append(everySKU, fmt.Sprintf("P%04d", i%300), fmt.Sprintf("S%04d", i), fmt.Sprintf("M%04d", i))
	}
	waitFor("the catalog to equal the table", 30*time.Second, func() bool {
		for _, sku := range everySKU {
			r, found := get(sku)
			w, ok := want[sku]
			if found != ok || (ok && !r.Equal(&w)) {
				return false
			}
		}
		return true
	})

	// No event applied twice: each key is in the change stream once.
	seen := map[string]int{}
	var after uint64
	for {
		evs, err := c.Changes(ctx, after, 10000, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if strings.HasPrefix(e.Key, "mysql:") {
				seen[e.Key]++
			}
			after = e.Seq
		}
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("key %s applied %d times", k, n)
		}
	}
	if len(seen) < 400 {
		t.Errorf("only %d keyed events in the change stream, want at least 400", len(seen))
	}
	if !strings.Contains(in.log.String(), "resuming at") {
		t.Errorf("the restarted ingester did not resume from its checkpoint:\n%s", in.log.String())
	}
	t.Logf("%d keyed events, each applied once", len(seen))
}
