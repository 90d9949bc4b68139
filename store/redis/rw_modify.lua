-- rw_modify: workload rw's locked modify. Adds ARGV[1] to every key in
-- KEYS, read and written inside one script: Redis runs a script alone, so
-- nothing can come between the read and the write. All or nothing: a
-- missing key is an error before anything is written.
local delta = tonumber(ARGV[1])
local values = {}
for i = 1, #KEYS do
    local v = redis.call('GET', KEYS[i])
    if not v then
        return redis.error_reply('NOTFOUND ' .. KEYS[i])
    end
    values[i] = tonumber(v)
end
for i = 1, #KEYS do
    redis.call('SET', KEYS[i], values[i] + delta)
end
return #KEYS
