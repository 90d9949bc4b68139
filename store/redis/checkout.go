package redis

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"allot/inventory"
	"allot/store"
)

// Checkout the way a Redis shop does it (store.Checkouter, store.Orderer):
// one Lua script per call, so that a cart is allocated and taken
// atomically; a hold is a hash under its id (the id is its own
// idempotency key), its deadline a member of one sorted set, and a sweeper
// in the bench process runs sweep.lua every SweepInterval to expire those
// past the server's clock. An order's idempotency key is a string set with
// SET NX inside order.lua, holding the cart and the first reply for the
// retention window.
//
// The scripts name the group indexes in KEYS but build row keys from them,
// like capture.lua: right for one server, not for Redis Cluster (the keys
// carry no hash tag, as the rows' keys never did).

var (
	//go:embed cart.lua
	cartLua string
	//go:embed hold.lua
	holdLua string
	//go:embed order.lua
	orderLua string
	//go:embed finish.lua
	finishLua string
	//go:embed confirm.lua
	confirmLua string
	//go:embed cancel.lua
	cancelLua string
	//go:embed sweep.lua
	sweepLua string

	holdScript    = goredis.NewScript(cartLua + holdLua)
	orderScript   = goredis.NewScript(cartLua + orderLua)
	confirmScript = goredis.NewScript(finishLua + confirmLua)
	cancelScript  = goredis.NewScript(finishLua + cancelLua)
	sweepScript   = goredis.NewScript(finishLua + sweepLua)
)

// Keys of checkout.
const (
	holdPrefix   = keyPrefix + "h" + separator
	orderPrefix  = keyPrefix + "k" + separator
	deadlinesKey = keyPrefix + "deadlines"
)

// mismatchReply is what hold.lua and order.lua answer for a used id or key
// with another cart.
const mismatchReply = "M"

// cartArgs builds the scripts' KEYS and ARGV for a cart (see cart.lua).
func cartArgs(main, id string, ttl time.Duration, lines []store.CartLine) (keys []string, args []any) {
	demand := store.SumCart(lines, nil)
	keys = make([]string, 0, 2+len(demand))
	keys = append(keys, main, deadlinesKey)
	args = make([]any, 0, 4+7*len(demand))
	args = append(args, id, ttl.Milliseconds(), store.EncodeCart(lines), len(demand))
	for _, d := range demand {
		keys = append(keys, groupKey(d.Group))
		before, after := rowKeyAround(d.Group)
		args = append(args, before, after, d.Group.SKU, d.Group.Condition, d.Group.Source, d.N, d.First)
	}
	return keys, args
}

// runCart runs a cart script and decodes its reply into res.
func (s *session) runCart(ctx context.Context, sc *goredis.Script, what, main, id string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	keys, args := cartArgs(main, id, ttl, lines)
	text, err := sc.Run(ctx, s.client, keys, args...).Text()
	if err != nil {
		return fmt.Errorf("redis: %s %s: %w", what, id, err)
	}
	if err := decodeCartReply(text, what, id, res); err != nil {
		return fmt.Errorf("redis: %s %s: %w", what, id, err)
	}
	return nil
}

// decodeCartReply decodes what hold.lua or order.lua answered into res.
func decodeCartReply(text, what, id string, res *store.HoldResult) error {
	if text == mismatchReply {
		res.Reset()
		res.Code, res.Detail = store.CheckoutMismatch, what+" "+id+" was used with other lines"
		return nil
	}
	return store.DecodeReply(text, res)
}

// Hold runs hold.lua.
func (s *session) Hold(ctx context.Context, hold string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	if d := store.CheckHold(hold, ttl, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	return s.runCart(ctx, holdScript, "hold", holdPrefix+hold, hold, ttl, lines, res)
}

// Order runs order.lua.
func (s *session) Order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	if d := store.CheckOrder(key, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	return s.runCart(ctx, orderScript, "order", orderPrefix+key, key, 0, lines, res)
}

func (s *session) finish(ctx context.Context, sc *goredis.Script, what, hold string) (store.CheckoutCode, error) {
	if d := inventory.CheckID(hold); d != "" {
		return store.CheckoutInvalid, nil
	}
	code, err := sc.Run(ctx, s.client, []string{holdPrefix + hold, deadlinesKey}, hold).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis: %s %s: %w", what, hold, err)
	}
	return store.CheckoutCode(code), nil
}

// Confirm runs confirm.lua.
func (s *session) Confirm(ctx context.Context, hold string) (store.CheckoutCode, error) {
	return s.finish(ctx, confirmScript, "confirm", hold)
}

// Cancel runs cancel.lua.
func (s *session) Cancel(ctx context.Context, hold string) (store.CheckoutCode, error) {
	return s.finish(ctx, cancelScript, "cancel", hold)
}

// HoldGet reads the hold's hash. A hold past its deadline that the
// sweeper has not reached yet is still held.
func (s *session) HoldGet(ctx context.Context, hold string, info *store.HoldInfo) (bool, error) {
	vals, err := s.client.HMGet(ctx, holdPrefix+hold, "s", "reply").Result()
	if err != nil {
		return false, fmt.Errorf("redis: hold.get %s: %w", hold, err)
	}
	state, ok1 := vals[0].(string)
	text, ok2 := vals[1].(string)
	if !ok1 || !ok2 {
		return false, nil
	}
	n, err := strconv.Atoi(state)
	if err != nil {
		return false, fmt.Errorf("redis: hold.get %s: state %q", hold, state)
	}
	var res store.HoldResult
	res.Lines = info.Lines[:0]
	if err := store.DecodeReply(text, &res); err != nil {
		return false, fmt.Errorf("redis: hold.get %s: %w", hold, err)
	}
	info.State, info.ExpiresAtMS, info.Lines = store.HoldState(n), res.ExpiresAtMS, res.Lines
	return true, nil
}

// PrepareCheckout loads the scripts and starts the sweeper on a client of
// its own. Load already removed every hold and key (they are "allot:"
// keys).
func (s *Store) PrepareCheckout(ctx context.Context, cfg store.CheckoutConfig) (func() error, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, sc := range []*goredis.Script{holdScript, orderScript, confirmScript, cancelScript, sweepScript} {
		if err := sc.Load(ctx, s.client).Err(); err != nil {
			return nil, fmt.Errorf("redis: loading a checkout script: %w", err)
		}
	}
	client := goredis.NewClient(clientOptions(s.cfg, 1))
	sweep := func(ctx context.Context) (int, error) {
		n, err := sweepScript.Run(ctx, client, []string{"", deadlinesKey}, cfg.SweepBatch, holdPrefix).Int()
		if err != nil {
			return 0, fmt.Errorf("redis: sweeper: %w", err)
		}
		return n, nil
	}
	return store.StartSweeper(cfg, sweep, func() { client.Close() }), nil
}

var (
	_ store.Checkouter       = (*session)(nil)
	_ store.Orderer          = (*session)(nil)
	_ store.CheckoutPreparer = (*Store)(nil)
)
