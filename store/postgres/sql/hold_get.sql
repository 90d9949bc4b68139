SELECT state, expires_at, cart FROM holds WHERE id = $1
