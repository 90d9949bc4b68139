-- The adapter's server side. The Go adapter evaluates this file over IPROTO
-- at Open; it defines the global table `allot`, whose functions the
-- adapter calls by name ("allot.capture"). Evaluating it again replaces
-- the functions, so a newer adapter never runs older Lua.
--
-- Every function takes the space name first: one set of functions serves
-- the memtx space and the vinyl space.
--
-- Replies are flat arrays starting with a code (the inventory codes: 0 ok,
-- 1 insufficient, 2 not found, 4 overflow) and the number of transaction
-- conflicts that were retried, so that the Go side decodes them without
-- reflection.
--
-- Numbers: counts are 'unsigned' fields up to 2^62-1. Tarantool hands a
-- field above 2^53 to Lua as a uint64_t cdata, not a double, so
-- comparisons and the overflow bound below are exact 64-bit integer
-- operations; the arithmetic itself is done by space:update in C.

local COUNT_FIELD = 5
local COUNT_MAX = 4611686018427387903ULL
-- A transaction that keeps conflicting is given up after this many
-- retries, with the conflict error.
local CONFLICT_RETRIES_MAX = 1000

local allot = {}

-- setup creates the space and its indexes if they do not exist. A 'string'
-- part without a collation compares bytes (memcmp, then length), which is
-- the allocation order of the domain: no collation may be added here.
function allot.setup(name, engine)
    local space = box.schema.space.create(name, {
        engine = engine,
        if_not_exists = true,
        format = {
            {name = 'sku', type = 'string'},
            {name = 'warehouse', type = 'string'},
            {name = 'condition', type = 'string'},
            {name = 'source', type = 'string'},
            {name = 'count', type = 'unsigned'},
            {name = 'price', type = 'unsigned'},
        },
    })
    if space.engine ~= engine then
        error(string.format('space %s exists with engine %s, not %s', name, space.engine, engine))
    end
    space:create_index('primary', {
        type = 'TREE',
        if_not_exists = true,
        parts = {{field = 'sku', type = 'string'}, {field = 'warehouse', type = 'string'},
                 {field = 'condition', type = 'string'}, {field = 'source', type = 'string'}},
    })
    -- The group index ends with the warehouse, so an EQ scan on (sku,
    -- condition, source) walks the group's rows in allocation order.
    space:create_index('group', {
        type = 'TREE',
        unique = false,
        if_not_exists = true,
        parts = {{field = 'sku', type = 'string'}, {field = 'condition', type = 'string'},
                 {field = 'source', type = 'string'}, {field = 'warehouse', type = 'string'}},
    })
    return true
end

-- atomically runs fn(...) in a transaction and returns its reply with the
-- number of conflicts retried stored in reply[2]. memtx never yields inside
-- these functions, so it never conflicts; vinyl reads may yield to disk,
-- and another transaction committing a row this one read aborts it: then
-- the whole function is run again on fresh data.
local function atomically(fn, ...)
    local conflicts = 0
    while true do
        box.begin()
        local ok, reply = pcall(fn, ...)
        if ok then
            local committed, err = pcall(box.commit)
            if committed then
                reply[2] = conflicts
                return reply
            end
            reply = err
        end
        if box.is_in_txn() then
            box.rollback()
        end
        local err = reply
        if type(err) ~= 'cdata' or err.code ~= box.error.TRANSACTION_CONFLICT
           or conflicts >= CONFLICT_RETRIES_MAX then
            error(err)
        end
        conflicts = conflicts + 1
    end
end

-- Exposed for the adapter's tests, which force a vinyl conflict through it.
allot.atomically = atomically

local function capture(name, sku, condition, source, n)
    local space = box.space[name]
    local remaining = n
    local warehouses, takes = {}, {}
    for _, row in space.index.group:pairs({sku, condition, source}, {iterator = 'EQ'}) do
        local count = row[COUNT_FIELD]
        if count > 0 then
            -- remaining < 2^31, so a take is always a small Lua number.
            local take = remaining
            if count < take then
                take = tonumber(count)
            end
            warehouses[#warehouses + 1] = row[2]
            takes[#takes + 1] = take
            remaining = remaining - take
            if remaining == 0 then
                break
            end
        end
    end
    if remaining > 0 then
        -- Every count seen was below n, so this total is exact.
        return {1, 0, n - remaining}
    end
    local reply = {0, 0}
    for i = 1, #warehouses do
        space:update({sku, warehouses[i], condition, source}, {{'-', COUNT_FIELD, takes[i]}})
        reply[#reply + 1] = warehouses[i]
        reply[#reply + 1] = takes[i]
    end
    return reply
end

local function release(name, sku, warehouse, condition, source, n)
    local space = box.space[name]
    local key = {sku, warehouse, condition, source}
    local row = space:get(key)
    if row == nil then
        return {2, 0}
    end
    if row[COUNT_FIELD] > COUNT_MAX - n then
        return {4, 0}
    end
    row = space:update(key, {{'+', COUNT_FIELD, n}})
    return {0, 0, row[COUNT_FIELD]}
end

-- capture takes n units of the group (sku, condition, source) across its
-- warehouses in byte order, all or nothing.
-- Reply: {0, conflicts, warehouse, take, ...} | {1, conflicts, available}.
function allot.capture(name, sku, condition, source, n)
    return atomically(capture, name, sku, condition, source, n)
end

-- release adds n units to one row.
-- Reply: {0, conflicts, new count} | {2, conflicts} | {4, conflicts}.
function allot.release(name, sku, warehouse, condition, source, n)
    return atomically(release, name, sku, warehouse, condition, source, n)
end

-- load replaces rows in one transaction: one WAL write per chunk. replace,
-- not insert, because vinyl's insert reads first to check uniqueness, and
-- the space was truncated.
function allot.load(name, rows)
    local space = box.space[name]
    box.begin()
    for i = 1, #rows do
        space:replace(rows[i])
    end
    box.commit()
    return #rows
end

-- truncate empties the rows space and the checkout spaces beside it
-- (checkout.lua's <name>_holds and <name>_keys): a new run must not meet
-- the holds and order keys of an earlier one. A checkout run that died
-- leaves its expiry fiber running here; with its held holds still in
-- <name>_holds, that fiber gave their units to the next run's fresh rows.
function allot.truncate(name)
    for _, suffix in ipairs({'_holds', '_keys'}) do
        local space = box.space[name .. suffix]
        if space ~= nil then
            space:truncate()
        end
    end
    box.space[name]:truncate()
    return true
end

-- rows returns up to limit rows after the primary key `after` ({} for the
-- first page), in primary key order.
function allot.rows(name, after, limit)
    return box.space[name]:select(after, {iterator = 'GT', limit = limit})
end

-- describe returns what the results record about the server.
function allot.describe()
    return {box.info.version, box.cfg.wal_mode}
end

rawset(_G, 'allot', allot)
return true
