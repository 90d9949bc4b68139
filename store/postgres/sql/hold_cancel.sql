-- Cancel's last step: state $2 is cancelled, or expired for a hold past
-- its deadline (hold_lock.sql).
UPDATE holds SET state = $2 WHERE id = $1
