-- action: a saga branch's action, capturing one group's summed demand of an
-- order, with dtm's sub-transaction barrier done in the same script.
--
-- KEYS[1]  the branch's action record (its outcome, kept for retention)
-- KEYS[2]  the branch's compensation mark
-- KEYS[3]  the group's warehouse index (store/redis's layout)
-- ARGV[1], ARGV[2]  the row key before and after the warehouse
-- ARGV[3..5]  sku, condition, source (for the reply lines)
-- ARGV[6]  n (the group's summed demand), ARGV[7] its first line's index
-- ARGV[8]  the retention in ms
--
-- Barrier: a compensation that came first (KEYS[2] exists) makes the
-- action a no-op ('S', suspended); a repeated action returns its first
-- outcome. Outcome records: 'I' FS first FS available (insufficient: the
-- saga must roll back), or 'O' then, per warehouse taken, row key RS take
-- RS reply line (sku FS warehouse FS condition FS source FS take) LS.
local FS, RS, LS = '\31', '\30', '\29'
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 'S'
end
local done = redis.call('GET', KEYS[1])
if done then
  return done
end
local n = tonumber(ARGV[6])
local remaining = n
local keys, takes, names = {}, {}, {}
local warehouses = redis.call('ZRANGE', KEYS[3], 0, -1)
for i = 1, #warehouses do
  if remaining == 0 then
    break
  end
  local key = ARGV[1] .. warehouses[i] .. ARGV[2]
  local count = tonumber(redis.call('HGET', key, 'c') or '0')
  if count > 0 then
    local take = remaining
    if count < take then
      take = count
    end
    keys[#keys + 1] = key
    takes[#takes + 1] = take
    names[#names + 1] = warehouses[i]
    remaining = remaining - take
  end
end
local rec
if remaining > 0 then
  rec = 'I' .. FS .. ARGV[7] .. FS .. string.format('%.0f', n - remaining)
else
  local parts = {'O'}
  for i = 1, #keys do
    redis.call('HINCRBY', keys[i], 'c', -takes[i])
    local line = ARGV[3] .. FS .. names[i] .. FS .. ARGV[4] .. FS .. ARGV[5] .. FS .. string.format('%.0f', takes[i])
    parts[#parts + 1] = keys[i] .. RS .. string.format('%.0f', takes[i]) .. RS .. line .. LS
  end
  rec = table.concat(parts)
end
redis.call('SET', KEYS[1], rec, 'PX', ARGV[8])
return rec
