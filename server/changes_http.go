package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"allot/changes"
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
	feed := s.changeFeed()
	durable := s.engine.DurableLSN()
	if after > durable {
		s.badRequest(w, (&changes.FutureError{After: after, Newest: durable}).Error())
		return
	}
	// The stream holds a reader slot as long as it is open (and a
	// follower, a copy of the inventory, while it is behind the readers
	// that follow live): refused at once when the readers are at their
	// bound, since waiting would mean waiting for another stream to end.
	if !s.takeChangeSlot(r.Context(), 0) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, outcomeBody{Error: "unavailable", Applied: false,
			Detail: (&changeStreamsFullError{max: s.cfg.ChangeStreamsMax}).Error()})
		return
	}
	defer s.putChangeSlot()
	// The stream reads through a changes.Reader: the events other readers
	// read too while it follows live, a follower of its own while it is
	// behind them. The first read answers a trimmed cursor with 410.
	rd := feed.NewReader()
	defer rd.Close()
	ctx, cancel := s.shutdownContext(r.Context())
	defer cancel()
	evs, err := rd.Read(ctx, after, sseBatchMax, 0)
	if err != nil {
		var te *journal.TrimmedError
		if errors.As(err, &te) {
			writeJSON(w, http.StatusGone, trimmedBody{Error: "trimmed", Oldest: te.Oldest})
			return
		}
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: "internal", Detail: "change stream: " + err.Error()})
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
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
	for first := true; ; first = false {
		for i := range evs {
			buf = append(buf, "id: "...)
			buf = strconv.AppendUint(buf, evs[i].Seq, 10)
			buf = append(buf, "\ndata: "...)
			buf = evs[i].AppendJSON(buf)
			buf = append(buf, "\n\n"...)
		}
		if len(evs) > 0 {
			pos = evs[len(evs)-1].Seq
		} else if ctx.Err() != nil {
			return
		} else if !first && s.engine.DurableLSN() == pos {
			buf = append(buf, ": keepalive\n\n"...)
		}
		if !flush() {
			return
		}
		evs, err = rd.Read(ctx, pos, sseBatchMax, sseKeepalive)
		if err != nil {
			// Mid-stream there is no status to send: an event named
			// error carries it, and the stream ends.
			buf = append(buf, "event: error\ndata: "...)
			buf = strconv.AppendQuote(buf, err.Error())
			buf = append(buf, "\n\n"...)
			flush()
			return
		}
	}
}
