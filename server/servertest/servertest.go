package servertest

import (
	"context"
	"os"
	"testing"
	"time"

	"allot/engine"
	"allot/server"
	"allot/vfs"
)

// Server is a running server and its engine.
type Server struct {
	*server.Server
	Engine *engine.Engine
	Dir    string
	stop   func()
}

// Options adjust a test server. The zero value serves both protocols in
// write durability (fast, and crash-safe for a test's process).
type Options struct {
	Config     server.Config // RESPAddr/HTTPAddr default to 127.0.0.1:0
	Durability engine.Durability
	Dir        string // default: a fresh t.TempDir()
	NoHTTP     bool
	NoRESP     bool
	// Clock is the engine's clock (default: the system's); golden tests
	// fix it so that hold deadlines are the same on every run.
	Clock engine.Clock
	// FS is the engine's file system (default: the real one); a test of
	// journal failures passes a vfs.Faulty and sets JournalMayFail, so
	// that the engine's Close reporting the failure is not an error.
	FS             vfs.FS
	JournalMayFail bool
	// Replicated opens the engine as a replicated shard's node: a standby
	// until promoted (engine.Config.Replicated).
	Replicated bool
}

// Start starts a server; t.Cleanup shuts it down and closes the engine.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Durability == "" {
		o.Durability = engine.DurabilityWrite
	}
	e, err := engine.Open(engine.Config{Dir: o.Dir, Durability: o.Durability, Clock: o.Clock, FS: o.FS, Replicated: o.Replicated})
	if err != nil {
		t.Fatalf("servertest: open engine: %v", err)
	}
	cfg := o.Config
	if cfg.RESPIO == "" {
		// The test suite runs the server packages a second time with
		// ALLOT_RESP_IO=goroutine (scripts/test), as allot serve reads it.
		cfg.RESPIO = os.Getenv("ALLOT_RESP_IO")
	}
	if cfg.RESPAddr == "" && !o.NoRESP {
		cfg.RESPAddr = "127.0.0.1:0"
	}
	if cfg.HTTPAddr == "" && !o.NoHTTP {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	srv, err := server.New(cfg, e)
	if err != nil {
		e.Close()
		t.Fatalf("servertest: new server: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	s := &Server{Server: srv, Engine: e, Dir: o.Dir}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("servertest: shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("servertest: serve: %v", err)
		}
		if err := e.Close(); err != nil && !o.JournalMayFail {
			t.Errorf("servertest: close engine: %v", err)
		}
	}
	s.stop = stop
	t.Cleanup(stop)
	return s
}

// Stop shuts the server down and closes the engine now (Cleanup then does
// nothing).
func (s *Server) Stop() { s.stop() }

// FixedClock is a clock that always says the same time.
type FixedClock struct{ At time.Time }

// Now returns c.At.
func (c FixedClock) Now() time.Time { return c.At }
