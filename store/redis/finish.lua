-- finish.lua: what confirm.lua, cancel.lua and sweep.lua share; the
-- adapter prepends it to each. Hold states: 1 held, 2 confirmed,
-- 3 cancelled, 4 expired. Outcome codes are store.CheckoutCode values.
local RS, LS = '\30', '\29'
local RETENTION_MS = 86400000
local COUNT_MAX = '4611686018427387903'

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- give_back returns a hold's units to the rows they left. A count pushed
-- to 2^62 or more (a double compare: 2^62-1 itself reads as 2^62, and is
-- then set to itself) is capped at 2^62-1.
local function give_back(hold)
  local ret = redis.call('HGET', hold, 'ret') or ''
  for key, n in string.gmatch(ret, '([^' .. RS .. ']+)' .. RS .. '(%d+)' .. LS) do
    local v = redis.call('HINCRBY', key, 'c', n)
    if v >= 4611686018427387904 then
      redis.call('HSET', key, 'c', COUNT_MAX)
    end
  end
end

-- finish moves a held hold to state and forgets its deadline; the hash
-- is kept for the retention window.
local function finish(hold, id, state)
  redis.call('HSET', hold, 's', state)
  redis.call('ZREM', KEYS[2], id)
  redis.call('PEXPIRE', hold, RETENTION_MS)
end
