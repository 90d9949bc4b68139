package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"allot/client"
	"allot/ingest"
)

func init() {
	register(command{
		name:    "ingest",
		summary: "follow a MySQL/MariaDB table into allot's catalog from the binlog (ingest mysql)",
		run:     runIngest,
	})
}

func runIngest(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "mysql" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stdout, "Usage: allot ingest mysql [flags]   (see allot ingest mysql --help)")
			return nil
		}
		return &exitError{code: 2, msg: "the only source is mysql: allot ingest mysql [flags]"}
	}
	fs := newFlagSet("ingest mysql", "[flags]",
		"Follows a MySQL or MariaDB table into allot's catalog: a consistent\n"+
			"snapshot first (when --state does not exist yet), then every insert,\n"+
			"update and delete from the binary log in row format (log_bin,\n"+
			"binlog_format=ROW, binlog_row_image=FULL). Each row becomes CATALOG.SET or\n"+
			"CATALOG.DEL with the binlog position in its idempotency key, so a restart\n"+
			"(of either side, kill -9 included) loses nothing and applies nothing twice.\n"+
			"With binlog_row_metadata=FULL rows are mapped by their column names and\n"+
			"an ALTER TABLE is followed; without it an ALTER TABLE of the table stops\n"+
			"the ingester, and TRUNCATE, DROP, RENAME, CREATE OR REPLACE, DROP DATABASE\n"+
			"and an ALTER that moves partitions or tablespaces always do (README). A\n"+
			"lost connection to the source is retried forever from the last committed\n"+
			"transaction, each failure logged. A change written as a statement (a\n"+
			"session with binlog_format STATEMENT or MIXED) stops it; run one ingester\n"+
			"per table, each with its own --server-id (the default differs per table\n"+
			"and state file).", stderr)
	var cfg ingest.Config
	var attrs string
	var serverID uint
	var metricsAddr string
	fs.StringVar(&cfg.DSN, "dsn", "allot_repl:allot_repl@tcp(127.0.0.1:13306)/allot", "source server (go-sql-driver DSN); the user needs SELECT, REPLICATION SLAVE, REPLICATION CLIENT")
	fs.StringVar(&cfg.Table, "table", "", "source table (in the DSN's database)")
	fs.StringVar(&cfg.SKUColumn, "sku", "sku", "column holding the SKU")
	fs.StringVar(&cfg.TitleColumn, "title", "title", "column holding the title")
	fs.StringVar(&cfg.BrandColumn, "brand", "brand", "column holding the brand")
	fs.StringVar(&attrs, "attributes", "", "comma-separated columns copied as attributes of the same name")
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:7379", "allot's RESP address")
	// Read from the environment after parsing, so that --help does not
	// print it as the flag's default.
	ef := &envFlags{fs: fs}
	ef.secret(&cfg.Password, "password", "ALLOT_PASSWORD", "allot's password (AUTH), if it has one")
	fs.StringVar(&cfg.StateFile, "state", "", "checkpoint file (default .allot/ingest/<table>.json)")
	fs.UintVar(&serverID, "server-id", 0, "replica server id to register with the source, unique among its replicas (default: derived from the source's address, database, --table and --state, 2147483648 to 4294967294)")
	fs.DurationVar(&cfg.CheckpointEvery, "checkpoint-every", 200*time.Millisecond, "how often the checkpoint is written at most")
	fs.StringVar(&metricsAddr, "metrics", "127.0.0.1:7390", "serve GET /metrics (lag, counts, position) here; empty for none")
	if err := parseFlags(fs, args[1:], stdout); err != nil {
		return err
	}
	for _, apply := range ef.secrets {
		apply()
	}
	if attrs != "" {
		cfg.Attributes = strings.Split(attrs, ",")
	}
	if ef.given("server-id") && (serverID == 0 || serverID > 1<<32-1) {
		return &exitError{code: 2, msg: "--server-id must be from 1 to 4294967295"}
	}
	cfg.ServerID = uint32(serverID) // 0: derived (ingest.DefaultServerID)
	if cfg.StateFile == "" && cfg.Table != "" {
		cfg.StateFile = ".allot/ingest/" + cfg.Table + ".json"
	}
	c, err := client.New(client.Config{Addr: cfg.Addr, Password: cfg.Password, PoolSize: 32})
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	defer c.Close()
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s ingest: %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, a...))
	}
	in, err := ingest.New(cfg, c, logf)
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if metricsAddr != "" {
		ln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			return fmt.Errorf("ingest: metrics on %s: %w", metricsAddr, err)
		}
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/metrics" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			in.Metrics.WriteText(w)
		})}
		go srv.Serve(ln)
		defer srv.Close()
		logf("metrics on http://%s/metrics", ln.Addr())
	}
	err = in.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
