-- release: add ARGV[1] units to one row.
--
-- KEYS[1]  the row's hash (field c = count, p = price)
-- ARGV[1]  n, 1..2^31-1
-- ARGV[2]  CountMax - n in decimal, computed by the caller in int64: the
--          largest count the row may hold for the release to be allowed
--
-- Reply: {0, new count as a decimal string}, {2} for an unknown row,
--        {4} when the count would pass CountMax (2^62-1).
--
-- Numbers: counts up to 2^62-1 do not fit a double, so the overflow check
-- compares decimal strings exactly (by length, then in two halves of at
-- most 10 digits, each exact in a double), the addition is HINCRBY in
-- Redis's 64-bit integers, and the new count is read back with HGET as a
-- string, because HINCRBY's integer reply would reach Lua as a double.

-- greater reports whether decimal a > decimal b; both are non-negative and
-- without leading zeros, as Redis writes integers.
local function greater(a, b)
  if #a ~= #b then
    return #a > #b
  end
  local cut = #a - 9
  if cut > 0 then
    local ah, bh = tonumber(string.sub(a, 1, cut)), tonumber(string.sub(b, 1, cut))
    if ah ~= bh then
      return ah > bh
    end
  else
    cut = 0
  end
  return tonumber(string.sub(a, cut + 1)) > tonumber(string.sub(b, cut + 1))
end

local count = redis.call('HGET', KEYS[1], 'c')
if not count then
  return {2}
end
if greater(count, ARGV[2]) then
  return {4}
end
redis.call('HINCRBY', KEYS[1], 'c', ARGV[1])
return {0, redis.call('HGET', KEYS[1], 'c')}
