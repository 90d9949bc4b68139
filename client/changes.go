package client

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"allot/changes/event"
)

// TrimmedError is the server's -TRIMMED reply to CHANGES: the cursor is
// older than the journal keeps. Resume from Oldest-1 (losing the events in
// between) or rebuild from a full read of the state.
type TrimmedError struct {
	Oldest uint64
}

func (e *TrimmedError) Error() string {
	return fmt.Sprintf("client: change stream trimmed; the oldest seq still readable is %d", e.Oldest)
}

// FutureError is the server's refusal of a CHANGES cursor past its newest
// seq (-ERR after <after> is past the newest seq <newest>): the cursor is
// another server's, or the server lost events it had served. Reading on
// from Newest would skip the events up to After.
type FutureError struct {
	After, Newest uint64
}

func (e *FutureError) Error() string {
	return fmt.Sprintf("client: change stream cursor %d is past the newest seq %d", e.After, e.Newest)
}

// Changes sends CHANGES <after> COUNT <count> BLOCK <block> and returns the
// events, oldest first (none when the block ran out). count 0 means the
// server's default; block is rounded down to milliseconds. ctx's deadline,
// if any, must leave room for the block.
func (cn *Conn) Changes(ctx context.Context, after uint64, count int, block time.Duration) ([]event.Event, error) {
	if err := cn.begin(ctx); err != nil {
		return nil, err
	}
	args := []string{"CHANGES", strconv.FormatUint(after, 10)}
	if count > 0 {
		args = append(args, "COUNT", strconv.Itoa(count))
	}
	if block > 0 {
		args = append(args, "BLOCK", strconv.FormatInt(block.Milliseconds(), 10))
	}
	cn.out = appendCommand(cn.out[:0], args...)
	if err := cn.flush(); err != nil {
		return nil, cn.fail(ctx, err)
	}
	line, err := cn.line()
	if err != nil {
		return nil, cn.fail(ctx, err)
	}
	if len(line) > 0 && line[0] == '-' {
		err := changesError(string(line[1:]))
		if se, ok := err.(*ServerError); ok && refusesConnection(se.Msg) {
			return nil, cn.fail(ctx, se) // the server closed the connection after it
		}
		return nil, err
	}
	n, ok := header(line, '*')
	if !ok || n < 0 {
		return nil, cn.fail(ctx, unexpected("CHANGES", line))
	}
	events := make([]event.Event, 0, n)
	for i := 0; i < n; i++ {
		line, err := cn.line()
		if err != nil {
			return nil, cn.fail(ctx, err)
		}
		b, err := cn.bulk(line)
		if err != nil {
			return nil, cn.fail(ctx, err)
		}
		ev, err := event.ParseEvent(b)
		if err != nil {
			return nil, cn.fail(ctx, &protocolError{msg: "client: CHANGES event is not JSON: " + err.Error()})
		}
		events = append(events, ev)
	}
	return events, nil
}

// changesError turns an error reply to CHANGES into a *TrimmedError, a
// *FutureError or a *ServerError of its class (replyError).
func changesError(msg string) error {
	if rest, ok := strings.CutPrefix(msg, "TRIMMED oldest "); ok {
		if oldest, err := strconv.ParseUint(rest, 10, 64); err == nil {
			return &TrimmedError{Oldest: oldest}
		}
	}
	var after, newest uint64
	if _, err := fmt.Sscanf(msg, "ERR after %d is past the newest seq %d", &after, &newest); err == nil &&
		msg == fmt.Sprintf("ERR after %d is past the newest seq %d", after, newest) {
		return &FutureError{After: after, Newest: newest}
	}
	return replyError(msg)
}

// Changes reads the change stream on a pooled connection (see
// Conn.Changes). A refused or broken read is not retried here: the caller
// resumes from its own cursor.
func (c *Client) Changes(ctx context.Context, after uint64, count int, block time.Duration) (evs []event.Event, err error) {
	err = c.with(ctx, func(cn *Conn) error {
		evs, err = cn.Changes(ctx, after, count, block)
		return err
	})
	return evs, err
}
