package redis

import (
	"context"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"allot/store"
)

var _ store.CheckoutPipeliner = (*session)(nil)

// CheckoutPipeline sends every call as an EVALSHA of its script (hold.lua,
// confirm.lua, cancel.lua, loaded by PrepareCheckout) in one pipeline: one
// write, one round trip, each script still atomic on the server and run
// in the order sent. Each reply is decoded as Hold, Confirm and Cancel
// decode theirs; a call whose command failed gets that error as its Err.
// A script missing from the server's cache (NOSCRIPT: it was flushed) is
// loaded again for the repeat the caller makes.
func (s *session) CheckoutPipeline(ctx context.Context, calls []store.CheckoutCall) error {
	pipe := s.client.Pipeline()
	cmds := make([]*goredis.Cmd, len(calls))
	err := store.PrepareCalls(calls, func(i int, c *store.CheckoutCall) {
		if c.Kind == store.CallHold {
			keys, args := cartArgs(holdPrefix+c.Hold, c.Hold, c.TTL, c.Lines)
			cmds[i] = holdScript.EvalSha(ctx, pipe, keys, args...)
			return
		}
		sc := confirmScript
		if c.Kind == store.CallCancel {
			sc = cancelScript
		}
		cmds[i] = sc.EvalSha(ctx, pipe, []string{holdPrefix + c.Hold, deadlinesKey}, c.Hold)
	})
	if err != nil {
		return err
	}
	if pipe.Len() == 0 {
		return nil
	}
	// Exec's error is the first failed command's: each command's own is
	// read below.
	_, _ = pipe.Exec(ctx)
	noScript := false
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		c := &calls[i]
		if err := cmd.Err(); err != nil {
			c.Err = fmt.Errorf("redis: %s %s: %w", c.Kind, c.Hold, err)
			noScript = noScript || strings.HasPrefix(err.Error(), "NOSCRIPT")
			continue
		}
		if c.Kind == store.CallHold {
			text, err := cmd.Text()
			if err == nil {
				err = decodeCartReply(text, "hold", c.Hold, &c.Res)
			}
			if err != nil {
				c.Err = fmt.Errorf("redis: hold %s: %w", c.Hold, err)
				continue
			}
			c.Code = c.Res.Code
			continue
		}
		code, err := cmd.Int64()
		if err != nil {
			c.Err = fmt.Errorf("redis: %s %s: %w", c.Kind, c.Hold, err)
			continue
		}
		c.Code = store.CheckoutCode(code)
	}
	if noScript {
		for _, sc := range []*goredis.Script{holdScript, confirmScript, cancelScript} {
			if err := sc.Load(ctx, s.client).Err(); err != nil {
				return fmt.Errorf("redis: loading a checkout script again after NOSCRIPT: %w", err)
			}
		}
	}
	return nil
}
