package benchsvc

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"allot/bench"
	"allot/internal/bearer"
	"allot/internal/loopback"
	"allot/report"
)

// CheckListen refuses a listen address other than loopback without a
// token: the service runs whatever bench a request asks for, on this
// machine's servers.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("benchsvc: listen address %q: %w", addr, err)
	}
	if token != "" || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("benchsvc: listening on %q (not loopback) needs --token: anyone who reaches it could run benches on this machine", addr)
}

// Handler returns the service's HTTP handler.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.HandleFunc("GET /v1/info", s.auth(s.serveInfo))
	mux.HandleFunc("GET /v1/runs", s.auth(s.serveList))
	mux.HandleFunc("POST /v1/runs", s.auth(s.serveSubmit))
	mux.HandleFunc("GET /v1/runs/{id}", s.auth(s.serveGet))
	mux.HandleFunc("DELETE /v1/runs/{id}", s.auth(s.serveCancel))
	mux.HandleFunc("GET /v1/runs/{id}/events", s.auth(s.serveEvents))
	mux.HandleFunc("GET /v1/runs/{id}/report", s.auth(s.serveReport))
	mux.HandleFunc("GET /v1/report", s.auth(s.serveReport))
	mux.HandleFunc("POST /test/gen-load/{store}", s.auth(s.serveGenLoad))
	// Loopback without a token trusts whoever can connect, and a browser
	// on this machine can: any page it opens may POST a text/plain body
	// here without a CORS preflight and start a bench. Requests the
	// browser marks as cross-origin are refused; the page's own and those
	// of clients that are no browser (curl, scripts) carry no such mark.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, "cross_origin", "a request from another site's page is refused")
	}))
	guarded := cop.Handler(jsonRouting(mux))
	// A page whose owner rebinds its name to 127.0.0.1 (DNS rebinding)
	// makes same-origin requests, which the check above lets through, but
	// under its own name: without a token only requests addressed to a
	// loopback name are served.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token == "" && !loopback.Host(r.Host) {
			writeError(w, http.StatusForbidden, "forbidden", "Host "+r.Host+" is not a loopback name: a service without a token answers only requests addressed to localhost or a loopback address")
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// jsonRouting answers what mux has no handler for (an unknown path, or a
// method the path does not take) in JSON, as every other error: the mux
// itself answers in plain text.
func jsonRouting(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// The mux's own answer, its status and Allow header kept.
		c := &routingAnswer{header: http.Header{}}
		h.ServeHTTP(c, r)
		if c.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", c.header.Get("Allow"))
			writeError(w, c.status, "method_not_allowed", r.Method+" "+r.URL.Path+": allowed: "+c.header.Get("Allow"))
			return
		}
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
}

// routingAnswer keeps the status and header of the mux's own answer.
type routingAnswer struct {
	header http.Header
	status int
}

func (a *routingAnswer) Header() http.Header         { return a.header }
func (a *routingAnswer) Write(b []byte) (int, error) { return len(b), nil }
func (a *routingAnswer) WriteHeader(status int)      { a.status = status }

// tokenCookie carries the token for what a browser loads without script.
const tokenCookie = "allot_bench_token"

// auth checks the bearer token (header, or the page's cookie) when the
// service has one.
func (s *Service) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.Token == "" {
		return h
	}
	want := []byte(s.cfg.Token)
	return func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		got, ok := bearer.Token(header)
		// The page's report frame cannot send a header: it sends the
		// token as the cookie set below, SameSite=Strict, which no other
		// site's page can make a browser send.
		cookie := ""
		if c, err := r.Cookie(tokenCookie); err == nil {
			// Percent-encoded, so that a token with + / = survives in a
			// cookie.
			if v, err := url.QueryUnescape(c.Value); err == nil {
				cookie = v
				if header == "" {
					got, ok = v, true
				}
			}
		}
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="allot bench"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "this service needs Authorization: Bearer <token>")
			return
		}
		if header != "" && cookie != got {
			setTokenCookie(w, r, got)
		}
		h(w, r)
	}
}

