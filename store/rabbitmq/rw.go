package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/store"
)

var _ store.RWStore = (*Store)(nil)

// QueuePrefix starts the name of every queue workload rw declares.
const QueuePrefix = "allot.rw."

// queueExpiry: a queue unused that long (its process died before Close)
// is deleted by the broker.
const queueExpiry = 10 * time.Minute

// queueCounter tells apart the queues of one process.
var queueCounter atomic.Int64

// publishMode is how a publisher learns that the broker has a message.
type publishMode int

const (
	publishConfirm publishMode = iota // publisher confirms
	publishTx                         // tx.select / tx.commit
	publishForget                     // fire-and-forget
)

func (m publishMode) String() string {
	switch m {
	case publishTx:
		return "tx channel (tx.commit per write call)"
	case publishForget:
		return "fire-and-forget (no confirm)"
	}
	return "publisher confirms (each message confirmed)"
}

// space is one queue of its own, declared as the options say.
type space struct {
	s            *Store
	opts         store.RWOptions
	mode         publishMode
	deliveryMode uint8
	queue        string
}

// RWOpen declares a queue of its own (QueuePrefix, the process id and a
// counter), durable or transient: two runs against one broker never share
// messages. Close deletes it; a queue left by a process that died expires
// after queueExpiry unused.
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	sp := &space{s: s, opts: opts, mode: publishConfirm, deliveryMode: amqp.Transient,
		queue: fmt.Sprintf("%s%d.%d", QueuePrefix, os.Getpid(), queueCounter.Add(1))}
	switch {
	case opts.Transactional:
		sp.mode = publishTx
	case !opts.Confirm:
		sp.mode = publishForget
	}
	if opts.Durable {
		sp.deliveryMode = amqp.Persistent
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	defer ch.Close()
	args := amqp.Table{"x-expires": int32(queueExpiry / time.Millisecond)}
	if _, err := ch.QueueDeclare(sp.queue, opts.Durable, false, false, false, args); err != nil {
		return nil, fmt.Errorf("rabbitmq: declaring queue %s: %w", sp.queue, err)
	}
	return sp, nil
}

func (sp *space) Info() store.RWInfo {
	setting := "transient queue, transient messages"
	if sp.opts.Durable {
		setting = "durable queue, persistent messages (fsync'd before confirm or commit)"
	}
	return store.RWInfo{Setting: setting + "; " + sp.mode.String() + "; consume with manual ack, prefetch " + fmt.Sprint(prefetch), Queue: true}
}

// Load publishes recs with publisher confirms, whatever the space's mode:
// a READ run consumes messages the broker is known to hold.
func (sp *space) Load(ctx context.Context, recs []store.RWRecord) error {
	ch, err := sp.s.conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbitmq: %w", err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("rabbitmq: confirm mode: %w", err)
	}
	const window = 1024
	pending := make([]*amqp.DeferredConfirmation, 0, window)
	wait := func() error {
		for _, c := range pending {
			ok, err := c.WaitContext(ctx)
			if err != nil {
				return fmt.Errorf("rabbitmq: load: %w", err)
			}
			if !ok {
				return fmt.Errorf("rabbitmq: load: the broker refused (nack) message %d", c.DeliveryTag)
			}
		}
		pending = pending[:0]
		return nil
	}
	for _, r := range recs {
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", sp.queue, true, false, sp.message(r))
		if err != nil {
			return fmt.Errorf("rabbitmq: load: %w", err)
		}
		if pending = append(pending, c); len(pending) == window {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return wait()
}

func (sp *space) message(r store.RWRecord) amqp.Publishing {
	return amqp.Publishing{MessageId: r.Key, DeliveryMode: sp.deliveryMode, ContentType: "text/plain", Body: body(r.Value)}
}

// Records drains the queue: every message left, consumed with auto-ack.
func (sp *space) Records(ctx context.Context) ([]store.RWRecord, error) {
	ch, err := sp.s.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	defer ch.Close()
	if err := ch.Qos(1000, 0, false); err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	deliveries, err := ch.ConsumeWithContext(ctx, sp.queue, "allot-drain", true, false, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: draining %s: %w", sp.queue, err)
	}
	var out []store.RWRecord
	for {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return nil, errors.New("rabbitmq: the drain consumer was closed")
			}
			r, err := record(&d)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
			continue
		case <-time.After(drainWait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		q, err := ch.QueueDeclarePassive(sp.queue, sp.opts.Durable, false, false, false, amqp.Table{"x-expires": int32(queueExpiry / time.Millisecond)})
		if err != nil {
			return nil, fmt.Errorf("rabbitmq: inspecting %s: %w", sp.queue, err)
		}
		if q.Messages == 0 {
			return out, nil
		}
	}
}

// Close deletes the queue.
func (sp *space) Close() error {
	ch, err := sp.s.conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbitmq: %w", err)
	}
	defer ch.Close()
	if _, err := ch.QueueDelete(sp.queue, false, false, false); err != nil {
		return fmt.Errorf("rabbitmq: deleting queue %s: %w", sp.queue, err)
	}
	return nil
}

