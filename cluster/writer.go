package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"allot/engine"
	"allot/journal"
)

// appendRetryMax bounds how long one append is retried while JetStream
// does not answer (a NATS node restarting, a stream leader being
// elected). Past it the frame's outcome is unknown and the engine stops.
const appendRetryMax = 15 * time.Second

// logWriter is the primary's engine.Replicator: it appends each frame to
// the log with the expected last sequence, so that an append after another
// primary's fence fails.
//
// last is the sequence of the last message this primary appended or read;
// only the flusher's goroutine calls Replicate, so it needs no lock.
type logWriter struct {
	log   *shardLog
	node  string
	ctx   context.Context // cancelled when the node steps down
	last  uint64
	fault string

	deposedOnce sync.Once
	deposed     chan struct{} // closed when an append found another primary

	behindOnce sync.Once
	behind     chan behindMsg // FaultAckBeforeAppend: frames acknowledged, not yet appended
}

// behindMsg is a frame FaultAckBeforeAppend acknowledged at at.
type behindMsg struct {
	m  *nats.Msg
	at time.Time
}

// ackBeforeAppendLag is how long FaultAckBeforeAppend's appender trails
// the replies: with the appender as fast as it could go, a fast disk left
// no acknowledged frame unappended at the kill, some runs, and the broken
// variant passed the kill test it exists to fail.
const ackBeforeAppendLag = 50 * time.Millisecond

func newLogWriter(ctx context.Context, l *shardLog, node string, last uint64, fault string) *logWriter {
	return &logWriter{log: l, node: node, ctx: ctx, last: last, fault: fault, deposed: make(chan struct{})}
}

func (w *logWriter) message(frame []byte) *nats.Msg {
	m := nats.NewMsg(w.log.names.subject)
	m.Data = frame
	first := journal.FrameLastLSN(frame) - uint64(frameCount(frame)) + 1
	m.Header.Set(headerKind, kindFrame)
	m.Header.Set(headerFirstLSN, strconv.FormatUint(first, 10))
	m.Header.Set(headerLSN, strconv.FormatUint(journal.FrameLastLSN(frame), 10))
	m.Header.Set(headerNode, w.node)
	return m
}

// frameCount reads a sealed frame's op count (journal/record.go: a u32
// at offset 16).
func frameCount(frame []byte) uint32 { return binary.LittleEndian.Uint32(frame[16:]) }

// Replicate appends frame and returns once JetStream acknowledged it (see
// engine.Replicator).
func (w *logWriter) Replicate(frame []byte) error {
	m := w.message(frame)
	if w.fault == FaultAckBeforeAppend {
		// Broken on purpose: the reply goes before the log has the frame;
		// a goroutine appends the frames behind the replies.
		w.behindOnce.Do(func() {
			w.behind = make(chan behindMsg, 1<<16)
			go func() {
				for b := range w.behind {
					time.Sleep(time.Until(b.at.Add(ackBeforeAppendLag)))
					if w.append(b.m) != nil {
						return
					}
				}
			}()
		})
		m.Data = bytes.Clone(frame)
		w.behind <- behindMsg{m: m, at: time.Now()}
		return nil
	}
	return w.append(m)
}

// append publishes m with the expected last sequence, retrying while
// JetStream does not answer. A refusal by the sequence check means either
// that an earlier attempt of this same append landed (the message after
// last is ours) or that another primary appended: then this one is
// deposed.
func (w *logWriter) append(m *nats.Msg) error {
	deadline := time.Now().Add(appendRetryMax)
	var lastErr error
	for attempt := 0; ; attempt++ {
		if err := w.ctx.Err(); err != nil {
			return fmt.Errorf("cluster: append to %s: the node is stepping down: %w", w.log.names.stream, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: append to %s after message %d: no answer for %v: %w", w.log.names.stream, w.last, appendRetryMax, lastErr)
		}
		var opts []jetstream.PublishOpt
		if w.fault != FaultNoExpectedSequence {
			opts = append(opts, jetstream.WithExpectLastSequence(w.last))
		}
		ctx, cancel := context.WithTimeout(w.ctx, requestTimeout)
		ack, err := w.log.js.PublishMsg(ctx, m, opts...)
		cancel()
		if err == nil {
			w.last = ack.Sequence
			return nil
		}
		lastErr = err
		if isWrongSequence(err) {
			got, gerr := w.log.get(w.ctx, w.last+1)
			if gerr == nil {
				if got.Header.Get(headerNode) == w.node && bytes.Equal(got.Data, m.Data) {
					w.last++ // an earlier attempt landed
					return nil
				}
				w.depose()
				return fmt.Errorf("cluster: append to %s refused: message %d is %s's: %w", w.log.names.stream, w.last+1,
					got.Header.Get(headerNode), &engine.NotPrimaryError{})
			}
			lastErr = gerr
		}
		select {
		case <-w.ctx.Done():
		case <-time.After(min(time.Duration(attempt+1)*20*time.Millisecond, 250*time.Millisecond)):
		}
	}
}

func (w *logWriter) depose() { w.deposedOnce.Do(func() { close(w.deposed) }) }

// fence appends a fence at the end of what this node applied (the log's
// message last, op lsn): once it is in, no older primary can append. It
// fails with the sequence check when the log moved on since.
func (l *shardLog) fence(ctx context.Context, node string, last, lsn uint64, lease []byte) (uint64, error) {
	m := nats.NewMsg(l.names.subject)
	m.Data = lease
	m.Header.Set(headerKind, kindFence)
	m.Header.Set(headerLSN, strconv.FormatUint(lsn, 10))
	m.Header.Set(headerNode, node)
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	ack, err := l.js.PublishMsg(rctx, m, jetstream.WithExpectLastSequence(last))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

var errDeposed = errors.New("cluster: deposed: another primary appended to the log")
