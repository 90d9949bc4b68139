package ingest_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"allot/client"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// startCaseInsensitiveMariaDB starts a MariaDB of the test's own with
// lower_case_table_names=1 (a server setting fixed when its data directory
// is made, so not one the project's MariaDB can be given).
func startCaseInsensitiveMariaDB(t *testing.T) int {
	t.Helper()
	return startOwnMariaDB(t, "--lower-case-table-names=1")
}

// startOwnMariaDB starts a MariaDB of the test's own with server id 1 and
// its binary log in row format, on a free port, without privileges (any
// user name logs in); options (given to mariadb-install-db and mariadbd,
// after the defaults) change that. It returns the port; the server is
// stopped and its files removed at the end of the test.
func startOwnMariaDB(t *testing.T, options ...string) int {
	t.Helper()
	server, err := exec.LookPath("mariadbd")
	if err != nil {
		server = "/usr/sbin/mariadbd"
	}
	install, err := exec.LookPath("mariadb-install-db")
	if _, serr := os.Stat(server); err != nil || serr != nil {
		if os.Getenv("CI") == "true" { // the project's services install MariaDB: it must run
			t.Fatalf("no mariadbd and mariadb-install-db here (%v, %v)", err, serr)
		}
		t.Skipf("no mariadbd and mariadb-install-db here (%v, %v)", err, serr)
	}
	dir, err := os.MkdirTemp("", "allot-mariadb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var as []string
	if os.Geteuid() == 0 { // mariadbd will not run as root: as mysql
		u, err := user.Lookup("mysql")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("running as root and no mysql user: %v", err)
			}
			t.Skipf("running as root and no mysql user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		as = []string{"--user=mysql"}
	}
	data := filepath.Join(dir, "data")
	args := append([]string{"--no-defaults", "--datadir=" + data}, as...)
	if out, err := exec.Command(install, append(append(args, "--auth-root-authentication-method=normal", "--skip-test-db"), options...)...).CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	args = append(args, "--port="+strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--socket="+filepath.Join(dir, "mariadbd.sock"), "--pid-file="+filepath.Join(dir, "mariadbd.pid"),
		"--log-error="+filepath.Join(dir, "error.log"), "--skip-grant-tables", "--skip-name-resolve",
		"--server-id=1", "--log-bin=mariadb-bin", "--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL",
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_bin", "--innodb-buffer-pool-size=16M")
	cmd := exec.Command(server, append(args, options...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return port
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("mariadbd exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mariadbd did not take connections in 60 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAudit12TableNamesOfACaseInsensitiveSource: with
// lower_case_table_names=1 the source finds the table named Shop.Products
// in its information_schema as shop.products, the name its binary log
// gives it; the ingester matched row events by the names as given, and
// every row after the snapshot was dropped without a word.
func TestAudit12TableNamesOfACaseInsensitiveSource(t *testing.T) {
	bin := servertest.BuildAllot(t)
	port := startCaseInsensitiveMariaDB(t)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE DATABASE Shop",
		"CREATE TABLE Shop.Products (Id VARCHAR(64) PRIMARY KEY, Name VARCHAR(256) NOT NULL, Brand VARCHAR(256) NOT NULL)",
		"INSERT INTO Shop.Products VALUES ('P1', 'Eins', 'Acme')",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dir := t.TempDir()
	allot, err := remote.StartProcess(t.Context(), bin, store.Config{DataDir: filepath.Join(dir, "data"), Durability: store.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { allot.Stop(30 * time.Second) })
	r := &rig{t: t, bin: bin, dir: dir, state: filepath.Join(dir, "state.json"), allot: allot}
	if r.c, err = client.New(client.Config{Addr: allot.Addr(), PoolSize: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.c.Close() })
	in := binaryIngester(bin)(t, "--dsn", fmt.Sprintf("repl@tcp(127.0.0.1:%d)/Shop", port), "--table", "Products",
		"--sku", "Id", "--title", "Name", "--brand", "Brand", "--addr", allot.Addr(), "--state", r.state, "--metrics", "",
		"--server-id", "7", "--checkpoint-every", "100ms")
	t.Cleanup(in.kill)
	r.waitRecord(in, "P1", "Eins|Acme|[]")
	if _, err := db.Exec("INSERT INTO Shop.Products VALUES ('P2', 'Zwei', 'Acme')"); err != nil {
		t.Fatal(err)
	}
	r.waitRecord(in, "P2", "Zwei|Acme|[]")
}
