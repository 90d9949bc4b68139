-- Confirm a live hold. No row back: unknown, already finished, or past its
-- deadline (expired, even if the sweeper has not come yet).
UPDATE holds SET state = 2
WHERE id = $1 AND state = 1 AND expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
RETURNING 1
