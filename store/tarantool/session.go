package tarantool

import (
	"context"
	"fmt"

	gotarantool "github.com/tarantool/go-tarantool/v2"
	"github.com/vmihailenco/msgpack/v5"

	"allot/inventory"
)

// session is one worker's handle on the Store's shared connection, with its
// own request and reply buffers. It also counts the transaction conflicts
// the Lua functions retried.
type session struct {
	conn      *gotarantool.Connection
	space     string
	store     *Store // its catalog, for search
	conflicts int64
	args      callArgs
	reply     callReply
}

// call runs one allot.* function with s.args and decodes into s.reply.
//
// The request does not carry ctx: go-tarantool starts a watchdog goroutine
// for every request with a cancellable context, which costs more than the
// call itself on a loaded machine. The connection's Timeout bounds each
// request instead, and a cancelled ctx stops the session before the next
// request.
func (s *session) call(ctx context.Context, function string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := gotarantool.NewCallRequest(function).Args(&s.args)
	if err := s.conn.Do(req).GetTyped(&s.reply); err != nil {
		return err
	}
	s.conflicts += s.reply.conflicts
	return nil
}

func (s *session) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	op := inventory.Capture(g, n)
	if d := op.Check(); d != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
	}
	s.args = callArgs{strings: [5]string{s.space, g.SKU, g.Condition, g.Source}, stringsLen: 4, n: n}
	s.reply = callReply{capture: true, lines: lines[:0]}
	if err := s.call(ctx, "allot.capture"); err != nil {
		return inventory.Result{}, fmt.Errorf("tarantool: capture %v: %w", g, err)
	}
	switch s.reply.code {
	case inventory.CodeOK:
		return inventory.Result{Code: inventory.CodeOK, Lines: s.reply.lines}, nil
	case inventory.CodeInsufficient:
		return inventory.Result{Code: inventory.CodeInsufficient, Available: s.reply.value}, nil
	}
	return inventory.Result{}, fmt.Errorf("tarantool: capture %v: unexpected reply code %v", g, s.reply.code)
}

func (s *session) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	op := inventory.Release(k, n)
	if d := op.Check(); d != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
	}
	s.args = callArgs{strings: [5]string{s.space, k.SKU, k.Warehouse, k.Condition, k.Source}, stringsLen: 5, n: n}
	s.reply = callReply{}
	if err := s.call(ctx, "allot.release"); err != nil {
		return inventory.Result{}, fmt.Errorf("tarantool: release %v: %w", k, err)
	}
	switch s.reply.code {
	case inventory.CodeOK:
		return inventory.Result{Code: inventory.CodeOK, Count: s.reply.value}, nil
	case inventory.CodeNotFound:
		return inventory.Result{Code: inventory.CodeNotFound}, nil
	case inventory.CodeOverflow:
		return inventory.Result{Code: inventory.CodeOverflow, Detail: "release would carry the count past 4611686018427387903"}, nil
	}
	return inventory.Result{}, fmt.Errorf("tarantool: release %v: unexpected reply code %v", k, s.reply.code)
}

// ConflictRetries is the number of transaction conflicts the server retried
// for this session (vinyl only; memtx never conflicts here).
func (s *session) ConflictRetries() int64 { return s.conflicts }

// Close does nothing: the connection is the Store's, closed by Store.Close.
func (s *session) Close() error { return nil }

// callArgs encodes the arguments of allot.capture and allot.release: some
// strings, then n. A custom encoder avoids boxing each argument in an
// []any on the hot path.
type callArgs struct {
	strings    [5]string
	stringsLen int
	n          int64
}

func (a *callArgs) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(a.stringsLen + 1); err != nil {
		return err
	}
	for _, s := range a.strings[:a.stringsLen] {
		if err := enc.EncodeString(s); err != nil {
			return err
		}
	}
	return enc.EncodeInt(a.n)
}

// callReply decodes the reply of allot.capture or allot.release: one
// return value, a flat array {code, conflicts, ...}, where ... is
// warehouse/take pairs for a capture, the available total for an
// insufficient capture, or the new count for a release.
type callReply struct {
	capture   bool // set by the caller: decode lines on success
	code      inventory.Code
	conflicts int64
	value     int64
	lines     []inventory.Line
}

func (r *callReply) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("reply has %d values, want 1", n)
	}
	if n, err = dec.DecodeArrayLen(); err != nil {
		return err
	}
	if n < 2 {
		return fmt.Errorf("reply array has %d elements, want at least 2", n)
	}
	code, err := dec.DecodeUint8()
	if err != nil {
		return err
	}
	r.code = inventory.Code(code)
	if r.conflicts, err = dec.DecodeInt64(); err != nil {
		return err
	}
	rest := n - 2
	if r.capture && r.code == inventory.CodeOK {
		return r.decodeLines(dec, rest)
	}
	switch rest {
	case 0:
		return nil
	case 1:
		r.value, err = dec.DecodeInt64()
		return err
	}
	return fmt.Errorf("reply with code %v has %d values after the code", r.code, rest)
}

func (r *callReply) decodeLines(dec *msgpack.Decoder, n int) error {
	if n%2 != 0 {
		return fmt.Errorf("capture reply has an odd %d values after the code", n)
	}
	for range n / 2 {
		w, err := dec.DecodeString()
		if err != nil {
			return err
		}
		take, err := dec.DecodeInt64()
		if err != nil {
			return err
		}
		r.lines = append(r.lines, inventory.Line{Warehouse: w, Count: take})
	}
	return nil
}
