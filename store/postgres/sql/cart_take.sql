-- Take an allocation's units from rows locked by cart_lock.
UPDATE rows r SET count = r.count - t.n
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS t(sku, warehouse, cond, source, n)
WHERE r.sku = t.sku AND r.warehouse = t.warehouse AND r.cond = t.cond AND r.source = t.source
