package redis

import (
	"context"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"allot/inventory"
)

// Reply codes of the scripts: the first element of every reply. They are
// the inventory codes, so a reply maps to a Result without a table.
const (
	replyOK           = int64(inventory.CodeOK)
	replyInsufficient = int64(inventory.CodeInsufficient)
	replyNotFound     = int64(inventory.CodeNotFound)
	replyOverflow     = int64(inventory.CodeOverflow)
)

// session is one worker's connection: a client whose pool holds one.
type session struct {
	client *goredis.Client
	store  *Store
}

func (s *session) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	op := inventory.Capture(g, n)
	if d := op.Check(); d != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
	}
	before, after := rowKeyAround(g)
	reply, err := s.store.capture.Run(ctx, s.client, []string{groupKey(g)}, before, after, n).Slice()
	if err != nil {
		return inventory.Result{}, fmt.Errorf("redis: capture %v: %w", g, err)
	}
	code, err := replyCode(reply)
	if err != nil {
		return inventory.Result{}, fmt.Errorf("redis: capture %v: %w", g, err)
	}
	switch code {
	case replyInsufficient:
		if len(reply) != 2 {
			return inventory.Result{}, fmt.Errorf("redis: capture %v: insufficient reply of %d elements", g, len(reply))
		}
		available, _ := reply[1].(int64)
		return inventory.Result{Code: inventory.CodeInsufficient, Available: available}, nil
	case replyOK:
		lines = lines[:0]
		for i := 1; i+1 < len(reply); i += 2 {
			w, ok1 := reply[i].(string)
			take, ok2 := reply[i+1].(int64)
			if !ok1 || !ok2 {
				return inventory.Result{}, fmt.Errorf("redis: capture %v: malformed line %v %v", g, reply[i], reply[i+1])
			}
			lines = append(lines, inventory.Line{Warehouse: w, Count: take})
		}
		return inventory.Result{Code: inventory.CodeOK, Lines: lines}, nil
	}
	return inventory.Result{}, fmt.Errorf("redis: capture %v: unexpected reply code %d", g, code)
}

func (s *session) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	op := inventory.Release(k, n)
	if d := op.Check(); d != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
	}
	// The largest count that may still take n, computed here in int64 so
	// that the script compares strings and never rounds (release.lua).
	limit := strconv.FormatInt(inventory.CountMax-n, 10)
	reply, err := s.store.release.Run(ctx, s.client, []string{rowKey(k)}, n, limit).Slice()
	if err != nil {
		return inventory.Result{}, fmt.Errorf("redis: release %v: %w", k, err)
	}
	code, err := replyCode(reply)
	if err != nil {
		return inventory.Result{}, fmt.Errorf("redis: release %v: %w", k, err)
	}
	switch code {
	case replyNotFound:
		return inventory.Result{Code: inventory.CodeNotFound}, nil
	case replyOverflow:
		return inventory.Result{Code: inventory.CodeOverflow, Detail: "release would carry the count past 4611686018427387903"}, nil
	case replyOK:
		str, ok := reply[len(reply)-1].(string)
		if len(reply) != 2 || !ok {
			return inventory.Result{}, fmt.Errorf("redis: release %v: malformed reply %v", k, reply)
		}
		count, err := strconv.ParseInt(str, 10, 64)
		if err != nil {
			return inventory.Result{}, fmt.Errorf("redis: release %v: new count: %w", k, err)
		}
		return inventory.Result{Code: inventory.CodeOK, Count: count}, nil
	}
	return inventory.Result{}, fmt.Errorf("redis: release %v: unexpected reply code %d", k, code)
}

// replyCode returns the code a script's reply starts with.
func replyCode(reply []any) (int64, error) {
	if len(reply) == 0 {
		return 0, fmt.Errorf("empty script reply")
	}
	code, ok := reply[0].(int64)
	if !ok {
		return 0, fmt.Errorf("script reply starts with %T, not a code", reply[0])
	}
	return code, nil
}

// Close closes the session's connection.
func (s *session) Close() error {
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("redis: closing a session: %w", err)
	}
	return nil
}
