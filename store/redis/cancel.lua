-- cancel (after finish.lua). KEYS[1] the hold's hash, KEYS[2] the
-- deadlines; ARGV[1] the hold id. A held hold gives its units back. One
-- past its deadline that the sweeper has not reached is expired, not
-- cancelled: confirm.lua already answers expired for it, and must go on
-- answering so.
local s = redis.call('HGET', KEYS[1], 's')
if not s then
  return 2
end
if s == '1' then
  local state = 3
  if tonumber(redis.call('HGET', KEYS[1], 'e')) <= now_ms() then
    state = 4
  end
  give_back(KEYS[1])
  finish(KEYS[1], ARGV[1], state)
  return 0
elseif s == '2' then
  return 6
end
return 0
