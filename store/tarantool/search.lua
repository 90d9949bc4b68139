-- The search workload's server side: the catalog spaces and two search
-- procedures. The Go adapter evaluates this file over IPROTO when it loads
-- the catalog; it defines the global table `allot_search`.
--
-- Titles and brands are folded by Go (catalog.Fold, Unicode simple case
-- folding) into their own fields, and the index compares bytes (no
-- collation): Tarantool's unicode_ci collation is ICU's primary strength,
-- which also ignores accents ('é' matches 'e'), and Lua's string.lower
-- knows ASCII alone. Byte order is the contract's order.

local allot_search = {}

-- Each load makes a space of its own, allot_catalog_<random id> (search.go
-- says why), owned by the session that made it. owners maps a space's
-- name to that session's id; it outlives a new evaluation of this file
-- (each load evaluates it), not a restart of the server.
local PREFIX = 'allot_catalog_'
local owners = rawget(_G, 'allot_search_owners') or {}
rawset(_G, 'allot_search_owners', owners)

local function drop(name)
    owners[name] = nil
    if box.space[name] ~= nil then
        box.space[name]:drop()
    end
end

-- drop_orphans drops every catalog space whose session is gone: its
-- store was killed before it could drop it, while the server was down
-- (owners is then empty) or while its disconnect trigger could not run.
local function drop_orphans()
    local names = {}
    for _, t in box.space._space:pairs() do
        if string.sub(t[3], 1, #PREFIX) == PREFIX then
            table.insert(names, t[3])
        end
    end
    for _, name in ipairs(names) do
        local sid = owners[name]
        if sid == nil or not box.session.exists(sid) then
            drop(name)
        end
    end
end

-- on_disconnect drops the spaces of a session that ends: a bench killed
-- in the middle of a run leaves no catalog in memory.
local function on_disconnect()
    local sid, names = box.session.id(), {}
    for name, owner in pairs(owners) do
        if owner == sid then
            table.insert(names, name)
        end
    end
    for _, name in ipairs(names) do
        drop(name)
    end
end
box.session.on_disconnect(on_disconnect, rawget(_G, 'allot_search_on_disconnect'))
rawset(_G, 'allot_search_on_disconnect', on_disconnect)

-- setup drops the orphans, then creates the space name for the calling
-- session. The owner is set before the space exists: another session's
-- drop_orphans may see the space while its creation waits for the WAL.
function allot_search.setup(name)
    if string.sub(name, 1, #PREFIX) ~= PREFIX then
        error('allot_search.setup: ' .. name .. ' is not a catalog space name')
    end
    drop_orphans()
    owners[name] = box.session.id()
    local space = box.schema.space.create(name, {
        engine = 'memtx',
        format = {
            {name = 'sku', type = 'string'},
            {name = 'title', type = 'string'},
            {name = 'brand', type = 'string'},
            {name = 'title_folded', type = 'string'},
            {name = 'brand_folded', type = 'string'},
            {name = 'available', type = 'unsigned'},
        },
    })
    space:create_index('primary', {type = 'TREE',
        parts = {{field = 'sku', type = 'string'}}})
    space:create_index('title', {type = 'TREE',
        parts = {{field = 'title_folded', type = 'string'}, {field = 'sku', type = 'string'}}})
    return true
end

-- drop drops a catalog space (a newer load replaced it, or its store
-- closes).
function allot_search.drop(name)
    drop(name)
    return true
end

function allot_search.load(name, rows)
    local space = box.space[name]
    box.begin()
    for i = 1, #rows do
        space:replace(rows[i])
    end
    box.commit()
    return #rows
end

local function catalog(name)
    local space = box.space[name]
    if space == nil then
        error('no catalog space ' .. name)
    end
    return space
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
function allot_search.search(name, prefix, brand, offset, limit)
    local out, skip = {}, offset
    for _, t in catalog(name).index.title:pairs({prefix}, {iterator = 'GE'}) do
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
function allot_search.search_published(name, prefix, brand, offset, limit)
    local out, skip = {}, offset
    for _, t in catalog(name).index.title:pairs({prefix}, {iterator = 'GE'}) do
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
