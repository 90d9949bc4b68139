package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"allot/server/resp"
)

// Default addresses: loopback, the ports of the wire contract.
const (
	DefaultRESPAddr = "127.0.0.1:7379"
	DefaultHTTPAddr = "127.0.0.1:7380"
)

// Config configures a server. Every limit is named here, has a default
// (used when the field is zero) and a flag of allot serve.
type Config struct {
	// RESPAddr is where the RESP listener binds; "" disables it.
	RESPAddr string
	// HTTPAddr is where the HTTP listener binds; "" disables it.
	HTTPAddr string
	// Password, when set, is required: RESP AUTH (or HELLO ... AUTH) and
	// an HTTP "Authorization: Bearer <password>" header.
	Password string
	// Insecure allows binding a non-loopback address without a password.
	Insecure bool

	// RequestBytesMax bounds one RESP command (its whole frame) and one
	// HTTP request body (default 64 KiB: a contract command is under 400
	// bytes).
	RequestBytesMax int
	// ArgsMax bounds the arguments of one RESP command, its name included
	// (default 512: room for a HOLD or an ORDER with ID of 64 lines, 259
	// arguments, so that a 65-line one gets the domain's error; at least
	// resp.ArgsMaxFloor, 9).
	ArgsMax int
	// ConnectionsMax bounds open RESP connections; one more is answered
	// "-ERR max number of clients reached" and closed (default 9,000). It
	// bounds open HTTP connections too: one more is answered 503
	// unavailable naming the limit and closed. Each connection is a file
	// descriptor: allot serve refuses to start when the file limit
	// (RLIMIT_NOFILE) is below one per connection of each protocol plus a
	// reserve for the journal, snapshots and change-stream followers
	// (FilesNeeded); the default fits a limit of 20,000.
	ConnectionsMax int
	// AuthTimeout bounds how long a RESP connection may stay
	// unauthenticated when Password is set (default 10s): past it the
	// connection gets -ERR naming the timeout and is closed, so that
	// clients that never authenticate cannot hold the connection slots,
	// whether a goroutine or the event loop serves them.
	AuthTimeout time.Duration
	// PipelineDepthMax bounds the commands of one connection in flight in
	// the engine at once (default 1,024). A longer pipeline is not refused:
	// it is served in rounds of this many, so one connection cannot hold
	// more than this many engine requests or replies in memory.
	PipelineDepthMax int
	// ReadBufferBytesMax bounds a connection's read buffer, which starts at
	// 4 KiB and doubles while reads fill it (default 64 KiB; never below
	// RequestBytesMax plus a header).
	ReadBufferBytesMax int
	// ChangeStreamsMax bounds the change-stream readers served at once:
	// RESP CHANGES reads (past their BLOCK wait, which holds nothing) and
	// SSE streams (GET /v1/changes) while they read events or are behind
	// the newest one (a stream that caught up and waits for the next
	// event holds nothing, sseSlot). A reader behind the feed's recent
	// events reads through a follower, a copy of the inventory rebuilt
	// from the journal; readers that follow live share the recent events
	// (package changes, Feed) (default 16). A new SSE stream behind the
	// newest event that finds no slot within sseSlotWaitFirst is refused
	// with 503 unavailable; one more CHANGES waits up to
	// changesSlotWaitMax for a reader to finish, then gets -UNAVAILABLE.
	ChangeStreamsMax int

	// RESPIO is how RESP connections are served: RESPIOLoop, one event
	// loop (epoll) for all of them, a round that must wait going to a
	// goroutine of its own; or RESPIOGoroutine, a goroutine per
	// connection. Default: the loop where there is one (Linux).
	RESPIO string

	// Version is reported by HELLO and /healthz.
	Version string
	// Logger receives connection and request failures (default: none).
	Logger *slog.Logger
}

// RESPIO values.
const (
	RESPIOLoop      = "loop"
	RESPIOGoroutine = "goroutine"
)

const (
	requestBytesMaxDefault    = 64 << 10
	argsMaxDefault            = 512
	connectionsMaxDefault     = 9000
	authTimeoutDefault        = 10 * time.Second
	pipelineDepthMaxDefault   = 1024
	readBufferBytesMaxDefault = 64 << 10
	changeStreamsMaxDefault   = 16
	readBufferBytesMin        = 4 << 10
	// replyBufferBytesKeepMax bounds the reply buffers a RESP connection
	// keeps between rounds: room for a full pipeline of the contract's
	// replies (1,024 of a few hundred bytes), so that the steady path
	// allocates nothing; a larger round's buffers are let go.
	replyBufferBytesKeepMax = 256 << 10
	// internEntriesMax bounds each connection's table of id strings.
	internEntriesMax = 4096
	// rejectWriteTimeout bounds the write of the "max number of clients"
	// reply, so that the accept loop never waits on a slow peer.
	rejectWriteTimeout = time.Second
)

