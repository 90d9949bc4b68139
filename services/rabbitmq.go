package services

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/store"
)

// RabbitMQ is the name of the RabbitMQ server.
const RabbitMQ = store.ServerRabbitMQ

// RabbitMQURL is the AMQP address of the RabbitMQ node Up starts with the
// default Config: user guest (allowed from loopback only), vhost "/".
const RabbitMQURL = store.RabbitMQURL

// rabbitmqNode is the Erlang node name: not the machine's rabbit@localhost.
const rabbitmqNode = "allot@localhost"

// rabbitmqServer runs RabbitMQ from Debian's rabbitmq-server package as a
// node of its own beside whatever the machine runs: its own node name,
// AMQP port (base), distribution port (base+1), Erlang port mapper (epmd,
// base+2; the machine's listens on 4369), data, logs, configuration and
// Erlang cookie (HOME is the instance directory), all from environment
// variables, so that /etc/rabbitmq is never read and nothing of the
// machine's node is touched. No plugin is enabled.
//
// RabbitMQ has no server-wide durability mode: a queue is durable or not
// and a message persistent or not, chosen by the client (store/rabbitmq),
// and a persistent message is fsync'd before its publisher confirm or tx
// commit. So the server always reports fsync and never restarts for a
// durability.
//
// The node starts its own epmd on its port if none answers there; that
// epmd outlives the node (as Erlang's does) and serves the next start.
type rabbitmqServer struct{}

func (rabbitmqServer) name() string                { return RabbitMQ }
func (rabbitmqServer) basePort() int               { return 14672 }
func (rabbitmqServer) packages() []string          { return []string{"rabbitmq-server"} }
func (rabbitmqServer) runAs() string               { return "" }
func (rabbitmqServer) exeNames() []string          { return []string{"beam.smp"} }
func (rabbitmqServer) pidFile(in *instance) string { return filepath.Join(in.dir, "rabbitmq.pid") }
func (rabbitmqServer) logFile(in *instance) string { return filepath.Join(in.dir, "rabbitmq.log") }
func (rabbitmqServer) stopSignal() syscall.Signal  { return syscall.SIGTERM }
func (rabbitmqServer) installed() bool             { return rabbitmqBinary() != "" }

// rabbitmqBinary is the server script itself, not Debian's /usr/sbin
// wrapper (which changes to /var/lib/rabbitmq and to the rabbitmq user).
func rabbitmqBinary() string {
	const p = "/usr/lib/rabbitmq/bin/rabbitmq-server"
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

func rabbitmqURL(in *instance) string {
	return "amqp://guest:guest@" + in.addr() + "/"
}

func (s rabbitmqServer) start(ctx context.Context, in *instance) (int, error) {
	conf := filepath.Join(in.dir, "rabbitmq.conf")
	confText := "listeners.tcp.default = 127.0.0.1:" + strconv.Itoa(in.port) + "\n" +
		"loopback_users.guest = true\n" +
		"log.file.level = warning\n"
	if err := writeShared(conf, []byte(confText)); err != nil {
		return 0, err
	}
	plugins := filepath.Join(in.dir, "enabled_plugins")
	if err := writeShared(plugins, []byte("[].\n")); err != nil {
		return 0, err
	}
	envFile := filepath.Join(in.dir, "rabbitmq-env.conf")
	if err := writeShared(envFile, []byte("# written by allot services: every setting comes from the environment\n")); err != nil {
		return 0, err
	}
	// The node fails on a taken distribution port with an Erlang crash
	// report; name the port instead. (Port base+2 is not checked: the
	// epmd a previous start left there serves this one.)
	if err := portFree(in.port + 1); err != nil {
		return 0, fmt.Errorf("port %d (the node's Erlang distribution port) is taken: %w", in.port+1, err)
	}
	epmd := strconv.Itoa(in.port + 2)
	argv := []string{"/usr/bin/env",
		"HOME=" + in.dir,
		"ERL_EPMD_PORT=" + epmd,
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"RABBITMQ_NODENAME=" + rabbitmqNode,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT=" + strconv.Itoa(in.port),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(in.port+1),
		"RABBITMQ_CONF_ENV_FILE=" + envFile,
		"RABBITMQ_CONFIG_FILE=" + conf,
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + plugins,
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(in.dir, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(in.dir, "log"),
		"RABBITMQ_PID_FILE=" + s.pidFile(in),
		"RABBITMQ_LOGS=" + filepath.Join(in.dir, "log", "node.log"),
		"ERL_FLAGS=-kernel inet_dist_use_interface {127,0,0,1}",
		rabbitmqBinary(),
	}
	return startBackground(ctx, in.user, in.dir, s.logFile(in), argv...)
}

// probe opens an AMQP connection and a channel, as a client would.
func (rabbitmqServer) probe(ctx context.Context, in *instance) (probeResult, error) {
	deadline, ok := ctx.Deadline()
	timeout := probeTimeout
	if ok {
		timeout = max(time.Until(deadline), time.Millisecond)
	}
	conn, err := amqp.DialConfig(rabbitmqURL(in), amqp.Config{Dial: amqp.DefaultDial(timeout)})
	if err != nil {
		return probeResult{}, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return probeResult{}, fmt.Errorf("opening a channel: %w", err)
	}
	ch.Close()
	version, _ := conn.Properties["version"].(string)
	return probeResult{version: "RabbitMQ " + version, durability: store.DurabilityFsync}, nil
}

// fixedDurability: durability is the client's choice per queue and
// message; a persistent message is fsync'd before it is confirmed.
func (rabbitmqServer) fixedDurability() (store.Durability, string) {
	return store.DurabilityFsync, "durability is each queue's and message's, chosen by the client (the bench's --durability, rw's --durable); a persistent message is fsync'd before its confirm"
}

// setDurability is never called (fixedDurability): there is nothing to
// change.
func (rabbitmqServer) setDurability(context.Context, *instance, store.Durability) (bool, error) {
	return false, nil
}
