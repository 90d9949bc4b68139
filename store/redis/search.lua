-- search: case-insensitive title-prefix search over the catalog.
--
-- KEYS[1]  the index: a sorted set, every score 0, members
--          "<folded title>\0<sku>\0<folded brand>", so that ZRANGEBYLEX
--          orders them by folded title bytes, then SKU (the contract's
--          order: no title or SKU holds a NUL, and SKUs are unique), and
--          the brand filter reads the member alone.
-- ARGV[1]  the prefix, folded by the caller (catalog.Fold)
-- ARGV[2]  the brand prefix, folded, or "" for none
-- ARGV[3]  offset   ARGV[4] limit
-- ARGV[5]  the prefix of the record hashes' keys (fields t = title,
--          b = brand, a = the SKU's available units)
--
-- Returns an array of {sku, title, brand, available (a decimal string)}.
-- A title-only search is one ZRANGEBYLEX ... LIMIT offset limit over
-- [prefix, prefix.."\255"): no valid UTF-8 holds the byte 0xFF, so every
-- member with the prefix sorts inside it and none after. With a brand
-- prefix, members are read in chunks from the range and filtered by the
-- folded brand, until offset + limit have matched or the range ends.
-- Record keys are not in KEYS: fine on one server, not on a cluster.
local idx = KEYS[1]
local prefix, brand = ARGV[1], ARGV[2]
local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local records = ARGV[5]
local lo, hi = '[' .. prefix, '(' .. prefix .. '\255'
local out = {}

-- split returns a member's SKU and folded brand.
local function split(member)
  local a = string.find(member, '\0', 1, true)
  local b = string.find(member, '\0', a + 1, true)
  return string.sub(member, a + 1, b - 1), string.sub(member, b + 1)
end

local function emit(sku)
  local f = redis.call('HMGET', records .. sku, 't', 'b', 'a')
  out[#out + 1] = {sku, f[1], f[2], f[3]}
end

if brand == '' then
  for _, m in ipairs(redis.call('ZRANGEBYLEX', idx, lo, hi, 'LIMIT', offset, limit)) do
    emit((split(m)))
  end
  return out
end

local chunk, pos, skip = 256, 0, offset
while true do
  local ms = redis.call('ZRANGEBYLEX', idx, lo, hi, 'LIMIT', pos, chunk)
  for _, m in ipairs(ms) do
    local sku, bf = split(m)
    if string.sub(bf, 1, #brand) == brand then
      if skip > 0 then
        skip = skip - 1
      else
        emit(sku)
        if #out >= limit then return out end
      end
    end
  end
  if #ms < chunk then return out end
  pos = pos + chunk
end
