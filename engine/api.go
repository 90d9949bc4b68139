package engine

import (
	"time"

	"allot/inventory"
)

// Request is one op submitted to the pipeline. A Request is reusable: after
// Wait returns, the caller may set Op again and Submit it again. It must not
// be submitted twice at once.
type Request struct {
	Op inventory.Op
	// Lines is the buffer for a capture's allocation; Result.Lines aliases
	// it (grown if needed). Keep it between uses to avoid allocations.
	Lines []inventory.Line
	// Buffers, when not nil, are lent for the reply: a hold's or an
	// order's allocations, a search's hits (see inventory.Buffers). The
	// Result aliases them until the request is submitted again. nil: each
	// result gets slices of its own (what a caller that keeps results
	// across submissions needs).
	Buffers *inventory.Buffers
	// Result and Err are valid after Wait returns. Err is an operational
	// failure (the engine is closed, the journal failed); Result holds the
	// op's outcome otherwise.
	Result inventory.Result
	Err    error
	// Source names who submitted the request, for the fsync group commit
	// (see Engine.gather): a source submits in rounds and does not submit
	// again until the round's replies are out, as a RESP connection does.
	// 0 means a source of its own.
	Source uint64
	// Checked says the submitter ran Op.Check on this very Op and it
	// passed, so the engine does not run it again (the RESP server decodes
	// and checks each command in one step: the second check was 3-5% of
	// its CPU per CAPTURE). Set it only right after a passing Check, never
	// for an Op changed since; the engine clears it when it takes the
	// request.
	Checked bool
	// Trace is when the request's journal batch was taken, written and
	// synced, set in fsync mode before Wait returns (for the server's
	// per-stage timing); zero in the other modes.
	Trace Trace

	// Notify, when not nil, is called once the outcome is ready (Result,
	// Err and Trace set), in place of waking Wait, which must then not be
	// called. It is called once per submission, by the engine's goroutine
	// that released the reply: in fsync mode the flusher, right after the
	// fdatasync, otherwise the submitting goroutine inside Submit. It
	// must not block: the flusher's next batch waits for it. The server
	// writes a depth-1 client's reply from it (server/resp_direct.go), and
	// its event loop learns from a round's last op that the round's
	// replies are ready (armNotify in server/resp_loop_linux.go).
	Notify func(*Request)

	done chan struct{}
	fn   func(*inventory.State) // a read run on the writer goroutine
	// settled: Submit or SubmitBatch released the reply at once, without
	// a send on done (Wait clears it).
	settled bool
}

// takeChecked reports and clears Checked.
func (r *Request) takeChecked() bool {
	c := r.Checked
	r.Checked = false
	return c
}

// release hands the outcome to the submitter.
func (r *Request) release() {
	if r.Notify != nil {
		r.Notify(r)
		return
	}
	r.done <- struct{}{}
}

// releaseNow hands the outcome to the submitter from within Submit: a
// Notify is called; otherwise Wait, which the submitter calls next,
// returns at once (settled) instead of taking a token from done. A
// channel send and receive fewer per op: -9% ns per op in write mode and
// -11% in none mode (BenchmarkPipeline, 16 workers, eight interleaved
// runs each, benchstat p <= 0.005).
func (r *Request) releaseNow() {
	if r.Notify != nil {
		r.Notify(r)
		return
	}
	r.settled = true
}

// NewRequest returns a request ready to Submit.
func NewRequest() *Request {
	return &Request{done: make(chan struct{}, 1)}
}

// Wait blocks until the request's outcome is as durable as the engine's
// mode promises, and returns its error. Call it after Submit returned, in
// the submitting goroutine or one it handed the request to: an outcome
// Submit itself released (write and none modes, a refusal, an invalid op)
// is marked on the request, not sent.
func (r *Request) Wait() error {
	if r.settled {
		r.settled = false
		return r.Err
	}
	<-r.done
	return r.Err
}

// Ready reports whether Wait would return at once: Submit released the
// outcome itself, or the engine has. Only the submitter may ask, after
// Submit returned and before Wait; Wait still reads the outcome (and is
// what orders it after the engine's writes). The server's event loop
// asks, so that it never waits for the disk (server/resp_loop_linux.go).
func (r *Request) Ready() bool {
	return r.settled || len(r.done) > 0
}

// Capture takes n units of group g. See inventory.State for the rule.
func (e *Engine) Capture(g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	return e.do(inventory.Capture(g, n), lines)
}

// Release adds n units back to row k.
func (e *Engine) Release(k inventory.RowKey, n int64) (inventory.Result, error) {
	return e.do(inventory.Release(k, n), nil)
}

// Stock sets row k to count and price, creating it if needed.
func (e *Engine) Stock(k inventory.RowKey, count, price int64) (inventory.Result, error) {
	return e.do(inventory.Stock(k, count, price), nil)
}

// Get reads row k: CodeOK with Count and Price, or CodeNotFound.
func (e *Engine) Get(k inventory.RowKey) (inventory.Result, error) {
	return e.do(inventory.Get(k), nil)
}

// Available reads the total of group g (Result.Count), 0 for an unknown one.
func (e *Engine) Available(g inventory.GroupKey) (inventory.Result, error) {
	return e.do(inventory.Available(g), nil)
}

// Do submits op and waits for its outcome. lines is the buffer for a
// capture's allocation.
func (e *Engine) Do(op inventory.Op, lines []inventory.Line) (inventory.Result, error) {
	return e.do(op, lines)
}

// Hold reserves lines under hold id until ttl after the batch's time (whole
// milliseconds). See inventory.KindHold.
func (e *Engine) Hold(id string, ttl time.Duration, lines []inventory.Demand) (inventory.Result, error) {
	return e.do(inventory.Hold(id, ttl.Milliseconds(), lines), nil)
}

// Confirm confirms hold id.
func (e *Engine) Confirm(id string) (inventory.Result, error) {
	return e.do(inventory.Confirm(id), nil)
}

// Cancel cancels hold id.
func (e *Engine) Cancel(id string) (inventory.Result, error) {
	return e.do(inventory.Cancel(id), nil)
}

// HoldGet reads hold id.
func (e *Engine) HoldGet(id string) (inventory.Result, error) {
	return e.do(inventory.HoldGet(id), nil)
}

// Order captures lines all or nothing; key, when not empty, is its
// idempotency key.
func (e *Engine) Order(key string, lines []inventory.Demand) (inventory.Result, error) {
	op := inventory.Order(lines)
	op.IdempotencyKey = key
	return e.do(op, nil)
}
