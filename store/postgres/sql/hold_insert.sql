-- Claim a hold id inside the hold's transaction. No row back: the id
-- exists (a repeat or a mismatch; a concurrent first attempt is waited for).
INSERT INTO holds (id, state, expires_at, cart) VALUES ($1, 1, 0, $2)
ON CONFLICT (id) DO NOTHING
RETURNING 1
