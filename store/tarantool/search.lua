-- The search workload's server side: the catalog space and two search
-- procedures. The Go adapter evaluates this file over IPROTO when it loads
-- the catalog; it defines the global table `allot_search`.
--
-- Titles and brands are folded by Go (catalog.Fold, Unicode simple case
-- folding) into their own fields, and the index compares bytes (no
-- collation): Tarantool's unicode_ci collation is ICU's primary strength,
-- which also ignores accents ('é' matches 'e'), and Lua's string.lower
-- knows ASCII alone. Byte order is the contract's order.

local allot_search = {}

function allot_search.setup()
    local space = box.schema.space.create('allot_catalog', {
        engine = 'memtx',
        if_not_exists = true,
        format = {
            {name = 'sku', type = 'string'},
            {name = 'title', type = 'string'},
            {name = 'brand', type = 'string'},
            {name = 'title_folded', type = 'string'},
            {name = 'brand_folded', type = 'string'},
            {name = 'available', type = 'unsigned'},
        },
    })
    space:create_index('primary', {type = 'TREE', if_not_exists = true,
        parts = {{field = 'sku', type = 'string'}}})
    space:create_index('title', {type = 'TREE', if_not_exists = true,
        parts = {{field = 'title_folded', type = 'string'}, {field = 'sku', type = 'string'}}})
end

function allot_search.truncate()
    box.space.allot_catalog:truncate()
    return true
end

function allot_search.load(rows)
    local space = box.space.allot_catalog
    box.begin()
    for i = 1, #rows do
        space:replace(rows[i])
    end
    box.commit()
    return #rows
end

local function startswith(s, prefix)
    return string.sub(s, 1, #prefix) == prefix
end

local function result(t)
    return {t[1], t[2], t[3], t[6]}
end

-- search is the corrected procedure: seek to the prefix with a GE
-- iterator and stop at the first key that no longer starts with it.
-- O(log n + offset + limit) for a title prefix; with a brand prefix, the
-- records of the title prefix are filtered until enough matched.
function allot_search.search(prefix, brand, offset, limit)
    local out, skip = {}, offset
    for _, t in box.space.allot_catalog.index.title:pairs({prefix}, {iterator = 'GE'}) do
        if not startswith(t[4], prefix) then
            break
        end
        if brand == '' or startswith(t[5], brand) then
            if skip > 0 then
                skip = skip - 1
            else
                table.insert(out, result(t))
                if #out >= limit then
                    break
                end
            end
        end
    end
    return out
end

-- search_published is the procedure of the public report, as written:
-- the same GE iterator, each tuple tested and kept when it matches, a
-- break once limit results are kept, but no stop when the keys have gone
-- past the prefix. When fewer than offset + limit records match (a rare
-- prefix, or a brand that few titles of the prefix have), it tests every
-- tuple after the prefix to the end of the index. (The report had no
-- offset; skipping the first offset matches is the least change that
-- answers the same query.)
function allot_search.search_published(prefix, brand, offset, limit)
    local out, skip = {}, offset
    for _, t in box.space.allot_catalog.index.title:pairs({prefix}, {iterator = 'GE'}) do
        if startswith(t[4], prefix) and (brand == '' or startswith(t[5], brand)) then
            if skip > 0 then
                skip = skip - 1
            else
                table.insert(out, result(t))
                if #out >= limit then
                    break
                end
            end
        end
    end
    return out
end

rawset(_G, 'allot_search', allot_search)
return true
