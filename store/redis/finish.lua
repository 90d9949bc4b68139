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

-- above_max reports whether the decimal count c (no leading zeros, as
-- Redis writes integers) is above COUNT_MAX, exactly: same-length digit
-- strings compare as numbers. HINCRBY's own integer reply reaches Lua as
-- a double, 512 apart near 2^62, so every count from 2^62-256 up read as
-- 2^62: comparing it capped counts that were still below the bound.
local function above_max(c)
  return #c > #COUNT_MAX or (#c == #COUNT_MAX and c > COUNT_MAX)
end

-- give_back returns a hold's units to the rows they left. A count pushed
-- past 2^62-1 is capped there (HINCRBY cannot overflow: 2^62-1 plus a
-- hold's units is far below 2^63).
local function give_back(hold)
  local ret = redis.call('HGET', hold, 'ret') or ''
  for key, n in string.gmatch(ret, '([^' .. RS .. ']+)' .. RS .. '(%d+)' .. LS) do
    redis.call('HINCRBY', key, 'c', n)
    if above_max(redis.call('HGET', key, 'c')) then
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
