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
box.cfg{listen = {{.Listen | printf "%q"}}}
