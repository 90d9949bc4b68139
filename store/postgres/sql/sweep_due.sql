-- The sweeper's first step: claim up to $1 live holds past their deadline,
-- oldest first, skipping any a cancel or another sweeper has locked, and
-- mark them expired (the units go back in the same transaction).
WITH due AS (
    SELECT id FROM holds
    WHERE state = 1 AND expires_at <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    ORDER BY expires_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE holds h SET state = 4 FROM due WHERE h.id = due.id
RETURNING h.id
