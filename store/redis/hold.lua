-- hold: reserve a cart under a hold id, all or nothing (after cart.lua).
--
-- The hold's hash KEYS[1] is its idempotency key: if it exists, the same
-- cart gets the remembered reply and another cart 'M' (mismatch). Else the
-- groups are allocated; a short group refuses the whole cart (nothing
-- written, the id stays free). A hold writes its hash (s = 1 held, e =
-- deadline, cart, reply, ret = what to give back) and its deadline into
-- KEYS[2], where sweep.lua finds it. The deadline is the server's clock.
local s = redis.call('HGET', KEYS[1], 's')
if s then
  if redis.call('HGET', KEYS[1], 'cart') ~= ARGV[3] then
    return 'M'
  end
  return redis.call('HGET', KEYS[1], 'reply')
end
local takes, first, available = allocate()
if not takes then
  return reply(1, 0, first, available, {})
end
apply(takes)
local expires = now_ms() + tonumber(ARGV[2])
local r = reply(0, expires, 0, 0, takes)
redis.call('HSET', KEYS[1], 's', 1, 'e', num(expires), 'cart', ARGV[3], 'reply', r, 'ret', returns(takes))
redis.call('ZADD', KEYS[2], expires, ARGV[1])
return r
