// Package client is the Go client for allot serve's RESP wire protocol: a
// pool of connections, each able to pipeline many ops in one round trip,
// with typed results.
//
// Results are inventory.Result values, the same type the engine returns:
// CodeOK with Lines (capture), Count (release, available, get) and Price
// (get); CodeInsufficient with Available; CodeNotFound; CodeInvalid with the
// server's Detail (the server sends -ERR for an overflowing release too, so
// the client reports it as CodeInvalid with that detail).
//
// Go errors carry the outcome classes of DESIGN.md ("Outcome classes"),
// matched with errors.Is: ErrUnavailable (the server refused the request:
// nothing applied), ErrOutcomeUnknown (it may have been applied), and,
// for requests that never left the client, ErrNotSent (the caller's
// context ended first, the Batcher was closed, or the write failed before
// any byte left; a context's error, when one ended it, is wrapped too),
// ErrConnect and
// ErrClosed. An error of none of them (the connection failed, the
// context ended mid-request, the server answered something outside the
// contract) leaves the outcome unknown; a *ServerError of no class
// (NOAUTH, an -ERR to a non-op command) applied nothing. MaybeApplied
// sums this up for a mutation. A connection that failed mid-request is
// discarded, never reused.
//
// Retries and redirects: only Client.Do, and the Client methods built on
// it (Capture, Release, Stock, Get, Available, Hold, Confirm, Cancel,
// HoldGet, Order), retry and follow redirects. They retry a refusal, and
// an unknown outcome when repeating the op cannot apply it twice (an
// idempotency key, a hold id, or a read: get, available, hold-get,
// search), up to RetriesMax times; they send a mutation a standby refused
// ("not primary, primary at ADDR") to ADDR. Everything else makes one
// attempt on one server and returns its error: Client.Pipeline, Ping,
// Hello, Search, Changes and the Catalog methods, every Conn method, and
// the Batcher (Client.Do with inventory.Search is the retried search).
// Their callers retry, with PrimaryOf, PrimaryNamed and NextPrimary to
// say where.
//
// A connection that sat in the pool for a millisecond or more is checked
// before it carries a request (a non-blocking peek at its socket): one the
// server closed meanwhile (it restarted, or a node of a cluster began a new
// term) is dropped and the next taken or a new one dialled, so that a
// request is not sent into it and come back with an unknown outcome
// although the server never read it. A Batcher checks its connection the
// same way when no pipeline was on it for as long.
//
// Concurrency: a Client is safe for concurrent use; a Conn belongs to one
// goroutine until Close gives it back to the pool.
//
// What it must never do: reuse a connection whose reply stream may be out of
// step (after any error mid-reply), or hold more than Config.PoolSize
// connections open.
package client
