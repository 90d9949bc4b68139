-- Checkout on Tarantool: the adapter evaluates this file over IPROTO in
-- PrepareCheckout (after allot.lua, whose allot.atomically it uses). It
-- defines the global table `allot_checkout`; evaluating it again replaces
-- the functions and stops the expiry fibers of the older version.
--
-- Beside each rows space <name> live two spaces of the same engine:
--   <name>_holds  {id, state, expires_at, cart, reply, ret}: a hold by its
--                 id (its own idempotency key); state 1 held, 2 confirmed,
--                 3 cancelled, 4 expired; expires_at in ms by the server's
--                 clock; cart the request (store.EncodeCart) to tell a
--                 repeat from a mismatch; reply its first reply
--                 (store.EncodeReply's text); ret the rows to give back,
--                 {{sku, warehouse, condition, source, n}, ...}. Index
--                 'due' (state, expires_at) is what the expiry fiber walks.
--   <name>_keys   {key, cart, reply}: an ORDER's idempotency key and its
--                 first reply.
-- One expiry fiber per rows space wakes every interval and expires, in one
-- transaction, up to a batch of held holds whose deadline passed, giving
-- their units back to the rows they left.
--
-- Every function runs in allot.atomically (vinyl may conflict; memtx does
-- not yield inside them) and replies {payload, conflicts}.

local clock = require('clock')
local fiber = require('fiber')
local log = require('log')

local COUNT_FIELD = 5
local COUNT_MAX = 4611686018427387903ULL
local FS, RS = '\31', '\30'
local HELD, CONFIRMED, CANCELLED, EXPIRED = 1, 2, 3, 4
-- Outcome codes: store.CheckoutCode values.
local OK, NOT_FOUND, C_EXPIRED, C_CANCELLED, C_CONFIRMED = 0, 2, 4, 5, 6

local old = rawget(_G, 'allot_checkout')
if old ~= nil then
    for _, f in pairs(old.fibers) do
        pcall(f.cancel, f)
    end
end

-- failed[name]: the expiry passes of name's fiber that failed since it
-- started ({count, first error}); stop_expiry reports them.
local checkout = {fibers = {}, failed = {}}

local function now_ms()
    return tonumber(clock.realtime64() / 1000000)
end

local function num(x)
    return string.format('%.0f', tonumber(x))
end

function checkout.setup(name)
    local rows = box.space[name]
    local engine = rows.engine
    local holds = box.schema.space.create(name .. '_holds', {
        engine = engine, if_not_exists = true,
        format = {
            {name = 'id', type = 'string'}, {name = 'state', type = 'unsigned'},
            {name = 'expires_at', type = 'unsigned'}, {name = 'cart', type = 'string'},
            {name = 'reply', type = 'string'}, {name = 'ret', type = 'array'},
        },
    })
    holds:create_index('primary', {if_not_exists = true, parts = {{field = 'id', type = 'string'}}})
    holds:create_index('due', {if_not_exists = true, unique = false,
        parts = {{field = 'state', type = 'unsigned'}, {field = 'expires_at', type = 'unsigned'}}})
    local keys = box.schema.space.create(name .. '_keys', {
        engine = engine, if_not_exists = true,
        format = {{name = 'key', type = 'string'}, {name = 'cart', type = 'string'}, {name = 'reply', type = 'string'}},
    })
    keys:create_index('primary', {if_not_exists = true, parts = {{field = 'key', type = 'string'}}})
    holds:truncate()
    keys:truncate()
    return true
end

-- allocate returns the takes of every group {sku, warehouse, condition,
-- source, take}, groups in order, warehouses ascending; or nil, the first
-- short line's index and its group's total. groups: {{sku, condition,
-- source, n, first}, ...}, same-group lines already summed.
local function allocate(rows, groups)
    local takes = {}
    for g = 1, #groups do
        local sku, cond, src, n, first = unpack(groups[g])
        local remaining = n
        for _, row in rows.index.group:pairs({sku, cond, src}, {iterator = 'EQ'}) do
            if remaining == 0 then
                break
            end
            local count = row[COUNT_FIELD]
            if count > 0 then
                local take = remaining
                if count < take then
                    take = tonumber(count)
                end
                takes[#takes + 1] = {sku, row[2], cond, src, take}
                remaining = remaining - take
            end
        end
        if remaining > 0 then
            return nil, first, n - remaining
        end
    end
    return takes
end

local function apply(rows, takes)
    for i = 1, #takes do
        local t = takes[i]
        rows:update({t[1], t[2], t[3], t[4]}, {{'-', COUNT_FIELD, t[5]}})
    end
end

local function give_back(rows, ret)
    for i = 1, #ret do
        local t = ret[i]
        local key = {t[1], t[2], t[3], t[4]}
        local row = rows:get(key)
        if row ~= nil then
            if row[COUNT_FIELD] > COUNT_MAX - t[5] then
                rows:update(key, {{'=', COUNT_FIELD, COUNT_MAX}})
            else
                rows:update(key, {{'+', COUNT_FIELD, t[5]}})
            end
        end
    end
end

local function reply(code, expires, short, available, takes)
    local parts = {tostring(code), FS, num(expires), FS, tostring(short), FS, num(available), RS}
    for i = 1, #takes do
        local t = takes[i]
        parts[#parts + 1] = t[1] .. FS .. t[2] .. FS .. t[3] .. FS .. t[4] .. FS .. num(t[5]) .. RS
    end
    return table.concat(parts)
end

local function hold(name, id, ttl, cart, groups)
    local holds = box.space[name .. '_holds']
    local h = holds:get(id)
    if h ~= nil then
        if h[4] ~= cart then
            return {'M', 0}
        end
        return {h[5], 0}
    end
    local rows = box.space[name]
    local takes, first, available = allocate(rows, groups)
    if takes == nil then
        return {reply(1, 0, first, available, {}), 0}
    end
    apply(rows, takes)
    local expires = now_ms() + ttl
    local r = reply(0, expires, 0, 0, takes)
    holds:insert({id, HELD, expires, cart, r, takes})
    return {r, 0}
end

local function order(name, key, cart, groups)
    local keys = box.space[name .. '_keys']
    if key ~= '' then
        local k = keys:get(key)
        if k ~= nil then
            if k[2] ~= cart then
                return {'M', 0}
            end
            return {k[3], 0}
        end
    end
    local rows = box.space[name]
    local takes, first, available = allocate(rows, groups)
    local r
    if takes == nil then
        r = reply(1, 0, first, available, {})
    else
        apply(rows, takes)
        r = reply(0, 0, 0, 0, takes)
    end
    if key ~= '' then
        keys:insert({key, cart, r})
    end
    return {r, 0}
end

-- confirm: a held hold past its deadline is expired, even before the
-- fiber comes.
local function confirm(name, id)
    local holds = box.space[name .. '_holds']
    local h = holds:get(id)
    if h == nil then
        return {NOT_FOUND, 0}
    end
    local s = h[2]
    if s == HELD then
        if h[3] <= now_ms() then
            return {C_EXPIRED, 0}
        end
        holds:update(id, {{'=', 2, CONFIRMED}})
        return {OK, 0}
    elseif s == CONFIRMED then
        return {OK, 0}
    elseif s == CANCELLED then
        return {C_CANCELLED, 0}
    end
    return {C_EXPIRED, 0}
end

local function cancel(name, id)
    local holds = box.space[name .. '_holds']
    local h = holds:get(id)
    if h == nil then
        return {NOT_FOUND, 0}
    end
    local s = h[2]
    if s == HELD then
        -- Past its deadline (the fiber has not come yet) it is expired,
        -- not cancelled: confirm already answers expired for it.
        local st = CANCELLED
        if h[3] <= now_ms() then
            st = EXPIRED
        end
        give_back(box.space[name], h[6])
        holds:update(id, {{'=', 2, st}})
        return {OK, 0}
    elseif s == CONFIRMED then
        return {C_CONFIRMED, 0}
    end
    return {OK, 0}
end

-- expire expires up to batch due holds; reply {n, conflicts}.
local function expire(name, batch)
    local holds = box.space[name .. '_holds']
    local rows = box.space[name]
    local now = now_ms()
    local due = {}
    for _, h in holds.index.due:pairs({HELD}, {iterator = 'EQ'}) do
        if h[3] > now or #due >= batch then
            break
        end
        due[#due + 1] = h
    end
    for i = 1, #due do
        give_back(rows, due[i][6])
        holds:update(due[i][1], {{'=', 2, EXPIRED}})
    end
    return {#due, 0}
end

function checkout.hold(name, id, ttl, cart, groups)
    return allot.atomically(hold, name, id, ttl, cart, groups)
end

function checkout.order(name, key, cart, groups)
    return allot.atomically(order, name, key, cart, groups)
end

function checkout.confirm(name, id)
    return allot.atomically(confirm, name, id)
end

function checkout.cancel(name, id)
    return allot.atomically(cancel, name, id)
end

-- hold_get: {state, reply} or {0, ''} for an unknown hold.
function checkout.hold_get(name, id)
    local h = box.space[name .. '_holds']:get(id)
    if h == nil then
        return {0, ''}
    end
    return {h[2], h[5]}
end

-- start_expiry (re)starts the expiry fiber of the rows space name.
function checkout.start_expiry(name, interval, batch)
    local f = checkout.fibers[name]
    if f ~= nil then
        pcall(f.cancel, f)
    end
    checkout.failed[name] = nil
    checkout.fibers[name] = fiber.create(function()
        fiber.self():name('allot_expiry_' .. name)
        local me = fiber.id()
        while true do
            fiber.sleep(interval)
            while true do
                local ok, r = pcall(allot.atomically, expire, name, batch)
                if not ok then
                    local cur = checkout.fibers[name]
                    if cur == nil or cur:id() ~= me then
                        return -- stopped (or replaced) mid-pass: not a failure
                    end
                    local fl = checkout.failed[name]
                    if fl == nil then
                        -- Logged once: stop_expiry reports the count.
                        fl = {count = 0, first = tostring(r)}
                        checkout.failed[name] = fl
                        log.error('allot: expiry of %s failed: %s', name, tostring(r))
                    end
                    fl.count = fl.count + 1
                    break
                end
                if r[1] < batch then
                    break
                end
            end
        end
    end)
    return true
end

-- stop_expiry stops name's expiry fiber; an error when any of its passes
-- failed (holds past their deadlines may have kept their units).
function checkout.stop_expiry(name)
    local f = checkout.fibers[name]
    if f ~= nil then
        pcall(f.cancel, f)
        checkout.fibers[name] = nil
    end
    local fl = checkout.failed[name]
    checkout.failed[name] = nil
    if fl ~= nil then
        error(string.format('the expiry of %s failed %d time(s), first: %s', name, fl.count, fl.first))
    end
    return true
end

rawset(_G, 'allot_checkout', checkout)
return true
