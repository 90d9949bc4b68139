// Package client is the Go client for allot serve's RESP wire protocol: a
// pool of connections, each able to pipeline many ops in one round trip,
// with typed results.
//
// Results are inventory.Result values, the same type the engine returns:
// CodeOK with Lines (capture), Count (release, available, get) and Price
// (get); CodeInsufficient with Available; CodeNotFound; CodeInvalid with the
// server's Detail (the server sends -ERR for an overflowing release too, so
// the client reports it as CodeInvalid with that detail). Go errors mean the
// op's fate is unknown: the connection failed, the context ended, the
// server refused the client (NOAUTH, WRONGPASS) or answered something that
// is not in the contract; the connection is then discarded, never reused.
//
// A connection that sat in the pool for a millisecond or more is checked
// before it carries a request (a non-blocking peek at its socket): one the
// server closed meanwhile (it restarted, or a node of a cluster began a new
// term) is dropped and the next taken or a new one dialled, so that a
// request is not sent into it and come back with an unknown outcome
// although the server never read it.
//
// Concurrency: a Client is safe for concurrent use; a Conn belongs to one
// goroutine until Close gives it back to the pool.
//
// What it must never do: reuse a connection whose reply stream may be out of
// step (after any error mid-reply), or hold more than Config.PoolSize
// connections open.
package client
