-- Workload rw's records in Tarantool: evaluated by the adapter (rw.go)
-- after allot.lua, whose allot.atomically it uses. A record is the tuple
-- {k, v, ver} in a space of the store's engine (memtx or vinyl). Reads and
-- plain writes go over IPROTO as native select and replace; what must be
-- atomic runs here, in a transaction that vinyl may abort on a conflict
-- and allot.atomically runs again (counted).

local rw = {}

-- setup drops the space of an earlier run and creates it afresh; it
-- returns the space id (the adapter skips the schema and uses ids).
function rw.setup(name, engine)
    if box.space[name] ~= nil then
        box.space[name]:drop()
    end
    local space = box.schema.space.create(name, {
        engine = engine,
        format = {
            {name = 'k', type = 'string'},
            {name = 'v', type = 'integer'},
            {name = 'ver', type = 'unsigned'},
        },
    })
    space:create_index('primary', {type = 'TREE', parts = {{field = 'k', type = 'string'}}})
    return space.id
end

-- load replaces recs ({k, v} pairs) in one transaction.
function rw.load(name, recs)
    local space = box.space[name]
    box.begin()
    for i = 1, #recs do
        space:replace({recs[i][1], recs[i][2], 0})
    end
    box.commit()
    return #recs
end

-- insert inserts recs: all in one transaction (tx) or one by one; a key
-- that exists is an error (and, in a transaction, nothing is written).
function rw.insert(name, recs, tx)
    local space = box.space[name]
    if not tx then
        for i = 1, #recs do
            space:insert({recs[i][1], recs[i][2], 0})
        end
        return {#recs}
    end
    return allot.atomically(function()
        for i = 1, #recs do
            space:insert({recs[i][1], recs[i][2], 0})
        end
        return {#recs}
    end)
end

local function must_get(space, k)
    local t = space:get(k)
    if t == nil then
        error('NOTFOUND ' .. k)
    end
    return t
end

-- set writes back values computed by the caller from an earlier read (the
-- unlocked modify): one transaction when tx.
function rw.set(name, keys, values, tx)
    local space = box.space[name]
    local function body()
        for i = 1, #keys do
            local t = must_get(space, keys[i])
            space:replace({keys[i], values[i], t[3]})
        end
        return {#keys}
    end
    if tx then
        return allot.atomically(body)
    end
    return body()
end

-- modify adds delta to every key, read and written in one transaction:
-- the locked modify. It returns {n, conflicts retried}.
function rw.modify(name, keys, delta)
    local space = box.space[name]
    return allot.atomically(function()
        for i = 1, #keys do
            local t = must_get(space, keys[i])
            space:replace({keys[i], t[2] + delta, t[3]})
        end
        return {#keys}
    end)
end

-- cas writes values where every key still has the version the caller read:
-- {1, conflicts} if it did, {0, conflicts} (nothing written) if another
-- writer came first.
function rw.cas(name, keys, values, versions)
    local space = box.space[name]
    return allot.atomically(function()
        for i = 1, #keys do
            if must_get(space, keys[i])[3] ~= versions[i] then
                return {0}
            end
        end
        for i = 1, #keys do
            space:replace({keys[i], values[i], versions[i] + 1})
        end
        return {1}
    end)
end

-- drop removes a space setup made.
function rw.drop(name)
    if box.space[name] ~= nil then
        box.space[name]:drop()
    end
    return true
end

rawset(_G, 'allot_rw', rw)
return true
