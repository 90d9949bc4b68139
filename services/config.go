package services

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"allot/store"
)

// Connection constants of the servers Up starts with the default Config
// (defined in store, which the adapters share with this package; see
// store.PostgresDSN).
const (
	PostgresDSN       = store.PostgresDSN
	MariaDBDSN        = store.MariaDBDSN
	RedisAddr         = store.RedisAddr
	TarantoolAddr     = store.TarantoolAddr
	TarantoolUser     = store.TarantoolUser
	TarantoolPassword = store.TarantoolPassword
)

// Names of the servers, as Up, Down and Status take them.
const (
	Postgres  = store.ServerPostgres
	MariaDB   = store.ServerMariaDB
	Redis     = store.ServerRedis
	Tarantool = store.ServerTarantool
)

// Names lists every server this package knows, in the order Up starts them.
func Names() []string { return []string{Postgres, MariaDB, Redis, Tarantool, RabbitMQ, DTM} }

// Config says where the servers live and how durable they are.
type Config struct {
	// Dir holds one folder per server (data, socket, log, pid file) and the
	// lock files. Default: <module root>/.allot/services, the module root
	// being the first folder holding go.mod above the working directory.
	Dir string
	// Durability is the mode to run in (see DESIGN.md's table). Empty
	// leaves a running server as it is and starts a new one in fsync mode.
	Durability store.Durability
	// Timeout bounds the wait for one server to answer after a start, and
	// to exit after a stop (default 2 minutes: a first MariaDB start on a
	// busy two-core machine takes a while).
	Timeout time.Duration
	// Log receives one line per action taken (installing, starting,
	// stopping); nil discards them.
	Log io.Writer

	// portOffset moves every port, so that tests can run private servers
	// beside the shared ones. Zero in every real use.
	portOffset int
}

// Validate fills defaults and checks the fields.
func (c *Config) Validate() error {
	if c.Dir == "" {
		root, err := ModuleRoot()
		if err != nil {
			return fmt.Errorf("services: no directory given and %w", err)
		}
		c.Dir = filepath.Join(root, ".allot", "services")
	}
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return fmt.Errorf("services: directory %q: %w", c.Dir, err)
	}
	c.Dir = abs
	if c.Durability != "" {
		if _, err := store.ParseDurability(string(c.Durability)); err != nil {
			return fmt.Errorf("services: %w", err)
		}
	}
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.Timeout < 0 {
		return fmt.Errorf("services: timeout must be positive, got %v", c.Timeout)
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// startDurability is the mode a server is started in.
func (c *Config) startDurability() store.Durability {
	if c.Durability == "" {
		return store.DurabilityFsync
	}
	return c.Durability
}

// ModuleRoot walks up from the working directory to the first folder that
// holds a go.mod file.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("cannot read the working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("looking for go.mod: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found in the working directory or above it (run inside the allot checkout, or pass a directory)")
		}
		dir = parent
	}
}
