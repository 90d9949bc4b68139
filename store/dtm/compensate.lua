-- compensate: a saga branch's compensation, releasing what its action
-- took, with the barrier in the same script. KEYS as action.lua's first
-- two; ARGV[1] the retention in ms.
--
-- A repeated compensation does nothing ('D'); one whose action never ran
-- only leaves its mark, so that a late action does nothing either ('N');
-- else the units the action took go back to their rows ('R').
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then
  return 'D'
end
local rec = redis.call('GET', KEYS[1])
if not rec then
  return 'N'
end
if string.sub(rec, 1, 1) == 'O' then
  for key, take in string.gmatch(string.sub(rec, 2), '([^\30\29]+)\30(%d+)\30[^\29]*\29') do
    redis.call('HINCRBY', key, 'c', take)
  end
end
return 'R'
