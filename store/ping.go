package store

import "context"

// Pinger is an optional Session capability: one round trip to the server
// that does no work (Redis and allot PING, Tarantool's IPROTO ping). The
// bench times it, with the same client and as many sessions as the run
// uses, to print the closed-loop bound a durable run is read against:
// ops in flight / (fdatasync + round trip).
type Pinger interface {
	// Ping makes one round trip. An error means the server did not answer
	// as expected.
	Ping(ctx context.Context) error
}

// DataDirer is an optional Store capability: the directory the store's
// server keeps its journal (write-ahead log) in, on the file system whose
// fdatasync latency bounds durable runs. Empty when unknown.
type DataDirer interface {
	DataDir() string
}
