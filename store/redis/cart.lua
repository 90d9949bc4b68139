-- cart.lua: what hold.lua and order.lua share; the adapter prepends it to
-- each. Layout of their arguments:
--
-- KEYS[1]  the hold's hash (hold.lua) or the idempotency key (order.lua)
-- KEYS[2]  the deadlines sorted set (member hold id, score deadline ms)
-- KEYS[2+g]  group g's warehouse index, g = 1..G
-- ARGV[1]  hold id or idempotency key ("" for an order without one)
-- ARGV[2]  ttl in ms (hold.lua)
-- ARGV[3]  the cart's text (store.EncodeCart): a repeat must match it
-- ARGV[4]  G, the cart's distinct groups (same-group lines summed)
-- ARGV[5 + 7(g-1) ..]  group g: row key before and after the warehouse,
--          sku, condition, source, summed n, index of its first line
--
-- Replies are store.EncodeReply's text, built here: the Go side decodes
-- fresh replies and remembered ones alike. Numbers: n and available are
-- below 2^37 and deadlines below 2^53, exact in doubles; counts are only
-- compared with n (see capture.lua) and changed by HINCRBY.
local FS, RS, LS = '\31', '\30', '\29'
local RETENTION_MS = 86400000

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function num(x)
  return string.format('%.0f', x)
end

-- allocate returns the takes {rowkey, take, row text} of every group, in
-- group order, each group's warehouses ascending; or nil, the first short
-- line's index and its group's total.
local function allocate()
  local takes = {}
  for g = 1, tonumber(ARGV[4]) do
    local o = 4 + (g - 1) * 7
    local before, after = ARGV[o + 1], ARGV[o + 2]
    local sku, cond, src = ARGV[o + 3], ARGV[o + 4], ARGV[o + 5]
    local n, first = tonumber(ARGV[o + 6]), tonumber(ARGV[o + 7])
    local warehouses = redis.call('ZRANGE', KEYS[2 + g], 0, -1)
    local remaining = n
    for i = 1, #warehouses do
      if remaining == 0 then
        break
      end
      local key = before .. warehouses[i] .. after
      local count = tonumber(redis.call('HGET', key, 'c') or '0')
      if count > 0 then
        local take = remaining
        if count < take then
          take = count
        end
        takes[#takes + 1] = {key, take, sku .. FS .. warehouses[i] .. FS .. cond .. FS .. src}
        remaining = remaining - take
      end
    end
    if remaining > 0 then
      return nil, first, n - remaining
    end
  end
  return takes
end

local function apply(takes)
  for i = 1, #takes do
    redis.call('HINCRBY', takes[i][1], 'c', -takes[i][2])
  end
end

local function reply(code, expires, short, available, takes)
  local parts = {tostring(code), FS, num(expires), FS, tostring(short), FS, num(available), RS}
  for i = 1, #takes do
    parts[#parts + 1] = takes[i][3] .. FS .. num(takes[i][2]) .. RS
  end
  return table.concat(parts)
end

-- returns: the text cancel.lua and sweep.lua give back units from.
local function returns(takes)
  local parts = {}
  for i = 1, #takes do
    parts[#parts + 1] = takes[i][1] .. RS .. num(takes[i][2]) .. LS
  end
  return table.concat(parts)
end
