// Package cluster runs an allot node as the primary or a standby of one
// shard, over NATS JetStream (`allot serve --cluster`).
//
// Per shard, JetStream holds (names in names.go):
//
//   - the log: a stream (R3, file storage) of the primary's journal
//     frames, one message per frame, the bytes journal.Seal made, with the
//     frame's first and last LSN in headers; and fence messages, which a
//     new primary appends before it takes its first request;
//   - the lease: a key-value bucket whose one key names the primary; the
//     bucket's TTL is the lease's, the primary renews it by compare-and-set
//     on its revision well within the TTL, and a standby that finds it
//     gone creates it;
//   - snapshots: an object store holding the primary's newest engine
//     snapshot; the log is trimmed behind it.
//
// The invariants:
//
//   - Only the log decides what is committed. A primary appends each frame
//     with the stream's expected last sequence (the sequence of the last
//     message it appended or read); it acknowledges a frame's requests only
//     after JetStream acknowledged the append and the local journal wrote
//     (and, in fsync mode, synced) it (engine.Replicator).
//   - A primary takes requests only after its fence is in the log: the
//     fence is appended with the expected last sequence of everything the
//     new primary applied, so an older primary's next append fails on the
//     sequence check and it acknowledges nothing more. It then steps down:
//     it closes its engine (which refuses everything from the failed
//     append on), reopens it from its own journal and follows the log as a
//     standby.
//   - A standby applies the log's frames in order through the engine's
//     replay (engine.ApplyFrame), journals them, serves reads, and answers
//     a mutation with "UNAVAILABLE not primary, primary at <addr>".
//   - A node's local journal is always a prefix of the log (the log is
//     written first), so it restarts from its own journal and reads the
//     log from there on; one whose journal ends before the log's trimmed
//     start first installs the stored snapshot.
//
// Leadership is a lease. The safety of writes never depends on clocks,
// only on the log's sequence check. What a primary answers without a
// frame (a read, an idempotent repeat, an op that changes nothing) is
// answered from its state alone, and is fresh only while no other node
// can have taken over: a primary serves until a TTL (less a margin) after
// it sent its last renewal that succeeded, then refuses everything and
// steps down (node.go, leaseKeeper; engine.SetLeaseUntil), the standard
// leader-lease read rule. This assumes the clocks of the nodes and of
// NATS run at about the same rate; the margin is what they may differ.
//
// Every node of a shard has the same retention window (the stream's
// metadata records it; a node given another is refused at start): the
// primary's window decides which repeats are answered, and a promoted
// standby must answer the same ones.
//
// Several shards: a shard map (shardmap.go, fixed when the cluster is
// made) hashes each group to a shard, a node refuses a shard the map
// does not name, and a node refuses, as invalid, every op that names a
// group of another shard (ShardMap.opCheck, run by the engine on each op
// submitted: engine.Config.CheckOp). The catalog lives on the map's first
// shard (ShardMap.CatalogShard), and a node of another shard refuses its
// ops the same way; one whose state holds records set there by an earlier
// release warns, and serves its stock (catalog_stranded.go). Router
// (router.go) is the client side: it routes each op by group to its
// shard's primary (the lease names it), the catalog's ops to the catalog
// shard's primary (router_catalog.go; a search's available counts the
// units on that shard only), and runs a hold or an order whose
// lines span shards as two-phase holds with the decision recorded first
// (orders.go); Recover, called or run in the background
// (RouterConfig.RecoverEvery), finishes what a coordinator that died
// left. Each Router records under a coordinator name of its own
// (RouterConfig.Coordinator).
package cluster
