-- A release: one atomic statement, through the primary key (see
-- capture_lock.sql). LAST_INSERT_ID(expr) hands the new count back in the
-- OK packet, so no second statement reads it. No row is affected when the
-- row is unknown or the count would pass 4611686018427387903 (2^62-1);
-- row_count.sql tells the two apart.
UPDATE `{{.Table}}` FORCE INDEX (PRIMARY) SET count = LAST_INSERT_ID(count + ?)
WHERE sku = ? AND warehouse = ? AND cond = ? AND source = ?
  AND count <= 4611686018427387903 - ?
