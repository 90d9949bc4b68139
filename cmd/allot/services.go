package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"allot/services"
	"allot/store"
)

func init() {
	register(command{
		name:    "services",
		summary: "start, stop or show the local peer servers (PostgreSQL, MariaDB, Redis, Tarantool, RabbitMQ, dtm, NATS)",
		run:     runServices,
	})
}

const servicesAbout = `Actions:
  up      install what is missing (as root), start what is not running,
          continue one left paused (SIGSTOP), wait until each server answers,
          create the accounts; idempotent
  down    stop the servers that 'up' started from this directory (pid files);
          never anything else
  status  say running / stopped / not-installed, with address, version and
          durability

NAME is postgres, mariadb, redis, tarantool, rabbitmq, dtm or nats; none
means all but nats (the 3-node NATS JetStream cluster of 'allot serve
--cluster' starts only when named). Each server listens on 127.0.0.1 only
(PostgreSQL 15432, MariaDB 13306, Redis 16379, Tarantool 13301, RabbitMQ
14672, dtm 16789 on Redis, NATS 14220, 14230 and 14240) and keeps data,
socket, log and pid file in <dir>/<name> (NATS: <dir>/nats-1 to nats-3).

--durability sets PostgreSQL, MariaDB, Redis and Tarantool (dtm's is its
Redis's), at runtime or by a restart. The NATS cluster always syncs
(fsync), and RabbitMQ leaves durability to each queue and message (the
client's choice): up says it ignores it for them, and changes nothing.`

func runServices(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("services", "up|down|status [flags] [NAME...]", servicesAbout, stderr)
	cfg := services.Config{Log: stdout}
	fs.StringVar(&cfg.Dir, "dir", "", "directory holding one folder per server (default <module root>/.allot/services)")
	durability := fs.String("durability", "", "fsync, write or none: the servers' durability (README's durability table; NATS and RabbitMQ have none to set, see above); empty keeps a running server's and starts new ones in fsync")
	fs.DurationVar(&cfg.Timeout, "timeout", 2*time.Minute, "how long to wait for one server to answer after a start or to exit after a stop")
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return parseFlags(fs, []string{a}, stdout)
		}
	}
	// Flags may come before or after the action.
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return &exitError{code: 2, msg: "missing action: up, down or status (see --help)"}
	}
	action := rest[0]
	// Flags may also come between and after the names.
	var names []string
	for rest = rest[1:]; len(rest) > 0; rest = rest[1:] {
		if err := fs.Parse(rest); err != nil {
			return &exitError{code: 2}
		}
		if rest = fs.Args(); len(rest) == 0 {
			break
		}
		names = append(names, rest[0])
	}
	// services.Config reads a zero as its default (2 minutes): given on
	// the command line it was asked for, and is refused like a negative.
	if cfg.Timeout <= 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("--timeout must be positive, got %v", cfg.Timeout)}
	}
	if err := services.CheckNames(names...); err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	if *durability != "" {
		d, err := store.ParseDurability(*durability)
		if err != nil {
			return &exitError{code: 2, msg: err.Error()}
		}
		if action != "up" {
			return &exitError{code: 2, msg: "--durability applies to up: " + action + " changes no server's durability"}
		}
		cfg.Durability = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch action {
	case "up":
		if err := services.Up(ctx, cfg, names...); err != nil {
			return err
		}
	case "down":
		if err := services.Down(ctx, cfg, names...); err != nil {
			return err
		}
	case "status":
	default:
		return &exitError{code: 2, msg: fmt.Sprintf("unknown action %q (want up, down or status)", action)}
	}
	list, err := services.Status(ctx, cfg, names...)
	if err != nil {
		return err
	}
	for _, s := range list {
		fmt.Fprintln(stdout, s)
	}
	return nil
}
