-- Cancel's first step: lock the hold, and tell whether its deadline
-- passed (a held hold past it is expired, not cancelled, even before the
-- sweeper comes: hold_confirm.sql already answers expired for it).
SELECT state, expires_at <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
FROM holds WHERE id = $1 FOR UPDATE
