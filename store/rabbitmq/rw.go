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
// is deleted by the broker. A variable for tests.
var queueExpiry = 10 * time.Minute

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

// returnsBuffer is how many returned messages a publish channel holds
// before the connection's reader waits for the watcher to take them.
const returnsBuffer = 64

// returned counts the messages the broker hands back unroutable
// (basic.return) on a channel that publishes with mandatory set: messages
// that reached no queue (the queue is gone). The broker confirms such a
// message (and commits it in a transaction) all the same, so a publish
// that waits for its confirm or commit is not done until it has asked
// take. The connection's reader hands a message's basic.return over
// before its confirm or its transaction's commit-ok, so take, asked after
// those, counts every return they cover.
type returned struct {
	in   chan amqp.Return
	ask  chan chan int
	done chan struct{}
	left int // counted when in closed, read after done
}

// watchReturns starts counting the returns of ch, until ch closes.
func watchReturns(ch *amqp.Channel) *returned {
	r := &returned{in: ch.NotifyReturn(make(chan amqp.Return, returnsBuffer)), ask: make(chan chan int), done: make(chan struct{})}
	go r.loop()
	return r
}

func (r *returned) loop() {
	defer close(r.done)
	n := 0
	for {
		select {
		case _, ok := <-r.in:
			if !ok {
				r.left = n
				return
			}
			n++
		case reply := <-r.ask:
			for more := true; more; {
				select {
				case _, ok := <-r.in:
					if !ok {
						reply <- n
						return
					}
					n++
				default:
					more = false
				}
			}
			reply <- n
			n = 0
		}
	}
}

// take returns how many messages came back since the last take.
func (r *returned) take() int {
	reply := make(chan int, 1)
	select {
	case r.ask <- reply:
		return <-reply
	case <-r.done:
		n := r.left
		r.left = 0
		return n
	}
}

// space is one queue of its own, declared as the options say.
type space struct {
	s            *Store
	opts         store.RWOptions
	mode         publishMode
	deliveryMode uint8
	queue        string
	// lease keeps the queue's x-expires from running out while the space
	// is open (leaseLoop); Close stops it.
	leaseStop chan struct{}
	leaseDone chan struct{}
}

// RWOpen declares a queue of its own (QueuePrefix, the process id and a
// counter), durable or transient: two runs against one broker never share
// messages. Close deletes it; a queue left by a process that died expires
// after queueExpiry unused.
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	if opts.Versioned {
		return nil, fmt.Errorf("%w: a queue has no record to compare-and-set (--versioned)", store.ErrRWUnsupported)
	}
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
	lease, err := s.conn.Channel()
	if err != nil {
		sp.deleteQueue()
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	sp.leaseStop, sp.leaseDone = make(chan struct{}), make(chan struct{})
	go sp.leaseLoop(lease)
	return sp, nil
}

// leaseLoop renews the queue's x-expires lease until Close: the broker
// deletes a queue that has had no consumer for queueExpiry however many
// messages are published to it, so a WRITE run (publishers only) longer
// than that would lose its queue, and the confirmed messages in it,
// mid-run. A passive declare is a use that restarts the expiry; when this
// process dies the renewals stop and the queue expires.
func (sp *space) leaseLoop(ch *amqp.Channel) {
	defer close(sp.leaseDone)
	defer ch.Close()
	t := time.NewTicker(queueExpiry / 4)
	defer t.Stop()
	for {
		select {
		case <-sp.leaseStop:
			return
		case <-t.C:
			if _, err := ch.QueueDeclarePassive(sp.queue, sp.opts.Durable, false, false, false, nil); err != nil {
				return // the queue or the connection is gone: nothing to keep
			}
		}
	}
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
	ret := watchReturns(ch)
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
		if n := ret.take(); n > 0 {
			return fmt.Errorf("rabbitmq: load: the broker returned %d messages that reached no queue (is %s gone?)", n, sp.queue)
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
// When the broker says no message is ready, the consumer is cancelled and
// what the broker had already delivered to it (and so removed from the
// queue) is taken to the end before the queue is asked again.
func (sp *space) Records(ctx context.Context) ([]store.RWRecord, error) {
	ch, err := sp.s.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	defer ch.Close()
	if err := ch.Qos(1000, 0, false); err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	var out []store.RWRecord
	take := func(d *amqp.Delivery) error {
		r, err := record(d)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	}
	for {
		deliveries, err := ch.ConsumeWithContext(ctx, sp.queue, "allot-drain", true, false, false, false, nil)
		if err != nil {
			return nil, fmt.Errorf("rabbitmq: draining %s: %w", sp.queue, err)
		}
		for quiet := false; !quiet; {
			select {
			case d, ok := <-deliveries:
				if !ok {
					return nil, errors.New("rabbitmq: the drain consumer was closed")
				}
				if err := take(&d); err != nil {
					return nil, err
				}
				continue
			case <-time.After(drainWait):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			q, err := ch.QueueDeclarePassive(sp.queue, sp.opts.Durable, false, false, false, amqp.Table{"x-expires": int32(queueExpiry / time.Millisecond)})
			if err != nil {
				return nil, fmt.Errorf("rabbitmq: inspecting %s: %w", sp.queue, err)
			}
			quiet = q.Messages == 0
		}
		// Deliveries the broker sent before its cancel-ok come first;
		// then the channel closes.
		if err := ch.Cancel("allot-drain", false); err != nil {
			return nil, fmt.Errorf("rabbitmq: draining %s: %w", sp.queue, err)
		}
		for d := range deliveries {
			if err := take(&d); err != nil {
				return nil, err
			}
		}
		q, err := ch.QueueDeclarePassive(sp.queue, sp.opts.Durable, false, false, false, nil)
		if err != nil {
			return nil, fmt.Errorf("rabbitmq: inspecting %s: %w", sp.queue, err)
		}
		if q.Messages == 0 {
			return out, nil
		}
	}
}

// Close stops renewing the queue's lease and deletes the queue.
func (sp *space) Close() error {
	if sp.leaseStop != nil {
		close(sp.leaseStop)
		<-sp.leaseDone
		sp.leaseStop = nil
	}
	return sp.deleteQueue()
}

func (sp *space) deleteQueue() error {
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
	returned   *returned // on pub, in modes that wait for the broker
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
	if sp.mode != publishForget {
		se.returned = watchReturns(se.pub)
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
	if se.returned != nil {
		if n := se.returned.take(); n > 0 {
			return fmt.Errorf("rabbitmq: the broker returned %d messages that reached no queue (is %s gone?)", n, se.sp.queue)
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
