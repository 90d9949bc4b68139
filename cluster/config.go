package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"allot/engine"
	"allot/server"
)

// Config configures a node. Engine and Server are as for a single node;
// the node sets Engine.Replicated itself.
type Config struct {
	// URLs are the NATS servers, comma-separated (nats://host:port,...).
	URLs string
	// Shard names the shard this node serves (default "main").
	Shard string
	// NodeID names this node in the lease and in the log (default
	// <hostname>-<pid>).
	NodeID string
	// Advertise is the RESP address a standby names when it redirects a
	// mutation here (default: the RESP listen address).
	Advertise string
	// AdvertiseHTTP is the same for HTTP (default: the HTTP listen
	// address).
	AdvertiseHTTP string
	// LeaseTTL is how long a primary's lease lives without renewal
	// (default 3s); it renews every LeaseTTL/4, and a standby takes over
	// once it lapses.
	LeaseTTL time.Duration
	// SnapshotPoll is how often a primary looks for a newer engine
	// snapshot to store (default 2s).
	SnapshotPoll time.Duration
	// Fault breaks the replication on purpose, for the tests that prove
	// the failover tests can fail: FaultNoExpectedSequence,
	// FaultAckBeforeAppend, FaultSlowFollow, FaultSlowPing. Empty in any
	// real use.
	Fault string

	Engine engine.Config
	Server server.Config
	// Logger receives role changes and failures (default: none).
	Logger *slog.Logger
}

// leaseTTLDefault is a node's lease TTL when none is given (--lease-ttl).
const leaseTTLDefault = 3 * time.Second

// Deliberate faults (Config.Fault).
const (
	// FaultNoExpectedSequence appends without the expected last sequence,
	// and the primary ignores a lost lease: it learns of a deposition only
	// from the log, which no longer tells it.
	FaultNoExpectedSequence = "no-expected-sequence"
	// FaultAckBeforeAppend acknowledges a frame before its append: a
	// goroutine appends the frames behind the replies.
	FaultAckBeforeAppend = "ack-before-append"
	// FaultSlowFollow makes a standby follow the log through its consumer
	// alone, with the client library's defaults: it does not read on by
	// itself when the consumer has been quiet (node.go, follow).
	FaultSlowFollow = "slow-follow"
	// FaultSlowPing connects to NATS with the client library's default
	// ping (every 2 minutes, two unanswered) instead of pingInterval: a
	// node notices a NATS server that hangs only minutes later.
	FaultSlowPing = "slow-ping"
)

// Validate fills defaults and checks the fields.
func (c *Config) Validate() error {
	if err := checkURLs(c.URLs); err != nil {
		return err
	}
	if c.Shard == "" {
		c.Shard = "main"
	}
	if _, err := namesOf(c.Shard); err != nil {
		return err
	}
	if c.NodeID == "" {
		host, _ := os.Hostname()
		c.NodeID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if strings.IndexFunc(c.NodeID, unicode.IsControl) >= 0 {
		return fmt.Errorf("cluster: node ID %q has a control character (it travels in the log's message headers)", c.NodeID)
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = leaseTTLDefault
	}
	if c.LeaseTTL < 500*time.Millisecond {
		return fmt.Errorf("cluster: lease TTL %v is below 500ms", c.LeaseTTL)
	}
	if c.SnapshotPoll == 0 {
		c.SnapshotPoll = 2 * time.Second
	}
	switch c.Fault {
	case "", FaultNoExpectedSequence, FaultAckBeforeAppend, FaultSlowFollow, FaultSlowPing:
	default:
		return fmt.Errorf("cluster: unknown fault %q", c.Fault)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Engine.Replicated = true
	if err := c.Engine.Validate(); err != nil {
		return err
	}
	return c.Server.Validate()
}

// checkURLs checks a comma-separated list of NATS URLs as the NATS client
// reads it (a URL without a scheme is nats://; without a port, 4222). The
// client skips empty entries and, given none, connects to its default
// (nats://127.0.0.1:4222), whatever runs there: a list with no URL, or an
// empty entry (a typo, a variable left unset), is refused here.
func checkURLs(list string) error {
	if strings.Trim(list, " ,") == "" {
		return errors.New("cluster: no NATS URL given")
	}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return fmt.Errorf("cluster: an empty URL in the NATS URLs %q", list)
		}
		raw := s
		if !strings.Contains(raw, "://") {
			raw = "nats://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("cluster: NATS URL %q: %w", s, err)
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("cluster: NATS URL %q: scheme %q (want nats, tls, ws or wss)", s, u.Scheme)
		}
		if u.Hostname() == "" {
			return fmt.Errorf("cluster: NATS URL %q names no host", s)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("cluster: NATS URL %q: port %q", s, p)
			}
		}
	}
	return nil
}

// ConfigError is Run's error for a configuration it refuses before it
// touches NATS or the data directory.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }
