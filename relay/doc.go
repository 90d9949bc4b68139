// Package relay follows allot's change stream (CHANGES over RESP) and
// publishes every event to a RabbitMQ exchange, at least once.
//
// The protocol, step by step:
//
//  1. Read the checkpoint file: the seq of the last event the broker
//     confirmed (0 when the file does not exist).
//  2. Read up to BatchMax events after it (CHANGES <seq> COUNT n BLOCK ms).
//  3. Publish each event, persistent, to the exchange once per SKU its rows
//     touch (routing key = the SKU; "_" for an event that changes no row,
//     such as a confirm), on a channel in confirm mode.
//  4. Wait for the broker's confirm of every message of the batch. Only
//     when all are acked, write the batch's last seq to the checkpoint
//     (a temporary file, fsync, rename, fsync of the directory).
//  5. On a nack, a lost connection or a confirm timeout, reconnect and go
//     back to 2 from the checkpoint: the batch is published again.
//
// What no retry fixes stops the relay with an error: every node refusing
// the read (a checkpoint older than the journal keeps, or past the newest
// seq, as another server's checkpoint is: waiting for the seqs to get
// there would skip that server's events up to it; a wrong password), a
// checkpoint file that cannot be read or written (it is written back
// before anything is published), and the broker refusing the exchange or
// queue (PRECONDITION_FAILED: declared with other settings). A refused
// broker login is retried: the AMQP client cannot tell it from a broker
// that died in the middle of the handshake.
//
// So a crash of the relay (kill -9) or of the broker loses no event: what
// was not confirmed is not checkpointed and is sent again. It may send an
// event twice (published, not yet checkpointed); every message carries the
// seq (message id and header "seq") so that a consumer drops a repeat:
// per SKU, a message whose seq is not above the last one it handled is a
// repeat, and the events of one SKU arrive in seq order once repeats are
// dropped, because a batch is published in seq order on one channel and
// republished from its start.
//
// Events without a bound queue are dropped by the broker (an exchange
// keeps nothing): Config.Queue declares a durable queue bound to every
// routing key, so that nothing is lost before consumers exist.
//
// The relay never writes to allot, and never imports the services package:
// it takes addresses.
package relay