// setTokenCookie hands the page the token as a cookie for its report
// frame, on a request that proved it holds the token in its header. The
// service sets it, not the page's script: HttpOnly keeps it out of reach
// of any script that runs in the page (one in a report included), and
// SameSite=Strict out of other sites' requests. Secure only over TLS:
// the service speaks plain HTTP (on loopback, or behind a proxy that
// ends TLS), and a browser drops a Secure cookie that came over plain
// HTTP from a host other than localhost. No expiry: it lasts as long as
// the browser's session, as the token the page keeps for the tab.
func setTokenCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: tokenCookie, Value: url.QueryEscape(token), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"error":"internal","detail":"encoding the reply failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

func writeError(w http.ResponseWriter, status int, code, detail string) {
	writeJSON(w, status, map[string]string{"error": code, "detail": detail})
}

// writeSubmitError maps a Submit error to its status.
func writeSubmitError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrUnknownStore):
		writeError(w, http.StatusNotFound, "unknown_store", err.Error())
	case errors.Is(err, ErrBadRequest):
		writeError(w, http.StatusBadRequest, "invalid", strings.TrimPrefix(err.Error(), ErrBadRequest.Error()+": "))
	default:
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
	}
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, requestBytesMax))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("reading the body: %v (at most %d bytes)", err, requestBytesMax))
		return nil, false
	}
	return body, true
}

func (s *Service) serveSubmit(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	args, err := Args(body)
	if err != nil {
		writeSubmitError(w, err)
		return
	}
	rec, err := s.Submit(json.RawMessage(bytes.TrimSpace(body)), args)
	if err != nil {
		writeSubmitError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/runs/"+rec.ID)
	writeJSON(w, http.StatusAccepted, map[string]any{"id": rec.ID, "state": rec.State, "args": rec.Args})
}

// serveList answers a page of the history: ?limit= runs (default
// listLimitDefault, at most listLimitMax), the newest, or those before
// ?before=<id> (the previous page's next).
func (s *Service) serveList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := listLimitDefault
	if q.Has("limit") {
		v := q.Get("limit")
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > listLimitMax {
			writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("limit=%q: give a number of runs from 1 to %d (default %d)", v, listLimitMax, listLimitDefault))
			return
		}
		limit = n
	}
	before := q.Get("before")
	if q.Has("before") && before == "" {
		writeError(w, http.StatusBadRequest, "invalid", "before is empty: give the id of a run (a page's next), or leave before out for the newest runs")
		return
	}
	page, err := s.List(before, limit)
	if err != nil {
		writeSubmitError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Service) serveGet(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.Get(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no run %q", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (s *Service) serveCancel(w http.ResponseWriter, r *http.Request) {
	rec, err := s.Cancel(r.PathValue("id"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no run %q", r.PathValue("id")))
	case errors.Is(err, ErrFinished):
		writeError(w, http.StatusConflict, "finished", fmt.Sprintf("run %s has already finished (%s)", rec.ID, rec.State))
	case err != nil:
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	default:
		writeJSON(w, http.StatusAccepted, map[string]any{"id": rec.ID, "state": rec.State})
	}
}

// behindNote is the comment that ends the stream of a reader more than
// subscriptionDepth samples behind: the page reconnects at once on it,
// as it does not after a drop.
var behindNote = ": more than " + strconv.Itoa(subscriptionDepth) + " samples behind the live stream: reconnect with Last-Event-ID for the samples after it\n\n"

// serveEvents streams a run's samples as server-sent events: first the
// series so far, then one sample per interval while it runs, then an
// "end" event with the run's final state. A sample's id is its number in
// the run (1, 2, ...; a merged point of the series has its last
// sample's): a client reconnecting with Last-Event-ID (EventSource does)
// gets only the samples after it, none twice. When that sample has since
// been merged into an older point, no such cut exists: the client gets a
// "reset" event, to drop what it has, and the whole series again.
//
// A reader more than subscriptionDepth samples behind the live stream
// is not sent the next sample with a gap before it: its stream ends,
// without the end event, once it has the samples it was behind by, and
// it reconnects with the last one's id, as after any drop, for the rest
// (from the series: one by one if they are still recent, or after a
// reset, merged). Rejected: dropping the samples it has no room for:
// the next sample's id would move the client's Last-Event-ID past them,
// and no reconnect would send them. The end is sent only to a client
// that holds every sample of the run.
//
// A stream silent for EventKeepalive gets a comment line, so that a
// proxy does not cut it as idle.
func (s *Service) serveEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after := 0
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("Last-Event-ID %q is not a sample number: this stream's event ids are 1, 2, ...", h))
			return
		}
		after = n
	}
	past, next, stop, ok := s.Subscribe(id)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no run %q", id))
		return
	}
	defer stop()
	flusher, _ := w.(http.Flusher)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	keepalive := time.NewTimer(s.cfg.EventKeepalive)
	defer keepalive.Stop()
	write := func(text string) bool {
		// No deadline for the whole stream, one per write: a reader that
		// stops reading frees its handler.
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(w, text); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		keepalive.Reset(s.cfg.EventKeepalive)
		return true
	}
	// send writes one event; seq 0 is an event without an id (the end).
	send := func(seq int, event string, v any) bool {
		data, _ := json.Marshal(v)
		idLine := ""
		if seq > 0 {
			idLine = "id: " + strconv.Itoa(seq) + "\n"
		}
		return write(idLine + "event: " + event + "\ndata: " + string(data) + "\n\n")
	}
	if !resumable(past, after) {
		if !send(0, "reset", map[string]any{"after": after, "detail": "the samples after it have been merged into older points since: here is the whole series"}) {
			return
		}
		after = 0
	}
	// after is, from here on, the last sample the client holds.
	for _, ev := range past {
		if ev.Seq > after {
			if !send(ev.Seq, "sample", ev) {
				return
			}
			after = ev.Seq
		}
	}
	// A comment at once, so that a client knows the stream is open even
	// before the first sample.
	if !write(": stream open\n\n") {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			if !write(": keepalive\n\n") {
				return
			}
		case ev, open := <-next:
			if !open {
				// Closed at the run's end, or because this stream fell
				// behind: then the series holds samples it has not sent
				// (or will: the run goes on).
				rec, found := s.Get(id)
				if found && (rec.State == StateQueued || rec.State == StateRunning || after < lastSeq(rec.Series)) {
					write(behindNote)
					return
				}
				send(0, "end", map[string]any{"id": rec.ID, "state": rec.State, "error": rec.Error, "results": len(rec.Results)})
				return
			}
			if ev.Seq > after {
				if !send(ev.Seq, "sample", ev) {
					return
				}
				after = ev.Seq
			}
		}
	}
}

