package ingest_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"allot/catalog"
	"allot/client"
	"allot/ingest"
	"allot/server/servertest"
	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/remote"
)

// ingester is an ingester running as a process, so that it can be killed.
type ingester struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	log  strings.Builder
}

// starter starts an ingester with `allot ingest mysql`'s flags.
type starter func(t *testing.T, args ...string) *ingester

// binaryIngester starts `allot ingest mysql` from the allot binary bin.
func binaryIngester(bin string) starter {
	return func(t *testing.T, args ...string) *ingester {
		return startIngester(t, exec.Command(bin, append([]string{"ingest", "mysql"}, args...)...))
	}
}

func startIngester(t *testing.T, cmd *exec.Cmd) *ingester {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &ingester{cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			in.mu.Lock()
			in.log.WriteString(sc.Text() + "\n")
			in.mu.Unlock()
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

func (in *ingester) logText() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.log.String()
}

// checks collects the scenario's failed checks, so that a test can assert
// that a broken ingester fails them (broken_test.go) as well as that the
// real one passes them.
type checks struct{ failures []string }

// errStopped ends a scenario at a failed check that later steps depend
// on.
var errStopped = errors.New("scenario stopped at a failed check")

func (c *checks) fail(format string, args ...any) {
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

func (c *checks) stop(format string, args ...any) {
	c.fail(format, args...)
	panic(errStopped)
}

// runScenario runs the scenario with the ingesters start starts and
// returns the checks that failed. Failures of the test's own machinery
// (MariaDB unreachable, allot not starting) fail t instead.
func runScenario(t *testing.T, start starter) (failures []string) {
	return runChecks(t, start, scenario)
}

// runChecks runs scenario sc and returns the checks that failed.
func runChecks(t *testing.T, start starter, sc func(*testing.T, *checks, starter)) (failures []string) {
	ck := &checks{}
	defer func() {
		if r := recover(); r != nil && r != errStopped {
			panic(r)
		}
		failures = ck.failures
	}()
	sc(t, ck, start)
	return ck.failures
}

// TestIngestFollowsAndSurvivesKills: MariaDB started by the project, a
// table loaded, `allot ingest` started; inserts, updates and deletes
// appear in allot within 1 s; the ingester and allot are each killed with
// SIGKILL while changes stream in and restarted, and the ingester once
// more with applied changes after its checkpoint and changes made while it
// is down; at the end the catalog equals the table row by row and no
// binlog event was applied twice (allot's change stream holds exactly one
// catalog event per source row change, and each idempotency key once).
// TestIngestScenarioCatchesBrokenIngesters proves these checks fail for
// ingesters that break the contract.
func TestIngestFollowsAndSurvivesKills(t *testing.T) {
	bin := servertest.BuildAllot(t)
	for _, f := range runScenario(t, binaryIngester(bin)) {
		t.Error(f)
	}
}

// scenarioCheckpointEvery is the ingesters' checkpoint interval in the
// scenario: longer than a burst of changes takes, so that a kill right
// after the burst finds applied changes after the checkpoint.
const scenarioCheckpointEvery = 3 * time.Second

// burstRows is how many single-row transactions one burst commits.
const burstRows = 20

func scenario(t *testing.T, ck *checks, start starter) {
	bin, ctx, db := mariaDBSource(t, 5*time.Minute)
	stamp := time.Now().UnixNano()
	table := fmt.Sprintf("ingest_test_%d", stamp)
	exec := func(q string, args ...any) int64 {
		t.Helper()
		res, err := db.ExecContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
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
	// catalogOps counts the catalog ops the source's row changes call
	// for: one CATALOG.SET per row of the snapshot, per inserted and per
	// updated row, one CATALOG.DEL per deleted row, both for an update
	// that changes the SKU.
	catalogOps := int64(300)

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
	statePath := filepath.Join(dir, "state.json")
	// A server id of the run's own: two runs of this test at once (two
	// engineers' go test) must not displace each other's binlog stream.
	serverID := 100000 + stamp/1000%1000000
	ingestArgs := []string{"--dsn", replDSN(),
		"--table", table, "--sku", "id", "--title", "name", "--brand", "brand", "--attributes", "colour",
		"--addr", addr, "--state", statePath, "--metrics", "", "--server-id", fmt.Sprint(serverID),
		"--checkpoint-every", scenarioCheckpointEvery.String()}
	in := start(t, ingestArgs...)
	defer func() { in.kill() }()

	waitFor := func(what string, limit time.Duration, ok func() bool) time.Duration {
		t.Helper()
		begin := time.Now()
		for !ok() {
			if time.Since(begin) > limit {
				ck.stop("%s: not within %v; ingester log:\n%s", what, limit, in.logText())
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(begin)
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
		ck.stop("ß is not folded to ss: %v %v", hits, err)
	}
	hits, err = c.Search(ctx, catalog.Query{Prefix: "größe artikel 29", Brand: "SOFT", Limit: 100}, nil)
	if err != nil || len(hits) == 0 {
		ck.stop("search after the snapshot: %v %v", hits, err)
	}

	// Inserts, updates and deletes are searchable within 1 s.
	catalogOps += exec("INSERT INTO `"+table+"` VALUES (?,?,?,?)", "NEW1", "Zebra Streifen", "Acme", "black")
	d := waitFor("an insert", time.Second, func() bool {
		h, _ := c.Search(ctx, catalog.Query{Prefix: "zebra"}, nil)
		return len(h) == 1 && h[0].SKU == "NEW1"
	})
	t.Logf("insert visible after %v", d)
	catalogOps += exec("UPDATE `"+table+"` SET name = ? WHERE id = ?", "Zebra Gestreift", "NEW1")
	d = waitFor("an update", time.Second, func() bool { r, _ := get("NEW1"); return r.Title == "Zebra Gestreift" })
	t.Logf("update visible after %v", d)
	catalogOps += exec("DELETE FROM `"+table+"` WHERE id = ?", "NEW1")
	d = waitFor("a delete", time.Second, func() bool { _, ok := get("NEW1"); return !ok })
	t.Logf("delete visible after %v", d)

	// A stream of changes; the ingester and then allot are killed with
	// SIGKILL in the middle of it and restarted.
	type streamed struct {
		ops int64
		err error
	}
	changes := make(chan streamed, 1)
	go func() {
		var ops int64
		for i := range 400 {
			var res sql.Result
			var err error
			per := int64(1)
			switch i % 4 {
			case 0:
				res, err = db.ExecContext(ctx, "INSERT INTO `"+table+"` VALUES (?,?,?,?)", fmt.Sprintf("S%04d", i), fmt.Sprintf("Stream %d", i), "Acme", "blue")
			case 1:
				res, err = db.ExecContext(ctx, "UPDATE `"+table+"` SET name = ?, colour = ? WHERE id = ?", fmt.Sprintf("Umbenannt %d", i), "green", fmt.Sprintf("P%04d", i%300))
			case 2:
				res, err = db.ExecContext(ctx, "DELETE FROM `"+table+"` WHERE id = ?", fmt.Sprintf("P%04d", (i+150)%300))
			case 3:
				// A SKU that moves: a CATALOG.DEL and a CATALOG.SET.
				res, err = db.ExecContext(ctx, "UPDATE `"+table+"` SET id = ? WHERE id = ?", fmt.Sprintf("M%04d", i), fmt.Sprintf("S%04d", i-3))
				per = 2
			}
			var n int64
			if err == nil {
				n, err = res.RowsAffected()
			}
			if err != nil {
				changes <- streamed{err: err}
				return
			}
			ops += per * n
			time.Sleep(2 * time.Millisecond)
		}
		changes <- streamed{ops: ops}
	}()
	time.Sleep(150 * time.Millisecond)
	in.kill()
	time.Sleep(100 * time.Millisecond)
	in = start(t, ingestArgs...)
	time.Sleep(300 * time.Millisecond)
	allot.Kill()
	time.Sleep(100 * time.Millisecond)
	if allot, err = remote.StartProcess(ctx, bin, store.Config{DataDir: filepath.Join(dir, "data"), Durability: store.DurabilityFsync}, "--resp", addr); err != nil {
		t.Fatal(err)
	}
	s := <-changes
	if s.err != nil {
		t.Fatal(s.err)
	}
	catalogOps += s.ops

	// A kill with work on both sides of it: a burst of changes the
	// ingester has applied but not yet checkpointed (the checkpoint file,
	// read after the kill, tells whether that held), then changes made
	// while it is down. Up to three rounds, until one kill found applied
	// changes after the checkpoint.
	const burstSKU = "B0001"
	catalogOps += exec("INSERT INTO `"+table+"` VALUES (?,?,?,?)", burstSKU, "Burst start", "Acme", "grey")
	lastTitle := "Burst start"
	replayed := false
	for round := 0; round < 3 && !replayed; round++ {
		waitFor("the ingester to catch up before a burst", 30*time.Second, func() bool { r, _ := get(burstSKU); return r.Title == lastTitle })
		// The burst's first commit takes the next checkpoint; the others
		// are inside the interval after it.
		time.Sleep(scenarioCheckpointEvery + 200*time.Millisecond)
		var lastFile string
		var lastPos uint32
		for j := 1; j <= burstRows; j++ {
			if j == burstRows {
				lastFile, lastPos = binlogHead(ctx, t, db)
			}
			lastTitle = fmt.Sprintf("Burst %d.%d", round, j)
			catalogOps += exec("UPDATE `"+table+"` SET name = ? WHERE id = ?", lastTitle, burstSKU)
		}
		waitFor("the burst", 10*time.Second, func() bool { r, _ := get(burstSKU); return r.Title == lastTitle })
		in.kill()
		cp := readState(t, statePath)
		// The last burst commit ends after lastPos: a checkpoint at or
		// before lastPos leaves it to be sent again.
		replayed = cp.File < lastFile || (cp.File == lastFile && cp.Pos <= lastPos)
		t.Logf("round %d: checkpoint %s:%d, last burst commit after %s:%d: replay pending %v", round, cp.File, cp.Pos, lastFile, lastPos, replayed)
		lastTitle = fmt.Sprintf("While down %d", round)
		catalogOps += exec("UPDATE `"+table+"` SET name = ? WHERE id = ?", lastTitle, burstSKU)
		catalogOps += exec("INSERT INTO `"+table+"` VALUES (?,?,?,?)", fmt.Sprintf("D%04d", round), "Während aus", "Über", "white")
		catalogOps += exec("DELETE FROM `"+table+"` WHERE id = ?", fmt.Sprintf("P%04d", 7+round))
		in = start(t, ingestArgs...)
	}
	if !replayed {
		ck.fail("no kill found applied changes after the ingester's checkpoint (3 rounds): the replay after a kill was not exercised")
	}

	// The catalog converges to the table, row by row.
	want := map[string]catalog.Record{}
	rows, err := db.QueryContext(ctx, "SELECT id, name, brand, colour FROM `"+table+"`")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var sku, name, brand, colour string
		if err := rows.Scan(&sku, &name, &brand, &colour); err != nil {
			t.Fatal(err)
		}
		want[sku] = catalog.Record{SKU: sku, Title: name, Brand: brand, Attributes: []catalog.Attribute{{Name: "colour", Value: colour}}}
	}
	rows.Close()
	var everySKU []string
	for i := range 400 {
		everySKU = append(everySKU, fmt.Sprintf("P%04d", i%300), fmt.Sprintf("S%04d", i), fmt.Sprintf("M%04d", i))
	}
	everySKU = append(everySKU, "NEW1", burstSKU, "D0000", "D0001", "D0002")
	diff := func() string {
		for _, sku := range everySKU {
			r, found := get(sku)
			w, ok := want[sku]
			switch {
			case found && !ok:
				return fmt.Sprintf("sku %s is in the catalog (%+v), not in the table", sku, r)
			case !found && ok:
				return fmt.Sprintf("sku %s is in the table (%+v), not in the catalog", sku, w)
			case ok && !r.Equal(&w):
				return fmt.Sprintf("sku %s is %+v in the catalog, %+v in the table", sku, r, w)
			}
		}
		return ""
	}
	begin := time.Now()
	for d := diff(); d != ""; d = diff() {
		if time.Since(begin) > 30*time.Second {
			ck.stop("the catalog does not equal the table after 30s: %s; ingester log:\n%s", d, in.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Nothing applied twice: one catalog event per source row change, and
	// each key in the change stream once.
	seen := map[string]int{}
	var events int64
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
			if e.Op == "catalog.set" || e.Op == "catalog.del" {
				events++
			}
			if strings.HasPrefix(e.Key, "mysql:") {
				seen[e.Key]++
			}
			after = e.Seq
		}
	}
	switch {
	case events > catalogOps:
		ck.fail("%d catalog events in allot's change stream for %d source row changes: %d applied twice", events, catalogOps, events-catalogOps)
	case events < catalogOps:
		ck.fail("%d catalog events in allot's change stream for %d source row changes: %d never applied", events, catalogOps, catalogOps-events)
	}
	for k, n := range seen {
		if n > 1 {
			ck.fail("key %s applied %d times", k, n)
		}
	}
	if len(seen) < 400 {
		ck.fail("only %d keyed events in the change stream, want at least 400", len(seen))
	}
	if !strings.Contains(in.logText(), "resuming at") {
		ck.fail("the restarted ingester did not resume from its checkpoint:\n%s", in.logText())
	}
	t.Logf("%d catalog events for %d source row changes; %d distinct keys", events, catalogOps, len(seen))
}

// mariaDBSource is what every ingest test starts with: the allot binary,
// the project's MariaDB with its binary log, and a context bounding the
// test; the connection and the context end with the test.
func mariaDBSource(t *testing.T, timeout time.Duration) (bin string, ctx context.Context, db *sql.DB) {
	t.Helper()
	bin = servertest.BuildAllot(t)
	servicestest.Require(t, "mariadb")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	db = openMariaDB(ctx, t)
	t.Cleanup(func() { db.Close() })
	return bin, ctx, db
}

// replDSN is the project's MariaDB as its replication user.
func replDSN() string {
	return strings.Replace(services.MariaDBDSN, "allot:allot@", "allot_repl:allot_repl@", 1)
}

// openMariaDB connects to the project's MariaDB, restarting it first if
// it runs without the binary log (started before services/mariadb.cnf
// turned it on).
func openMariaDB(ctx context.Context, t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", services.MariaDBDSN)
	if err != nil {
		t.Fatal(err)
	}
	var logBin int
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin").Scan(&logBin); err != nil {
		t.Fatal(err)
	}
	if logBin == 0 {
		if err := services.Down(ctx, services.Config{}, "mariadb"); err != nil {
			t.Fatal(err)
		}
		servicestest.Require(t, "mariadb")
		db.Close()
		if db, err = sql.Open("mysql", services.MariaDBDSN); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// binlogHead returns the source's current binlog file and position.
func binlogHead(ctx context.Context, t *testing.T, db *sql.DB) (string, uint32) {
	t.Helper()
	rows, err := db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatalf("SHOW MASTER STATUS returned no row (is the binary log on?): %v", rows.Err())
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	var pos uint32
	if _, err := fmt.Sscan(string(vals[1]), &pos); err != nil {
		t.Fatalf("SHOW MASTER STATUS position %q: %v", vals[1], err)
	}
	return string(vals[0]), pos
}

// readState reads an ingester's checkpoint file; a file that holds no
// binlog position (a state of another kind) reads as the zero position.
func readState(t *testing.T, path string) ingest.Checkpoint {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the ingester's state: %v", err)
	}
	var cp ingest.Checkpoint
	json.Unmarshal(b, &cp)
	return cp
}

// TestIngestFollowsColumnChanges: the source table changes under a running
// ingester. With column names in the binary log (binlog_row_metadata=FULL,
// as the project's MariaDB writes it) a column added before the mapped
// ones leaves every later row in the right fields; a mapped column dropped
// stops the ingester with an error naming it; TRUNCATE stops it (the rows
// vanish without row events, the catalog still has them). Without column
// names (MINIMAL) an ALTER TABLE stops it.
// TestColumnScenarioCatchesAnIngesterIgnoringSchemaChanges proves the
// checks fail for an ingester that maps rows by the column order it read
// at start.
func TestIngestFollowsColumnChanges(t *testing.T) {
	for _, f := range runColumnScenario(t, binaryIngester(servertest.BuildAllot(t))) {
		t.Error(f)
	}
}

func TestColumnScenarioCatchesAnIngesterIgnoringSchemaChanges(t *testing.T) {
	failures := runColumnScenario(t, brokenIngester("ignore-schema"))
	for _, f := range failures {
		if strings.Contains(f, "old column order") {
			t.Logf("caught: %s", firstLine(f))
			return
		}
	}
	t.Errorf("an ingester that ignores column changes was not caught mapping rows by the old column order:\n%s", strings.Join(failures, "\n"))
}

func runColumnScenario(t *testing.T, start starter) (failures []string) {
	return runChecks(t, start, columnScenario)
}

func columnScenario(t *testing.T, ck *checks, start starter) {
	bin, ctx, db := mariaDBSource(t, 3*time.Minute)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var metadata string
	if err := db.QueryRowContext(ctx, "SELECT @@binlog_row_metadata").Scan(&metadata); err != nil {
		t.Fatal(err)
	}
	if metadata != "FULL" { // a server started before services/mariadb.cnf set it
		exec("SET GLOBAL binlog_row_metadata = 'FULL'")
	}
	stamp := time.Now().UnixNano()
	table := fmt.Sprintf("ingest_cols_%d", stamp)
	exec("CREATE TABLE `" + table + "` (id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL, colour VARCHAR(64) NOT NULL) ENGINE=InnoDB")
	defer db.Exec("DROP TABLE IF EXISTS `" + table + "`")
	exec("INSERT INTO `"+table+"` VALUES (?,?,?,?),(?,?,?,?)", "P1", "Eins", "Acme", "red", "P2", "Zwei", "Über", "black")

	dir := t.TempDir()
	allot, err := remote.StartProcess(ctx, bin, store.Config{DataDir: filepath.Join(dir, "data"), Durability: store.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { allot.Stop(30 * time.Second) }()
	c, err := client.New(client.Config{Addr: allot.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	statePath := filepath.Join(dir, "state.json")
	args := func(attributes string) []string {
		return []string{"--dsn", replDSN(), "--table", table, "--sku", "id", "--title", "name", "--brand", "brand",
			"--attributes", attributes, "--addr", allot.Addr(), "--state", statePath, "--metrics", "",
			"--server-id", fmt.Sprint(200000 + stamp/1000%1000000), "--checkpoint-every", "100ms"}
	}
	in := start(t, args("colour")...)
	defer func() { in.kill() }()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				ck.stop("%s: not within 10s; ingester log:\n%s", what, in.logText())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	record := func(sku string) string {
		r, found, err := c.CatalogGet(ctx, sku)
		if err != nil || !found {
			return fmt.Sprintf("none (%v)", err)
		}
		return fmt.Sprintf("%s|%s|%v", r.Title, r.Brand, r.Attributes)
	}
	stopped := func(what, says string) {
		t.Helper()
		select {
		case <-in.done:
		case <-time.After(10 * time.Second):
			ck.stop("%s: the ingester went on; its log:\n%s", what, in.logText())
		}
		if !strings.Contains(in.logText(), says) {
			ck.fail("%s: the ingester stopped without saying %q; its log:\n%s", what, says, in.logText())
		}
	}
	waitFor("the snapshot", func() bool { return strings.HasPrefix(record("P2"), "Zwei|") })

	// A column before the mapped ones: every later row shifts by one.
	exec("ALTER TABLE `" + table + "` ADD COLUMN price INT NOT NULL DEFAULT 7 AFTER id")
	exec("UPDATE `"+table+"` SET name = ? WHERE id = ?", "Eins neu", "P1")
	exec("INSERT INTO `"+table+"` (id, price, name, brand, colour) VALUES (?,?,?,?,?)", "P3", 9, "Drei", "Acme", "blue")
	want1, want3 := "Eins neu|Acme|[{colour red}]", "Drei|Acme|[{colour blue}]"
	deadline := time.Now().Add(10 * time.Second)
	for record("P1") != want1 || record("P3") != want3 {
		if time.Now().After(deadline) {
			ck.stop("after ADD COLUMN before the mapped ones: P1 is %q, P3 %q, want %q and %q: rows mapped by the old column order; ingester log:\n%s",
				record("P1"), record("P3"), want1, want3, in.logText())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A mapped column dropped: stop, naming it.
	exec("ALTER TABLE `" + table + "` DROP COLUMN colour")
	exec("UPDATE `"+table+"` SET name = ? WHERE id = ?", "Zwei neu", "P2")
	stopped("a mapped column dropped", `no column "colour"`)
	in = start(t, args("")...)
	waitFor("the restarted ingester, without the dropped column", func() bool { return record("P2") == "Zwei neu|Über|[]" })

	// TRUNCATE: stop, saying why.
	exec("TRUNCATE TABLE `" + table + "`")
	stopped("TRUNCATE", "TRUNCATE TABLE")

	// No column names in the binary log: an ALTER stops the ingester.
	exec("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
	defer db.ExecContext(context.Background(), "SET GLOBAL binlog_row_metadata = 'FULL'")
	if err := os.Remove(statePath); err != nil {
		t.Fatal(err)
	}
	exec("INSERT INTO `"+table+"` (id, price, name, brand) VALUES (?,?,?,?)", "P4", 1, "Vier", "Acme")
	in = start(t, args("")...)
	waitFor("a snapshot with MINIMAL metadata", func() bool { return record("P4") == "Vier|Acme|[]" })
	exec("ALTER TABLE `" + table + "` ADD COLUMN size VARCHAR(8) NOT NULL DEFAULT 'M' AFTER id")
	stopped("ALTER TABLE without column names", "binlog_row_metadata is not FULL")
}

// TestIngestSaysWhenTheBinlogIsGone: a checkpoint in a binlog the source no
// longer has (purged while the ingester was down) stops the ingester with
// an error that says so and what to do, not the server's bare error 1236.
func TestIngestSaysWhenTheBinlogIsGone(t *testing.T) {
	bin, ctx, db := mariaDBSource(t, time.Minute)
	table := fmt.Sprintf("ingest_gone_%d", time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, "CREATE TABLE `"+table+"` (id VARCHAR(64) PRIMARY KEY, name VARCHAR(64) NOT NULL, brand VARCHAR(64) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	defer db.Exec("DROP TABLE `" + table + "`")
	dir := t.TempDir()
	allot, err := remote.StartProcess(ctx, bin, store.Config{DataDir: filepath.Join(dir, "data"), Durability: store.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer allot.Stop(30 * time.Second)
	file, _ := binlogHead(ctx, t, db)
	state := filepath.Join(dir, "state.json")
	gone := file[:strings.LastIndexByte(file, '.')+1] + "999999"
	if err := os.WriteFile(state, []byte(`{"file":"`+gone+`","pos":4}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	out, err := exec.CommandContext(rctx, bin, "ingest", "mysql", "--dsn", replDSN(), "--table", table, "--sku", "id", "--title", "name", "--brand", "brand",
		"--addr", allot.Addr(), "--state", state, "--metrics", "", "--server-id", fmt.Sprint(300000+time.Now().UnixNano()/1000%1000000)).CombinedOutput()
	if rctx.Err() != nil {
		t.Fatalf("the ingester went on from a binlog the source does not have:\n%s", out)
	}
	if err == nil || !strings.Contains(string(out), "cannot send its binlog from the checkpoint "+gone+":4") || !strings.Contains(string(out), "remove the state file") {
		t.Errorf("the ingester (%v) does not say the binlog is gone and what to do:\n%s", err, out)
	}
	if strings.Contains(string(out), "binlogstreamer.go") {
		t.Errorf("the binlog library logged the error on its own too:\n%s", out)
	}
}
