// Package relay follows allot's change stream (CHANGES over RESP) and
// publishes every event to a RabbitMQ exchange, at least once.
//
// The protocol, step by step:
//
//  1. Read the checkpoint file: the seq of the last event the broker
//     confirmed, the history it belongs to and that event's fingerprint
//     (seq 0 when the file does not exist; see Checkpoint).
//  2. Read up to BatchMax events after it (CHANGES <seq> COUNT n BLOCK ms),
//     and check that they follow it seq by seq (ErrGap stops the relay: a
//     checkpoint past a missing event would skip it for good). After a
//     round or a failure, the read starts one event earlier, without
//     waiting, and the relay checks that allot's event at the checkpoint's
//     seq is the one it confirmed there: a server of another history (one
//     rebuilt, or given another data dir; a node of another shard) has
//     another event at that seq, and is refused (HistoryError).
//  3. Publish each event, persistent and mandatory, to the exchange once
//     per SKU its rows touch (routing key = the SKU; a catalog event's
//     SKU for a catalog.set or catalog.del; "_" for another event that
//     changes no row, such as a confirm), on a channel in confirm mode.
//  4. Wait for the broker's confirm of every message of the batch. Only
//     when all are acked and none came back as routed to no queue, write
//     the batch's last seq to the checkpoint (a temporary file, fsync,
//     rename, fsync of the directory).
//  5. On a nack, a returned message, a lost connection or a confirm
//     timeout, close the connection (waiting at most 5 s for the broker),
//     pause, reconnect and go back to 2 from the checkpoint: the batch is
//     published again.
//
// The pause after a failure (of the broker or of the change stream) is
// RetryPause, doubled with each failure in a row up to RetryPauseMax, half
// of it drawn at random so that relays that failed together do not come
// back in step; a success (a batch confirmed, or a read with nothing new)
// starts it over.
//
// Connecting is bounded: the TCP connect, the AMQP handshake and the
// setup of the channel (its opening, the declarations, the binding,
// confirm mode) each within ConnectTimeout. A broker that takes the
// connection and never answers is logged, naming its address and the
// step, and tried again.
//
// What no retry fixes stops the relay with an error: every node refusing
// the read (a checkpoint older than the journal keeps, or past the newest
// seq, as another server's checkpoint is: waiting for the seqs to get
// there would skip that server's events up to it; a checkpoint of another
// history; a wrong password), a checkpoint file that cannot be read or
// written (it is written back before anything is published), a batch that
// does not follow the checkpoint seq by seq (ErrGap), and the broker
// refusing the exchange or queue (PRECONDITION_FAILED: declared with other
// settings). A refused broker login is retried: the AMQP client cannot
// tell it from a broker that died in the middle of the handshake.
//
// So a crash of the relay (kill -9) or of the broker loses no event: what
// was not confirmed is not checkpointed and is sent again. It may send an
// event twice (published, not yet checkpointed). Every message carries the
// seq (message id and header "seq") and the history the seq belongs to
// (header "allot-history"), and one that this process publishes again
// after a failed round carries the header "resent" (true).
//
// allot-history names a history after the first event relayed under the
// checkpoint, "<seq>-<fingerprint>" (usually "1-…"). A consumer keeps
// what it handled per history: a message of another history starts
// another sequence (a rebuilt server's seq 1 is no repeat of the old seq
// 1). Two relays started from seq 1 of one server name its history alike;
// a relay given a new checkpoint on a server already relayed from a later
// seq names it anew.
//
// A consumer drops a repeat by the seqs it has handled, per SKU (routing
// key), not by the last one: a round that fails part-way (a nack, a
// returned message, a connection lost with some messages taken) is
// published again from its start, so the second copy of seq 12 may arrive
// after seq 15 of the same SKU, taken the first time; dropping every seq
// not above the last one handled would drop seq 12 for good. A repeat is
// never more than BatchMax seqs (allot relay --batch, default 500; the
// largest one used) below the highest seq handled, since every copy of a
// round starts after the same checkpoint: remembering the seqs handled in
// that window is enough. Without failures, the events of one SKU arrive in
// seq order (a batch is published in seq order on one channel); a message
// marked resent may come after later ones. After a restart of the relay
// (kill -9), the batch published again from the checkpoint is neither
// marked nor counted in Stats.Resent: the new process does not know what
// the old one sent.
//
// The broker acks a message that no queue takes, and drops it (an
// exchange keeps nothing). The relay publishes mandatory: such a message
// comes back (basic.return, before its ack), the round fails, and the
// relay logs the seq and SKU and retries without moving its checkpoint
// until a queue takes every routing key. Config.Queue declares a durable
// queue bound to every routing key, again on every reconnect (it comes
// back if deleted), so that nothing is lost before consumers exist;
// queues bound to some SKUs only need such a catch-all beside them.
//
// Under a broker resource alarm (memory, disk) the broker stops reading
// the relay's connection: the relay logs the block, each round fails at
// the confirm timeout, and the relay reconnects until the alarm clears.
// Closing a connection waits at most 5 s for the broker, and the end of
// the relay's context closes it (a publish blocked in its write returns),
// so that the relay stops within about 5 s (SIGTERM) even then.
//
// The relay never writes to allot, and never imports the services package:
// it takes addresses.
package relay
