-- order: take a cart, all or nothing (after cart.lua). With a key
-- (ARGV[1] not empty), KEYS[1] remembers the cart and the first reply,
-- whatever it was, for the retention window (SET NX PX): a repeat of the
-- same cart gets it again, another cart 'M'.
if ARGV[1] ~= '' then
  local v = redis.call('GET', KEYS[1])
  if v then
    local cut = string.find(v, LS, 1, true)
    if string.sub(v, 1, cut - 1) ~= ARGV[3] then
      return 'M'
    end
    return string.sub(v, cut + 1)
  end
end
local takes, first, available = allocate()
local r
if takes then
  apply(takes)
  r = reply(0, 0, 0, 0, takes)
else
  r = reply(1, 0, first, available, {})
end
if ARGV[1] ~= '' then
  redis.call('SET', KEYS[1], ARGV[3] .. LS .. r, 'NX', 'PX', RETENTION_MS)
end
return r
