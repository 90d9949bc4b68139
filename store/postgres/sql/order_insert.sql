-- Claim an order's idempotency key inside the order's transaction. No row
-- back: the key was used (a concurrent first use is waited for).
INSERT INTO order_keys (key, cart, reply) VALUES ($1, $2, '')
ON CONFLICT (key) DO NOTHING
RETURNING 1