// Validate fills defaults and checks the fields. It refuses a non-loopback
// address without a password unless Insecure is set.
func (c *Config) Validate() error {
	if c.RESPAddr == "" && c.HTTPAddr == "" {
		return errors.New("server: neither a RESP nor an HTTP address is set")
	}
	def := func(v *int, d int, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 1 {
			return fmt.Errorf("server: %s must be positive, got %d", name, *v)
		}
		return nil
	}
	if err := def(&c.RequestBytesMax, requestBytesMaxDefault, "request bytes max"); err != nil {
		return err
	}
	if err := def(&c.ArgsMax, argsMaxDefault, "args max"); err != nil {
		return err
	}
	if err := def(&c.ConnectionsMax, connectionsMaxDefault, "connections max"); err != nil {
		return err
	}
	if err := def(&c.PipelineDepthMax, pipelineDepthMaxDefault, "pipeline depth max"); err != nil {
		return err
	}
	if err := def(&c.ReadBufferBytesMax, readBufferBytesMaxDefault, "read buffer bytes max"); err != nil {
		return err
	}
	if err := def(&c.ChangeStreamsMax, changeStreamsMaxDefault, "change streams max"); err != nil {
		return err
	}
	if c.AuthTimeout == 0 {
		c.AuthTimeout = authTimeoutDefault
	}
	if c.AuthTimeout < 0 {
		return fmt.Errorf("server: auth timeout must be positive, got %v", c.AuthTimeout)
	}
	if err := c.limits().Validate(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if c.ReadBufferBytesMax < readBufferBytesMin {
		c.ReadBufferBytesMax = readBufferBytesMin
	}
	switch c.RESPIO {
	case "":
		c.RESPIO = RESPIOGoroutine
		if loopAvailable {
			c.RESPIO = RESPIOLoop
		}
	case RESPIOGoroutine:
	case RESPIOLoop:
		if !loopAvailable {
			return errors.New("server: RESP I/O \"loop\" runs on Linux only (epoll): use \"goroutine\"")
		}
	default:
		return fmt.Errorf("server: RESP I/O %q: want %q or %q", c.RESPIO, RESPIOLoop, RESPIOGoroutine)
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if strings.ContainsAny(c.Password, "\r\n") {
		return errors.New("server: the password must not contain CR or LF")
	}
	for _, a := range []struct{ name, addr string }{{"RESP", c.RESPAddr}, {"HTTP", c.HTTPAddr}} {
		if a.addr == "" {
			continue
		}
		loopback, err := isLoopback(a.addr)
		if err != nil {
			return fmt.Errorf("server: %s address %q: %w", a.name, a.addr, err)
		}
		if !loopback && c.Password == "" && !c.Insecure {
			return fmt.Errorf("server: %s address %s is not loopback: set a password (--requirepass) or allow it without one (--insecure)", a.name, a.addr)
		}
	}
	return nil
}

// FilesReserve is what FilesNeeded adds to the connections: descriptors
// for the journal's segments and snapshots (one being written while the
// journal goes on), the change-stream followers (ChangeStreamsMax
// readers, each with a journal segment or a snapshot open), the
// listeners, the event loop's epoll set, a cluster node's connections,
// pprof and standard streams.
const FilesReserve = 256

// FilesNeeded is how many file descriptors a server with this validated
// configuration may hold at its limits: ConnectionsMax for each protocol
// it serves, and FilesReserve. Past the process's file limit an accept
// fails with "too many open files", and so would a snapshot or a journal
// segment rotation, which stops the engine.
func (c *Config) FilesNeeded() uint64 {
	n := uint64(FilesReserve)
	for _, addr := range []string{c.RESPAddr, c.HTTPAddr} {
		if addr != "" {
			n += uint64(c.ConnectionsMax)
		}
	}
	return n
}

func (c *Config) limits() resp.Limits {
	return resp.Limits{CommandBytesMax: c.RequestBytesMax, ArgsMax: c.ArgsMax}
}

// isLoopback reports whether addr (host:port) binds loopback only. An empty
// host binds every interface; a name other than localhost is not trusted to
// resolve to loopback.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
