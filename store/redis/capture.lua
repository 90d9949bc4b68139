-- capture: take ARGV[3] units of one group across its warehouses, all or
-- nothing, in ascending byte order of the warehouse id.
--
-- KEYS[1]  the group's index: a sorted set whose members are warehouse ids,
--          all with score 0, so ZRANGE returns them in byte (memcmp) order.
-- ARGV[1]  the row key up to the warehouse ("allot:r" US sku US)
-- ARGV[2]  the row key after the warehouse (US condition US source)
-- ARGV[3]  n, 1..2^31-1
--
-- Reply: {0, warehouse1, take1, warehouse2, take2, ...} on success,
--        {1, available} when the group holds fewer than n units.
--
-- Numbers: Lua numbers are doubles. A count may be up to 2^62-1, which a
-- double does not hold exactly, so the script never does arithmetic on a
-- count itself. tonumber(count) is only compared with `remaining`, which is
-- below 2^31: a count of 2^53 or more still rounds to a double of 2^53 or
-- more, so the comparison is right; a count smaller than `remaining` is
-- exact, and only then is it used as a take. The decrement is done by
-- HINCRBY, in Redis's own 64-bit integers. When the group is insufficient
-- every count seen was below n, so the available total n - remaining is
-- exact too.
local warehouses = redis.call('ZRANGE', KEYS[1], 0, -1)
local n = tonumber(ARGV[3])
local remaining = n
local keys, takes, names = {}, {}, {}
for i = 1, #warehouses do
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
    if remaining == 0 then
      break
    end
  end
end
if remaining > 0 then
  return {1, n - remaining}
end
local reply = {0}
for i = 1, #keys do
  redis.call('HINCRBY', keys[i], 'c', -takes[i])
  reply[#reply + 1] = names[i]
  reply[#reply + 1] = takes[i]
end
return reply
