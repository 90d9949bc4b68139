// Package rabbitmq is the bench store "rabbitmq": a RabbitMQ node (the one
// `allot services up rabbitmq` starts, or --addr) driven with
// github.com/rabbitmq/amqp091-go, for workload "rw" only — a queue holds
// messages, not inventory rows, so workload "ims" is refused.
//
// Workload rw on a queue (store.RWInfo.Queue):
//   - WRITE publishes one message per record (message id = key, body =
//     value) to one queue; how the publisher learns it arrived is the
//     choice the seed bench compared: --transactional is a tx channel
//     (tx.select, the messages, tx.commit), otherwise publisher confirms
//     (each message confirmed by the broker) or, with --confirm=false,
//     fire-and-forget; messages go with mandatory set, and with confirms
//     or a transaction one the broker returns (it reached no queue) fails
//     the call, although the broker confirms or commits it all the same
//     (fire-and-forget learns nothing, returns included);
//   - READ consumes the next message with a manual ack (basic.consume
//     with a prefetch window, one ack per message);
//   - --durable makes the queue durable and the messages persistent (the
//     broker fsyncs them before it confirms); without it both are
//     transient.
//
// The checker counts published, confirmed and consumed messages: after
// the run the queue is drained, and every confirmed message must have
// been consumed once or still be there.
package rabbitmq
