UPDATE order_keys SET reply = $2 WHERE key = $1
