-- The last step of a hold: its lines and its deadline by the server's
-- clock, in the same transaction as the take.
WITH lines AS (
    INSERT INTO hold_lines (hold, pos, sku, warehouse, cond, source, count)
    SELECT $1, t.pos, t.sku, t.warehouse, t.cond, t.source, t.n
    FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[]) WITH ORDINALITY AS t(sku, warehouse, cond, source, n, pos)
)
UPDATE holds SET expires_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $2
WHERE id = $1
RETURNING expires_at
