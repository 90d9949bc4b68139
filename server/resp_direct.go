package server

import (
	"allot/engine"
	"allot/inventory"
	"allot/server/resp"
)

// The direct reply. In fsync mode a round of one engine op (a client at
// depth 1) is answered by the engine's flusher itself, right after the
// fdatasync, with a write that never blocks; the connection's goroutine
// goes back to reading as soon as the op is submitted. Without it the
// flusher wakes the connection's goroutine, which writes the reply and
// then reads: a goroutine wake-up per op, which on a 2-vCPU VM is where
// the per-connection path's time goes (docs/results.md, "The direct
// reply"). A reply the socket does not take at once (a client that does
// not read) is finished by a goroutine of its own, so the flusher never
// waits for a client; that goroutine waits at most writeTimeout, then
// closes the connection.
//
// Nothing else is written on the connection, and its request is not
// reused, until settle has seen the reply out.
type directReply struct {
	on     bool                  // false: the connection never replies directly
	notify func(*engine.Request) // c.replyDirect, bound once
	done   chan struct{}         // a token once the reply is written (or failed)

	// Set by the connection before it submits the op.
	req              *engine.Request // the op in flight, nil when none is
	kind             inventory.Kind
	traced           bool // time the engine's stages at settle
	readAt, submitAt instant
	// Set by the connection after it submitted the op; replyDirect does
	// not touch it.
	submittedAt instant

	// Set by replyDirect, read by settle after done.
	out         []byte
	tally       opTally
	woke, wrote instant
	failed      bool // the write failed: the connection is done
}

func (d *directReply) init(c *respConn) {
	if c.s.engine.Durability() != engine.DurabilityFsync {
		return
	}
	if c.loop == nil && c.raw == nil {
		return // not a socket: no write that never waits
	}
	d.on, d.notify, d.done = true, c.replyDirect, make(chan struct{}, 1)
}

// direct arms the round's one op for a direct reply, when the round is
// one op and the connection can; it reports whether it did. The caller
// submits the op next, then calls submitted.
func (c *respConn) direct() bool {
	d := &c.dr
	if !d.on || len(c.slots) != 1 || len(c.pending) != 1 {
		return false
	}
	r := c.pending[0]
	r.Notify = d.notify
	d.req, d.kind = r, c.slots[0].kind
	d.traced = c.traced == r
	d.readAt, d.submitAt = c.readAt, c.submitAt
	return true
}

// submitted finishes what direct began, once the op was submitted: it
// reports false when the engine refused it (the round is then answered
// the usual way).
func (c *respConn) submitted() bool {
	d := &c.dr
	if c.slots[0].err != nil {
		d.req.Notify, d.req = nil, nil
		return false
	}
	d.submittedAt = c.submittedAt
	return true
}

// replyDirect runs on the engine's goroutine, once the op's outcome is
// durable: it encodes the reply and writes what the socket takes without
// waiting; the rest, if any, goes from a goroutine of its own.
func (c *respConn) replyDirect(r *engine.Request) {
	d := &c.dr
	d.woke = now()
	d.out = d.out[:0]
	if r.Err != nil {
		d.out = appendEngineError(d.out, r.Err)
		d.tally.add(d.kind, resultError)
	} else {
		d.out = resp.AppendResult(d.out, &r.Op, &r.Result)
		d.tally.add(d.kind, resultOf(r.Result.Code))
	}
	c.s.metrics.count(protocolRESP, &d.tally) // before the client can see the reply
	n, err := directWrite(c, d.out)
	if err == nil && n < len(d.out) {
		rest := d.out[n:]
		go func() {
			err := c.write(rest)
			if err != nil {
				// Timed out (or failed): end the connection now, so that
				// the loop or its goroutine sees it whether or not the
				// client sends more.
				c.abort()
			}
			c.directDone(err != nil)
		}()
		return
	}
	c.directDone(err != nil)
}

// directWrite is the direct reply's write: writeNow (a variable so that a
// test can put a blocking write in its place and see the flusher stall).
var directWrite = writeNow

// writeNow writes what c's socket takes at once and never waits for room.
func writeNow(c *respConn, b []byte) (int, error) {
	if c.loop != nil {
		return writeFDNow(c.fd, b)
	}
	return c.writeRaw(b)
}

func (c *respConn) directDone(failed bool) {
	d := &c.dr
	d.wrote = now()
	d.failed = failed
	m := &c.s.metrics
	m.flush(protocolRESP, &d.tally, d.wrote-d.readAt)
	m.observePipeline(1)
	d.done <- struct{}{}
}

// settle waits for the direct reply in flight, if any, takes its request
// back and times its stages. It reports false when the reply could not be
// written.
func (c *respConn) settle() bool {
	d := &c.dr
	if d.req == nil {
		return true
	}
	<-d.done
	r := d.req
	d.req = nil
	if d.traced {
		m := &c.s.metrics
		m.observeStage(stageParse, d.submitAt-d.readAt)
		m.observeStage(stageQueue, d.submittedAt-d.submitAt)
		if t := &r.Trace; !t.Synced.IsZero() {
			m.observeStage(stageBatch, instantOf(t.Taken)-d.submittedAt)
			m.observeStage(stageWrite, t.Written.Sub(t.Taken))
			m.observeStage(stageSync, t.Synced.Sub(t.Written))
			m.observeStage(stageWake, d.woke-instantOf(t.Synced))
		}
		m.observeStage(stageReply, d.wrote-d.woke)
		if c.readAt > d.wrote {
			// The client's turn: this round's bytes came after the reply.
			m.observeStage(stageRead, c.readAt-d.wrote)
		}
	}
	r.Notify = nil
	r.Trace = engine.Trace{}
	c.recycle(r)
	if cap(d.out) > replyBufferBytesKeepMax {
		d.out = nil // one large reply (a search's): not kept for life
	}
	return !d.failed
}
