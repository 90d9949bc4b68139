-- search: case-insensitive title-prefix search over the catalog.
--
-- KEYS[1]  the index: a sorted set, every score 0, members
--          "<folded title>\0<sku>\0<folded brand>", so that ZRANGEBYLEX
--          orders them by folded title bytes, then SKU (the contract's
--          order: no title or SKU holds a NUL, and SKUs are unique), and
--          the brand filter reads the member alone.
-- KEYS[2]  the records: a hash, field = SKU, value
--          "<title>\0<brand>\0<available units, decimal>".
-- ARGV[1]  the prefix, folded by the caller (catalog.Fold)
-- ARGV[2]  the brand prefix, folded, or "" for none
-- ARGV[3]  offset   ARGV[4] limit
--
-- Returns an array of {sku, title, brand, available (a decimal string)}.
-- A title-only search is one ZRANGEBYLEX ... LIMIT offset limit over
-- [prefix, prefix.."\255"): no valid UTF-8 holds the byte 0xFF, so every
-- member with the prefix sorts inside it and none after. With a brand
-- prefix, members are read in chunks from the range and filtered by the
-- folded brand, until offset + limit have matched or the range ends; each
-- chunk starts past the last member of the one before (an exclusive
-- bound), not at an offset into the range, which ZRANGEBYLEX would walk
-- again from the range's start for every chunk. The matches' records are
-- then read with one HMGET. Both keys share a hash tag, so the script
-- also runs on a cluster.
local idx, records = KEYS[1], KEYS[2]
local prefix, brand = ARGV[1], ARGV[2]
local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local lo, hi = '[' .. prefix, '(' .. prefix .. '\255'
local skus = {}

-- split returns a member's SKU and folded brand.
local function split(member)
  local a = string.find(member, '\0', 1, true)
  local b = string.find(member, '\0', a + 1, true)
  return string.sub(member, a + 1, b - 1), string.sub(member, b + 1)
end

if brand == '' then
  for _, m in ipairs(redis.call('ZRANGEBYLEX', idx, lo, hi, 'LIMIT', offset, limit)) do
    skus[#skus + 1] = (split(m))
  end
else
  local chunk, from, skip = 256, lo, offset
  local more = true
  while more do
    local ms = redis.call('ZRANGEBYLEX', idx, from, hi, 'LIMIT', 0, chunk)
    for _, m in ipairs(ms) do
      local sku, bf = split(m)
      if string.sub(bf, 1, #brand) == brand then
        if skip > 0 then
          skip = skip - 1
        else
          skus[#skus + 1] = sku
          if #skus >= limit then
            more = false
            break
          end
        end
      end
    end
    if #ms < chunk then
      more = false
    else
      from = '(' .. ms[#ms]
    end
  end
end

local out = {}
if #skus == 0 then return out end
local values = redis.call('HMGET', records, unpack(skus))
for i, sku in ipairs(skus) do
  local v = values[i]
  if not v then
    return redis.error_reply('catalog record ' .. sku .. ' is in the index but not in ' .. records)
  end
  local a = string.find(v, '\0', 1, true)
  local b = string.find(v, '\0', a + 1, true)
  out[i] = {sku, string.sub(v, 1, a - 1), string.sub(v, a + 1, b - 1), string.sub(v, b + 1)}
end
return out
