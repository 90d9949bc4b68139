-- sweep (after finish.lua): expire up to ARGV[1] holds whose deadline
-- passed by the server's clock, oldest first, giving their units back.
-- KEYS[1] is unused (the layout of the other scripts), KEYS[2] the
-- deadlines; ARGV[2] the prefix of a hold's hash key. Reply: how many.
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now_ms(), 'LIMIT', 0, tonumber(ARGV[1]))
for i = 1, #due do
  local hold = ARGV[2] .. due[i]
  if redis.call('HGET', hold, 's') == '1' then
    give_back(hold)
    finish(hold, due[i], 4)
  else
    redis.call('ZREM', KEYS[2], due[i])
  end
end
return #due
