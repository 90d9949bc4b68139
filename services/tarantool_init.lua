-- Written by allot services; rewritten on every start.
--
-- box.cfg first WITHOUT listen, then the account, and only then listen:
-- a client that connects earlier would find no user to log in as. The
-- tarantool adapter creates its own spaces and functions.
box.cfg{
    work_dir = {{.Dir | printf "%q"}},
    wal_mode = {{.WALMode | printf "%q"}},
    pid_file = {{.PIDFile | printf "%q"}},
    log = {{.Log | printf "%q"}},
    background = true,
    memtx_memory = 512 * 1024 * 1024,
}
box.schema.user.create({{.User | printf "%q"}}, {password = {{.Password | printf "%q"}}, if_not_exists = true})
box.schema.user.passwd({{.User | printf "%q"}}, {{.Password | printf "%q"}})
box.schema.user.grant({{.User | printf "%q"}}, 'super', nil, nil, {if_not_exists = true})
-- Tarantool 2.6 (Debian's) opens the first xlog it writes after
-- recovering an existing data directory without O_SYNC, whatever
-- wal_mode says, and never syncs it: a restarted server in wal_mode fsync
-- acknowledged writes that only reached the page cache (and ran twice as
-- fast), until the next checkpoint's rotation opened a new xlog properly.
-- A checkpoint here, after the account's writes above opened that xlog,
-- rotates it at once.
-- (TestTarantoolSyncsAfterARestart.)
if box.cfg.wal_mode == "fsync" then
    box.snapshot()
end
box.cfg{listen = {{.Listen | printf "%q"}}}
