package store

// The project's own peer servers: their names (Info.Server, and the names
// services.Up takes) and where services starts them with its default
// Config. The adapters connect there unless Config.Addr says otherwise.
// They live here, not in services, because both need them and an adapter
// must not import services (which imports store for Durability); two
// copies of one address drifted apart once.
const (
	ServerPostgres  = "postgres"
	ServerMariaDB   = "mariadb"
	ServerRedis     = "redis"
	ServerTarantool = "tarantool"
	ServerRabbitMQ  = "rabbitmq"
	ServerDTM       = "dtm"

	// PostgresDSN: role allot (trust on loopback), database allot.
	PostgresDSN = "postgres://allot@127.0.0.1:15432/allot?sslmode=disable"
	// PostgresSuperuser is the cluster's superuser role (trust on
	// loopback): services and the adapter set the server-wide fsync as it.
	PostgresSuperuser = "postgres"
	// PostgresManagedSetting marks a PostgreSQL that allot services runs
	// (set to on in the configuration services writes): the only server
	// whose fsync the adapter changes (ALTER SYSTEM outlives a run).
	PostgresManagedSetting = "allot.managed"
	// MariaDBDSN: user allot, password allot, ALL PRIVILEGES (SUPER
	// included) on *.*, database allot.
	MariaDBDSN = "allot:allot@tcp(127.0.0.1:13306)/allot"
	// RedisAddr: no password.
	RedisAddr = "127.0.0.1:16379"
	// TarantoolAddr: user TarantoolUser with the super role.
	TarantoolAddr     = "127.0.0.1:13301"
	TarantoolUser     = "allot"
	TarantoolPassword = "allot"
	// RabbitMQURL: user guest (allowed from loopback only), vhost "/".
	RabbitMQURL = "amqp://guest:guest@127.0.0.1:14672/"
	// DTMURL is dtm's HTTP API.
	DTMURL = "http://127.0.0.1:16789/api/dtmsvr"
)

// The durability settings of each peer server, in one place, as DESIGN.md's
// table maps them: services writes them into the servers' configuration
// and switches running servers with them, and the adapters set them per
// connection. Two copies of this table drifted apart once; one cannot.

// RedisAOF returns Redis's appendonly and appendfsync for d.
func RedisAOF(d Durability) (appendonly, appendfsync string) {
	switch d {
	case DurabilityWrite:
		return "yes", "no"
	case DurabilityNone:
		return "no", "no"
	}
	return "yes", "always"
}

// InnoDBFlushLogAtTrxCommit returns innodb_flush_log_at_trx_commit for d:
// 1 writes and flushes the redo log at each commit, 2 writes it at each
// commit and flushes about once a second, 0 does both about once a second.
func InnoDBFlushLogAtTrxCommit(d Durability) int {
	switch d {
	case DurabilityWrite:
		return 2
	case DurabilityNone:
		return 0
	}
	return 1
}

// MariaDBSyncBinlog returns sync_binlog for d: 1 syncs the binary log at
// each (group) commit. It matters whenever the binary log is on: InnoDB
// then skips the redo log's fsync at commit and recovers from the binlog,
// rolling back what a prepared transaction left out of it, so
// innodb_flush_log_at_trx_commit=1 alone does not survive a power cut
// (MariaDB KB, "Binlog group commit and innodb_flush_log_at_trx_commit").
// write and none leave the binlog to the OS, as they leave the redo log.
func MariaDBSyncBinlog(d Durability) int {
	if d == DurabilityFsync || d == "" {
		return 1
	}
	return 0
}

// PostgresSynchronousCommit returns synchronous_commit for d: on for fsync
// and write (a commit returns once its WAL is written, and with fsync on
// flushed), off for none (its tables are unlogged: their writes make no
// WAL to wait for). off in write mode would acknowledge commits whose WAL
// is still in the server's shared buffers: a crash of the server process
// loses them (the kill audit lost 109 acknowledged ops in 5 kills), where
// write promises to survive one.
func PostgresSynchronousCommit(d Durability) string {
	if d == DurabilityNone {
		return "off"
	}
	return "on"
}

// PostgresFsync returns fsync for d: on for fsync, off otherwise. With
// synchronous_commit on and fsync off a commit's WAL is written to the OS
// before the commit returns and never flushed: it survives a crash of the
// server process, not a power cut (which, with fsync off, may corrupt the
// whole cluster, not only lose commits), as write promises. fsync is the whole
// server's (reloaded from the configuration file, no session can set it):
// services writes it into the configuration, and the adapter sets it as
// PostgresSuperuser when a server runs with another.
func PostgresFsync(d Durability) string {
	if d == DurabilityFsync || d == "" {
		return "on"
	}
	return "off"
}
