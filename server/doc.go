// Package server is allot serve: the engine over RESP (the Redis protocol)
// and HTTP/JSON, exactly as the wire contract in DESIGN.md says.
//
// It is embeddable: New(cfg, engine) binds the listeners, Serve accepts,
// Shutdown stops accepting and lets connections finish what they have read.
// Tests start real servers in-process on 127.0.0.1:0.
//
// The front ends are thin: they parse, validate (server/resp for RESP,
// http_body.go for JSON) and submit to the engine's pipeline. A RESP
// connection submits every command of a pipeline before it waits for the
// first reply, so the engine's writer batches ops from all connections into
// one journal write and one fdatasync. In fsync mode a round of one op (a
// client at depth 1) is answered by the engine's flusher itself, with a
// write that never blocks, right after the fdatasync (resp_direct.go): no
// goroutine wakes per op to write it.
//
// Invariants:
//   - replies go out in command order on each connection;
//   - malformed input never reaches the engine: it is answered -ERR (RESP)
//     or 400 (HTTP) with what was wrong, and state is unchanged;
//   - every resource a client can make the server hold is bounded by a
//     named limit of Config: command size, arguments per command,
//     connections, commands in flight per connection, read buffer, body
//     size;
//   - with a password set, no op is served to a client that has not
//     authenticated (RESP AUTH or HELLO AUTH; HTTP bearer token).
//
// What it must never do: acknowledge an op before the engine does (replies
// are written only after Request.Wait, or from the request's Notify), close the engine (its owner does,
// after Shutdown, so that the journal is durable before exit), or panic on
// input.
package server
