package store

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

// PostgresSynchronousCommit returns synchronous_commit for d: on for fsync,
// off otherwise (none differs by its unlogged table, not this setting).
func PostgresSynchronousCommit(d Durability) string {
	if d == DurabilityFsync || d == "" {
		return "on"
	}
	return "off"
}
