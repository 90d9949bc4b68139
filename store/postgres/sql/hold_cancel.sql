UPDATE holds SET state = 3 WHERE id = $1
