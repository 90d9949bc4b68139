package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"allot/changes"
	"allot/engine"
	"allot/journal"
)

// SSE stream bounds.
const (
	// sseBatchMax is the most events read per wake-up.
	sseBatchMax = 1000
	// sseKeepalive is how often an idle stream sends a comment line, so
	// that a client (or a proxy) behind it notices a dead connection.
	sseKeepalive = 15 * time.Second
	// sseWriteTimeout bounds each write to a slow client.
	sseWriteTimeout = 30 * time.Second
	// sseSlotWaitFirst bounds how long a new stream behind the newest
	// event waits for a reader slot before it is refused with 503: slots
	// are held only while streams read, so one frees soon unless the
	// readers are at their bound.
	sseSlotWaitFirst = time.Second
)

type trimmedBody struct {
	Error  string `json:"error"`
	Oldest uint64 `json:"oldest"`
}

// httpChanges serves GET /v1/changes?after=<seq> as server-sent events:
// one event per change, "id:" the seq, "data:" the JSON, until the client
// goes or the server shuts down. A reconnecting EventSource asks for the
// same URL again with Last-Event-ID, the last seq it received: the stream
// resumes after the later of the two, so that a reconnect neither repeats
// what the client has nor fails once the journal is trimmed past the
// URL's cursor.
func (s *Server) httpChanges(w http.ResponseWriter, r *http.Request) {
	q, detail := s.query(r, "after")
	if detail != "" {
		s.badRequest(w, detail)
		return
	}
	var after uint64
	rawAfter, given := q["after"]
	lastID := r.Header.Get("Last-Event-ID")
	for _, c := range []struct {
		raw, what string
		given     bool
	}{{rawAfter, "after", given}, {lastID, "Last-Event-ID", lastID != ""}} {
		if !c.given {
			continue
		}
		v, ok := changes.ParseAfter(c.raw)
		if !ok {
			s.badRequest(w, c.what+" must be an integer from 0 to 9223372036854775807")
			return
		}
		after = max(after, v)
	}
	if s.engine.Closed() {
		// No event can come: refused as the engine refuses every request
		// now (a 200 and a stream that ended at once had a browser's
		// EventSource reconnect every few seconds, never told why).
		w.Header().Set("Retry-After", "1")
		writeEngineError(w, engine.ErrClosed)
		return
	}
	durable := s.engine.DurableLSN()
	if after > durable {
		s.badRequest(w, (&changes.FutureError{After: after, Newest: durable}).Error())
		return
	}
	// The stream reads through a changes.Reader: the events other readers
	// read too while it follows live, a follower of its own while it is
	// behind them. It holds a reader slot only while it has events to
	// read (sseSlot), as CHANGES does.
	ctx, cancel := s.shutdownContext(r.Context())
	defer cancel()
	sl := &sseSlot{s: s, rd: s.changeFeed().NewReader()}
	defer sl.release()
	var evs []changes.Event
	if after < durable {
		// Refused when the readers stay at their bound, before the
		// stream's status is sent; the first read answers a trimmed
		// cursor with 410.
		if !sl.take(ctx, sseSlotWaitFirst) {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, outcomeBody{Error: "unavailable", Applied: false,
				Detail: (&changeStreamsFullError{max: s.cfg.ChangeStreamsMax}).Error()})
			return
		}
		var err error
		if evs, err = sl.rd.Read(ctx, after, sseBatchMax, 0); err != nil {
			var te *journal.TrimmedError
			if errors.As(err, &te) {
				writeJSON(w, http.StatusGone, trimmedBody{Error: "trimmed", Oldest: te.Oldest})
				return
			}
			writeJSON(w, http.StatusInternalServerError, errorBody{Error: "internal", Detail: "change stream: " + err.Error()})
			return
		}
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		// The router serves HEAD with GET's handler: the status and
		// headers a GET would get, and no stream (a HEAD response has no
		// body, and its client reuses the connection at once).
		return
	}
	var buf []byte
	flush := func() bool {
		rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		if _, err := w.Write(buf); err != nil {
			return false
		}
		buf = buf[:0]
		return rc.Flush() == nil
	}
	pos := after
	for {
		for i := range evs {
			buf = append(buf, "id: "...)
			buf = strconv.AppendUint(buf, evs[i].Seq, 10)
			buf = append(buf, "\ndata: "...)
			buf = evs[i].AppendJSON(buf)
			buf = append(buf, "\n\n"...)
		}
		if len(evs) > 0 {
			pos = evs[len(evs)-1].Seq
		}
		evs = nil
		if pos >= s.engine.DurableLSN() {
			// Caught up: the slot (and any follower) goes back before
			// the write to the client and the wait for what comes next.
			sl.release()
		}
		if !flush() {
			return
		}
		if !sl.held {
			switch s.waitChanges(ctx, pos) {
			case sseEnded:
				return
			case sseIdle:
				buf = append(buf, ": keepalive\n\n"...)
				continue
			}
			if !sl.take(ctx, sseKeepalive) {
				if ctx.Err() != nil {
					return
				}
				// Every slot stayed busy: say the stream is alive, try
				// again.
				buf = append(buf, ": keepalive\n\n"...)
				continue
			}
		}
		var err error
		if evs, err = sl.rd.Read(ctx, pos, sseBatchMax, 0); err != nil {
			// Mid-stream there is no status to send: an event named
			// error carries it, and the stream ends.
			buf = append(buf, "event: error\ndata: "...)
			buf = strconv.AppendQuote(buf, err.Error())
			buf = append(buf, "\n\n"...)
			flush()
			return
		}
		if len(evs) == 0 && ctx.Err() != nil {
			return
		}
	}
}

// sseSlot is an SSE stream's hold on a change-stream reader slot
// (Config.ChangeStreamsMax) and its reader. The stream holds the slot
// while it reads, and while it is behind the newest durable event (its
// reader may then keep a follower, a copy of the inventory, between
// reads); it gives both back once it caught up, before it waits for new
// events.
//
// Rejected: a slot for as long as the stream is open. Idle streams
// following live then held every slot: 16 idle curl -N streams made the
// 17th a 503 and every CHANGES wait 10 s for -UNAVAILABLE, though a
// stream waiting for the next event needs no follower.
type sseSlot struct {
	s    *Server
	rd   *changes.Reader
	held bool
}

func (sl *sseSlot) take(ctx context.Context, wait time.Duration) bool {
	sl.held = sl.s.takeChangeSlot(ctx, wait)
	return sl.held
}

// release gives the reader's follower back to the feed (whose idle
// followers are bounded) and the slot back to the server.
func (sl *sseSlot) release() {
	sl.rd.Close()
	if sl.held {
		sl.held = false
		sl.s.putChangeSlot()
	}
}

// Outcomes of waitChanges.
const (
	sseEvents = iota // an event past the cursor is durable
	sseIdle          // none came within sseKeepalive
	sseEnded         // the stream is done: the client left, or the server or engine is closing
)

// waitChanges waits, holding no reader slot, up to sseKeepalive for an
// event past seq pos to be durable.
func (s *Server) waitChanges(ctx context.Context, pos uint64) int {
	wctx, cancel := context.WithTimeout(ctx, sseKeepalive)
	defer cancel()
	if s.engine.WaitDurable(wctx, pos) > pos {
		return sseEvents
	}
	if ctx.Err() != nil || wctx.Err() == nil {
		// WaitDurable returns early only when the engine closed.
		return sseEnded
	}
	return sseIdle
}
