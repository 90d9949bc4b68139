SELECT cart, reply FROM order_keys WHERE key = $1
