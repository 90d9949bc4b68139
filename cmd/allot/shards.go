package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"allot/cluster"
	"allot/services"
)

func init() {
	register(command{
		name:    "shards",
		summary: "make or show a cluster's shard map; recover cross-shard orders a dead coordinator left",
		run:     runShards,
	})
}

const shardsAbout = `A cluster of several shards hashes each group (sku, condition, source) to
one of them; the map lives in the cluster's NATS (key-value bucket
ALLOT_SHARDS) and is fixed once made. A cluster without a map is one shard.

  allot shards init --count 3      make the map of shards s0, s1, s2
  allot shards show                print the map
  allot shards recover             finish the cross-shard holds and orders
                                   whose coordinator died (see --after; a
                                   cluster.Router with RecoverEvery does it
                                   in the background)

Then run the nodes of each shard: allot serve --cluster URLS --shard s0 ...
A node for a shard the map does not name refuses to start. Clients route
by group and run orders across shards as two-phase holds (Go: cluster.Router;
README "Shards"). The catalog and search live on the first shard, s0; the
nodes of other shards refuse them.`

func runShards(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintf(stdout, "Usage: allot shards init|show|recover [flags]\n\n%s\n", shardsAbout)
			return nil
		}
		return &exitError{code: 2, msg: "want a subcommand: init, show or recover (see --help)"}
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("shards "+sub, "[flags]", shardsAbout, stderr)
	urls := fs.String("cluster", envOr("ALLOT_CLUSTER", services.NATSURL), "NATS servers of the cluster, comma-separated (env ALLOT_CLUSTER); the default is 'allot services up nats'")
	var count int
	var coordinator string
	var after time.Duration
	switch sub {
	case "init":
		fs.IntVar(&count, "count", 0, fmt.Sprintf("number of shards, 1..%d (required)", cluster.ShardsMax))
	case "show":
	case "recover":
		fs.StringVar(&coordinator, "coordinator", "", "recover as this coordinator: its records at once, others' undecided ones once older than --after (default: a name of its own, host-pid-random, which owns none)")
		fs.DurationVar(&after, "after", 30*time.Second, "cancel other coordinators' undecided (holding) records once they are this old (0: at once); decided ones (confirming, cancelling) are finished at any age")
	default:
		return &exitError{code: 2, msg: fmt.Sprintf("unknown subcommand %q: want init, show or recover", sub)}
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch sub {
	case "init":
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "count" })
		if !given {
			return &exitError{code: 2, msg: "--count is required"}
		}
		if count < 1 || count > cluster.ShardsMax {
			return &exitError{code: 2, msg: fmt.Sprintf("--count must be 1 to %d, got %d", cluster.ShardsMax, count)}
		}
		m, err := cluster.CreateShardMap(ctx, *urls, count)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "shards: %s\n", strings.Join(m.Shards, " "))
	case "show":
		m, found, err := cluster.ReadShardMap(ctx, *urls)
		if err != nil {
			return err
		}
		if !found {
			fmt.Fprintln(stdout, "no shard map: the cluster is one shard")
			return nil
		}
		fmt.Fprintf(stdout, "shards: %s\nhash: %s\n", strings.Join(m.Shards, " "), m.Hash)
	case "recover":
		if after < 0 {
			return &exitError{code: 2, msg: fmt.Sprintf("--after must be 0 (at once) or more, got %v", after)}
		}
		if after == 0 {
			// "At once". RouterConfig reads a zero RecoverAfter as its
			// default (30 s), which would leave every young record.
			after = time.Nanosecond
		}
		r, err := cluster.NewRouter(ctx, cluster.RouterConfig{URLs: *urls, Coordinator: coordinator, RecoverAfter: after,
			Logger: slog.New(slog.NewTextHandler(stderr, nil))})
		if err != nil {
			return err
		}
		defer r.Close()
		st, err := r.Recover(ctx)
		fmt.Fprintf(stdout, "confirmed %d, cancelled %d, partial %d, left to their coordinators %d\n", st.Confirmed, st.Cancelled, st.Partial, st.Skipped)
		return err
	}
	return nil
}