// session has a connection of its own (as a client thread of the seed
// bench did): one channel to publish on, set up for the space's mode, and
// one to consume from, opened at the first Read.
type session struct {
	sp         *space
	conn       *amqp.Connection
	pub        *amqp.Channel
	sub        *amqp.Channel
	deliveries <-chan amqp.Delivery
	confirms   []*amqp.DeferredConfirmation
}

func (sp *space) Session(ctx context.Context) (store.RWSession, error) {
	conn, err := sp.s.dial()
	if err != nil {
		return nil, err
	}
	se := &session{sp: sp, conn: conn}
	if se.pub, err = conn.Channel(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	switch sp.mode {
	case publishTx:
		err = se.pub.Tx()
	case publishConfirm:
		err = se.pub.Confirm(false)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("rabbitmq: setting up the publish channel: %w", err)
	}
	return se, nil
}

// Write publishes recs: in one transaction, each confirmed, or sent.
func (se *session) Write(ctx context.Context, recs []store.RWRecord) error {
	se.confirms = se.confirms[:0]
	for _, r := range recs {
		if se.sp.mode == publishConfirm {
			c, err := se.pub.PublishWithDeferredConfirmWithContext(ctx, "", se.sp.queue, true, false, se.sp.message(r))
			if err != nil {
				return fmt.Errorf("rabbitmq: publish: %w", err)
			}
			se.confirms = append(se.confirms, c)
			continue
		}
		if err := se.pub.PublishWithContext(ctx, "", se.sp.queue, true, false, se.sp.message(r)); err != nil {
			return fmt.Errorf("rabbitmq: publish: %w", err)
		}
	}
	switch se.sp.mode {
	case publishTx:
		if err := se.pub.TxCommit(); err != nil {
			return fmt.Errorf("rabbitmq: tx.commit: %w", err)
		}
	case publishConfirm:
		for _, c := range se.confirms {
			ok, err := c.WaitContext(ctx)
			if err != nil {
				return fmt.Errorf("rabbitmq: waiting for a confirm: %w", err)
			}
			if !ok {
				return fmt.Errorf("rabbitmq: the broker refused (nack) message %d", c.DeliveryTag)
			}
		}
	}
	return nil
}

// Read consumes the next message and acks it; key is ignored (a queue
// hands out whichever message comes next). No message within readWait is
// found=false.
func (se *session) Read(ctx context.Context, _ string) (int64, bool, error) {
	if se.sub == nil {
		ch, err := se.conn.Channel()
		if err != nil {
			return 0, false, fmt.Errorf("rabbitmq: %w", err)
		}
		if err := ch.Qos(prefetch, 0, false); err != nil {
			ch.Close()
			return 0, false, fmt.Errorf("rabbitmq: qos: %w", err)
		}
		d, err := ch.ConsumeWithContext(context.WithoutCancel(ctx), se.sp.queue, "", false, false, false, false, nil)
		if err != nil {
			ch.Close()
			return 0, false, fmt.Errorf("rabbitmq: consume: %w", err)
		}
		se.sub, se.deliveries = ch, d
	}
	select {
	case d, ok := <-se.deliveries:
		if !ok {
			return 0, false, errors.New("rabbitmq: the consumer was closed by the broker")
		}
		r, err := record(&d)
		if err != nil {
			d.Nack(false, false)
			return 0, false, err
		}
		if err := d.Ack(false); err != nil {
			return 0, false, fmt.Errorf("rabbitmq: ack: %w", err)
		}
		return r.Value, true, nil
	case <-time.After(readWait):
		return 0, false, nil
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
}

// Modify refuses: a queue has no record to modify.
func (se *session) Modify(context.Context, []string, int64, store.RWModify) (int, error) {
	return 0, fmt.Errorf("%w: a queue has no record to modify", store.ErrRWUnsupported)
}

// Close closes the channels (the broker requeues what was delivered but
// not acked) and the connection.
func (se *session) Close() error {
	if se.conn == nil {
		return nil
	}
	err := se.conn.Close()
	se.conn = nil
	if errors.Is(err, amqp.ErrClosed) {
		return nil
	}
	return err
}
