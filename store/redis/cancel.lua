-- cancel (after finish.lua). KEYS[1] the hold's hash, KEYS[2] the
-- deadlines; ARGV[1] the hold id. A held hold gives its units back.
local s = redis.call('HGET', KEYS[1], 's')
if not s then
  return 2
end
if s == '1' then
  give_back(KEYS[1])
  finish(KEYS[1], ARGV[1], 3)
  return 0
elseif s == '2' then
  return 6
end
return 0
