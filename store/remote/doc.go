// Package remote is the bench store "allot": allot serve driven over RESP
// with allot's Go client, measured exactly as the peer servers are.
//
// Open connects to store.Config.Addr when it is set. Otherwise it starts its
// own allot serve as a child process (the running executable when it is
// allot, else $ALLOT_BIN or allot on $PATH; tests pass Options.Binary) on a
// free loopback port, with a temporary data directory (or
// store.Config.DataDir) and store.Config.Durability, and stops it on Close
// with SIGTERM, so that the server makes its journal durable and exits 0.
//
// Sessions hold one connection each. A session also implements store.Pipeliner:
// with store.Config.Pipeline N > 1 the bench hands it N ops per round trip,
// which the server submits to the engine together.
//
// Invariants: the server's durability is the one the bench asked for (Open
// checks HELLO's answer and refuses a mismatch rather than mislabel a
// result); Load replaces the rows of the previous Load, leaves every group
// it loads holding exactly its rows' units (rows an earlier run left in
// those groups are emptied), and Rows reads back exactly the rows of the
// last Load.
//
// What it must never do: leave a child server running after Close or after
// the bench process dies (the child gets SIGTERM when its parent thread
// exits), or pass an error off as a business outcome.
package remote
