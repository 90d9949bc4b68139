package ingest_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/catalog"
	"allot/client"
	"allot/ingest"
	"allot/server/servertest"
)

// brokenEnv names the broken variant a child process of the test binary
// runs as (TestMain): it is then an ingester, not a test run.
const brokenEnv = "ALLOT_INGEST_TEST_BROKEN"

func TestMain(m *testing.M) {
	if v := os.Getenv(brokenEnv); v != "" {
		os.Exit(runBroken(v, os.Args[1:]))
	}
	os.Exit(servertest.Main(m))
}

// brokenVariants are ingesters that each break one promise of the real
// one, and the check of the scenario that must catch it (a substring of
// its failure).
var brokenVariants = []struct {
	name, breaks, caughtBy string
}{
	{"keyless", "sends rows without their binlog position as the idempotency key, so the position is in its checkpoint file alone and not journaled with the rows: a restart sends the rows after the checkpoint again and allot applies them again", "applied twice"},
	{"resume-at-head", "restarts from the source's current binlog position instead of its checkpoint, losing what changed while it was down", "does not equal the table"},
	{"poll", "polls the table for ids above a high-water mark, the published job, which misses updates, deletes and inserts below the mark", "not within 1s"},
}

// TestIngestScenarioCatchesBrokenIngesters runs the scenario of
// TestIngestFollowsAndSurvivesKills with each broken variant in place of
// `allot ingest mysql` and asserts that it fails, at the check meant for
// that break.
func TestIngestScenarioCatchesBrokenIngesters(t *testing.T) {
	for _, v := range brokenVariants {
		t.Run(v.name, func(t *testing.T) {
			failures := runScenario(t, brokenIngester(v.name))
			if len(failures) == 0 {
				t.Fatalf("the scenario passed an ingester that %s", v.breaks)
			}
			for _, f := range failures {
				if strings.Contains(f, v.caughtBy) {
					t.Logf("caught: %s", firstLine(f))
					return
				}
			}
			t.Errorf("the ingester that %s failed the scenario, but not at the check meant for it (%q):\n%s", v.breaks, v.caughtBy, strings.Join(failures, "\n"))
		})
	}
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// brokenIngester starts the test binary as the broken variant.
func brokenIngester(variant string) starter {
	return func(t *testing.T, args ...string) *ingester {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), brokenEnv+"="+variant)
		return startIngester(t, cmd)
	}
}

// runBroken is the child process: `allot ingest mysql`'s flags, one
// promise broken. It returns the exit code.
func runBroken(variant string, args []string) int {
	fset := flag.NewFlagSet("broken ingester "+variant, flag.ContinueOnError)
	var cfg ingest.Config
	var attrs, metrics string
	var serverID uint
	fset.StringVar(&cfg.DSN, "dsn", "", "")
	fset.StringVar(&cfg.Table, "table", "", "")
	fset.StringVar(&cfg.SKUColumn, "sku", "sku", "")
	fset.StringVar(&cfg.TitleColumn, "title", "title", "")
	fset.StringVar(&cfg.BrandColumn, "brand", "brand", "")
	fset.StringVar(&attrs, "attributes", "", "")
	fset.StringVar(&cfg.Addr, "addr", "", "")
	fset.StringVar(&cfg.StateFile, "state", "", "")
	fset.UintVar(&serverID, "server-id", 0, "")
	fset.DurationVar(&cfg.CheckpointEvery, "checkpoint-every", 200*time.Millisecond, "")
	fset.StringVar(&metrics, "metrics", "", "")
	if err := fset.Parse(args); err != nil {
		return 2
	}
	if attrs != "" {
		cfg.Attributes = strings.Split(attrs, ",")
	}
	cfg.ServerID = uint32(serverID)
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s broken ingest (%s): %s\n", time.Now().UTC().Format(time.RFC3339), variant, fmt.Sprintf(format, a...))
	}
	c, err := client.New(client.Config{Addr: cfg.Addr, PoolSize: 32})
	if err != nil {
		logf("%v", err)
		return 2
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var sink ingest.Sink = c
	switch variant {
	case "keyless":
		sink = keylessSink{c}
	case "resume-at-head":
		if err := moveCheckpointToHead(ctx, cfg); err != nil {
			logf("%v", err)
			return 1
		}
	case "poll":
		err = poll(ctx, cfg, c, logf)
	case "ignore-schema":
		cfg.BrokenIgnoreSchema = true
	default:
		logf("no such variant")
		return 2
	}
	if variant != "poll" {
		var in *ingest.Ingester
		if in, err = ingest.New(cfg, sink, logf); err == nil {
			err = in.Run(ctx)
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logf("%v", err)
		return 1
	}
	return 0
}

// keylessSink drops the idempotency key: the binlog position no longer
// travels with the rows into allot's journal.
type keylessSink struct{ c *client.Client }

func (s keylessSink) CatalogSet(ctx context.Context, r catalog.Record, _ string) error {
	return s.c.CatalogSet(ctx, r, "")
}

func (s keylessSink) CatalogDel(ctx context.Context, sku, _ string) (bool, error) {
	return s.c.CatalogDel(ctx, sku, "")
}

// moveCheckpointToHead replaces an existing checkpoint with the source's
// current binlog position.
func moveCheckpointToHead(ctx context.Context, cfg ingest.Config) error {
	if _, err := os.Stat(cfg.StateFile); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	db, err := sql.Open("mysql", cfg.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	var cp ingest.Checkpoint
	var doDB, ignoreDB string
	if err := db.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&cp.File, &cp.Pos, &doDB, &ignoreDB); err != nil {
		return fmt.Errorf("SHOW MASTER STATUS: %w", err)
	}
	b, _ := json.Marshal(cp)
	return os.WriteFile(cfg.StateFile, b, 0o644)
}

// pollState is the poller's state file: the high-water mark.
type pollState struct {
	HighWater string `json:"high_water"`
}

// poll copies rows whose SKU is above the high-water mark, every 50 ms,
// and raises the mark to the last one copied.
func poll(ctx context.Context, cfg ingest.Config, c *client.Client, logf func(string, ...any)) error {
	db, err := sql.Open("mysql", cfg.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	var st pollState
	if b, err := os.ReadFile(cfg.StateFile); err == nil {
		json.Unmarshal(b, &st)
		logf("resuming at %q", st.HighWater)
	}
	quote := func(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }
	cols := []string{quote(cfg.SKUColumn), quote(cfg.TitleColumn), quote(cfg.BrandColumn)}
	for _, a := range cfg.Attributes {
		cols = append(cols, quote(a))
	}
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + quote(cfg.Table) + " WHERE " + cols[0] + " > ? ORDER BY " + cols[0]
	for ctx.Err() == nil {
		rows, err := db.QueryContext(ctx, q, st.HighWater)
		if err != nil {
			return err
		}
		vals := make([]string, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			r := catalog.Record{SKU: vals[0], Title: vals[1], Brand: vals[2]}
			for i, a := range cfg.Attributes {
				r.Attributes = append(r.Attributes, catalog.Attribute{Name: a, Value: vals[3+i]})
			}
			if err := c.CatalogSet(ctx, r, ""); err != nil {
				rows.Close()
				return err
			}
			st.HighWater = r.SKU
		}
		rows.Close()
		b, _ := json.Marshal(st)
		if err := os.WriteFile(cfg.StateFile, b, 0o644); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return ctx.Err()
}