// serveReport draws the HTML report of one run (/v1/runs/{id}/report) or
// of several side by side (/v1/report?runs=a,b).
func (s *Service) serveReport(w http.ResponseWriter, r *http.Request) {
	ids := []string{r.PathValue("id")}
	if ids[0] == "" {
		ids = strings.Split(r.URL.Query().Get("runs"), ",")
	}
	if len(ids) == 0 || len(ids) > 16 || ids[0] == "" {
		writeError(w, http.StatusBadRequest, "invalid", "give runs=<id>[,<id>...] (at most 16)")
		return
	}
	f := bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{}}
	for _, id := range ids {
		rec, ok := s.Get(id)
		if !ok {
			writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no run %q", id))
			return
		}
		if f.Started.IsZero() || rec.Created.Before(f.Started) {
			f.Started = rec.Created
		}
		f.Command = append(f.Command, "allot bench "+strings.Join(rec.Args, " "))
		f.Runs = append(f.Runs, rec.Results...)
	}
	if len(f.Runs) == 0 {
		writeError(w, http.StatusConflict, "no_results", "the run has no finished store run yet")
		return
	}
	if s.cfg.Environment != nil {
		f.Environment = s.cfg.Environment
	}
	var page bytes.Buffer
	if err := report.WriteHTML(&page, &f); err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(page.Bytes())
}

func (s *Service) serveInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"stores": s.cfg.Stores, "workloads": s.cfg.Workloads})
}
