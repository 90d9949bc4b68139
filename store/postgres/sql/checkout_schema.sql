-- The checkout tables, made (empty) by PrepareCheckout beside rows, logged
-- or unlogged as rows are.
--
-- holds: one row per hold id: the id is the hold's idempotency key (the
-- primary key makes a second HOLD with the id wait for the first and then
-- find it). state: 1 held, 2 confirmed, 3 cancelled, 4 expired.
-- expires_at: milliseconds since the epoch by the server's clock. cart: the
-- request's lines (store.EncodeCart), to tell a repeat from a mismatch.
-- The partial index holds only live holds, ordered by deadline: what the
-- sweeper's FOR UPDATE SKIP LOCKED walks.
DROP TABLE IF EXISTS holds, hold_lines, order_keys;
CREATE {{if .Unlogged}}UNLOGGED {{end}}TABLE holds (
    id         text COLLATE "C" PRIMARY KEY,
    state      smallint NOT NULL,
    expires_at bigint NOT NULL,
    cart       text NOT NULL
);
CREATE INDEX holds_due ON holds (expires_at) WHERE state = 1;
-- hold_lines: where each hold's units came from, in reply order (pos), so
-- that cancel and expiry return them to the rows they left.
CREATE {{if .Unlogged}}UNLOGGED {{end}}TABLE hold_lines (
    hold      text COLLATE "C" NOT NULL,
    pos       int NOT NULL,
    sku       text COLLATE "C" NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    cond      text COLLATE "C" NOT NULL,
    source    text COLLATE "C" NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (hold, pos)
);
-- order_keys: an ORDER's idempotency key, inserted in the order's own
-- transaction, with the first reply (store.EncodeReply) it got.
CREATE {{if .Unlogged}}UNLOGGED {{end}}TABLE order_keys (
    key   text COLLATE "C" PRIMARY KEY,
    cart  text NOT NULL,
    reply text NOT NULL
);
