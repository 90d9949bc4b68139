-- rw_insert: workload rw's transactional insert. KEYS are the records'
-- keys, ARGV their values. All or nothing: if any key exists, nothing is
-- written and the reply is an error naming it (Redis has no rollback, so
-- the check comes first).
for i = 1, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then
        return redis.error_reply('EXISTS ' .. KEYS[i])
    end
end
for i = 1, #KEYS do
    redis.call('SET', KEYS[i], ARGV[i])
end
return #KEYS
