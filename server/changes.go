package server

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"allot/changes"
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
	events, err := c.s.changeFeed().Read(ctx, req.After, req.Count, req.Block)
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

// appendChangesError maps a read error to the wire: -TRIMMED oldest <seq>
// for a cursor older than the journal keeps, -ERR otherwise.
func appendChangesError(b []byte, err error) []byte {
	var te *journal.TrimmedError
	if errors.As(err, &te) {
		return resp.AppendError(b, "TRIMMED oldest "+strconv.FormatUint(te.Oldest, 10))
	}
	var fe *changes.FutureError
	if errors.As(err, &fe) {
		return resp.AppendErr(b, fe.Error())
	}
	return resp.AppendErr(b, "change stream: "+err.Error())
}
