package server

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"syscall"
	"time"

	"allot/changes"
	"allot/engine"
	"allot/journal"
	"allot/server/resp"
)

// changesFeed is the server's change stream (package changes): made on
// first use, so a server nobody follows keeps no follower.
type changesFeed struct {
	once sync.Once
	feed *changes.Feed
}

func (s *Server) changeFeed() *changes.Feed {
	s.changes.once.Do(func() { s.changes.feed = changes.NewFeed(s.engine) })
	return s.changes.feed
}

// changesSlotWaitMax bounds how long a CHANGES waits for a free reader
// slot (Config.ChangeStreamsMax) before it is refused. Many connections
// blocked at one cursor wake together at its next event: they are served
// in turns rather than refused, and a turn is one read of at most
// changes.CountMax events.
const changesSlotWaitMax = 10 * time.Second

// changeStreamsFullError refuses a change-stream reader beyond
// Config.ChangeStreamsMax: it was never served, the client may retry.
type changeStreamsFullError struct{ max int }

func (e *changeStreamsFullError) Error() string {
	return strconv.Itoa(e.max) + " change-stream readers are being served, the limit (change streams max): retry later"
}

// takeChangeSlot takes a reader slot, waiting up to wait (0: not at all)
// or until ctx is done. It reports whether it got one; give it back with
// putChangeSlot.
func (s *Server) takeChangeSlot(ctx context.Context, wait time.Duration) bool {
	select {
	case s.changeSlots <- struct{}{}:
		return true
	default:
	}
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s.changeSlots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (s *Server) putChangeSlot() { <-s.changeSlots }

// readChanges is changes.Feed.Read with a bound on the followers built at
// once: the BLOCK wait, which needs no follower, happens here before a
// slot is taken, so that a blocked reader holds none; a read with events
// to return takes a slot for as long as it reads them.
//
// gone, when not nil, reports that the client went away (its socket reads
// end of file): it is asked every peerGoneCheckEvery during the wait,
// which it then ends, and the connection is freed rather than held to the
// end of the BLOCK. A client that only shut down its sending side gets its
// reply then, with the events durable by that time (as Redis frees a
// blocked client at end of file).
func (s *Server) readChanges(ctx context.Context, req changes.Request, gone func() bool) ([]changes.Event, error) {
	durable := s.engine.DurableLSN()
	if req.After == durable && req.Block > 0 {
		wctx, cancel := context.WithTimeout(ctx, req.Block)
		var watched chan struct{}
		if gone != nil {
			watched = make(chan struct{})
			go func() {
				defer close(watched)
				t := time.NewTicker(peerGoneCheckEvery)
				defer t.Stop()
				for {
					select {
					case <-wctx.Done():
						return
					case <-t.C:
						if gone() {
							cancel()
							return
						}
					}
				}
			}()
		}
		durable = s.engine.WaitDurable(wctx, req.After)
		cut := wctx.Err() != nil
		cancel()
		if watched != nil {
			// gone looks at the socket: done before the connection may
			// close it.
			<-watched
		}
		if durable == req.After && !cut {
			// WaitDurable returns early only when the engine closed: no
			// event can come, and the reply is a refusal, as every
			// request's then is (an empty array at once had a consumer
			// following with BLOCK ask again without a pause).
			return nil, engine.ErrClosed
		}
	}
	// As Read answers these, without a follower.
	if req.After > durable {
		return nil, &changes.FutureError{After: req.After, Newest: durable}
	}
	if req.After == durable {
		return []changes.Event{}, nil
	}
	if !s.takeChangeSlot(ctx, changesSlotWaitMax) {
		if ctx.Err() != nil {
			return []changes.Event{}, nil // shutting down: as a wait cut short
		}
		return nil, &changeStreamsFullError{max: s.cfg.ChangeStreamsMax}
	}
	defer s.putChangeSlot()
	return s.changeFeed().Read(ctx, req.After, req.Count, 0)
}

// shutdownContext returns a context cancelled when the server shuts down,
// so that a blocked CHANGES or an SSE stream ends with it.
func (s *Server) shutdownContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-s.shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// changes serves CHANGES <after-seq> [COUNT n] [BLOCK ms].
//
// The replies of the commands before it in the round are written first:
// the events of a mutation pipelined before CHANGES are then durable, and
// so visible to it, and a blocked CHANGES never holds back their replies.
func (c *respConn) changes(args [][]byte) {
	req, detail := changes.ParseRequest(args)
	if detail != "" {
		c.s.metrics.commandErrors.Add(1)
		c.err(detail)
		return
	}
	if len(c.slots) > 0 {
		c.reply()
		c.slots = c.slots[:0]
		c.immediate = c.immediate[:0]
	}
	ctx, cancel := c.s.shutdownContext(context.Background())
	events, err := c.s.readChanges(ctx, req, c.peerGone)
	cancel()
	from := c.mark()
	if err != nil {
		c.s.metrics.commandErrors.Add(1)
		c.immediate = appendChangesError(c.immediate, err)
		c.done(from)
		return
	}
	c.immediate = resp.AppendArray(c.immediate, len(events))
	var js []byte
	for i := range events {
		js = events[i].AppendJSON(js[:0])
		c.immediate = resp.AppendBulkBytes(c.immediate, js)
	}
	c.done(from)
}

// peerGoneCheckEvery is how often a CHANGES waiting for events looks
// whether its client went away.
const peerGoneCheckEvery = 250 * time.Millisecond

// peerGone reports whether the client closed the connection (or it
// failed): the socket reads end of file, peeked without consuming what
// the client pipelined. A client that pipelined more commands after the
// CHANGES is not seen to go until they are read.
func (c *respConn) peerGone() bool {
	var n int
	var err error
	peek := func(fd uintptr) {
		var b [1]byte
		for {
			n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err != syscall.EINTR {
				return
			}
		}
	}
	switch {
	case c.nc == nil && c.loop != nil && c.fd >= 0: // the event loop's socket, handed to this goroutine
		peek(uintptr(c.fd))
	case c.raw != nil:
		if c.raw.Control(peek) != nil {
			return false
		}
	default:
		return false // not a socket
	}
	if err != nil {
		return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
	}
	return n == 0
}

// appendChangesError maps a read error to the wire: -TRIMMED oldest <seq>
// for a cursor older than the journal keeps, -UNAVAILABLE for a read
// refused (the readers at their bound, a BLOCK on a closed engine), -ERR
// otherwise.
func appendChangesError(b []byte, err error) []byte {
	var te *journal.TrimmedError
	if errors.As(err, &te) {
		return resp.AppendError(b, "TRIMMED oldest "+strconv.FormatUint(te.Oldest, 10))
	}
	var fe *changes.FutureError
	if errors.As(err, &fe) {
		return resp.AppendErr(b, fe.Error())
	}
	var full *changeStreamsFullError
	if errors.As(err, &full) {
		return resp.AppendError(b, "UNAVAILABLE "+full.Error())
	}
	if errors.Is(err, engine.ErrUnavailable) {
		return resp.AppendError(b, "UNAVAILABLE "+err.Error())
	}
	return resp.AppendErr(b, "change stream: "+err.Error())
}
