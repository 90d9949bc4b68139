-- confirm (after finish.lua). KEYS[1] the hold's hash, KEYS[2] the
-- deadlines; ARGV[1] the hold id. A held hold past its deadline is expired
-- even if the sweeper has not come yet (the sweeper gives its units back).
local s = redis.call('HGET', KEYS[1], 's')
if not s then
  return 2
end
if s == '1' then
  if tonumber(redis.call('HGET', KEYS[1], 'e')) <= now_ms() then
    return 4
  end
  finish(KEYS[1], ARGV[1], 2)
  return 0
elseif s == '2' then
  return 0
elseif s == '3' then
  return 5
end
return 4
