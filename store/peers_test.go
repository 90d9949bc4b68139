package store

import "testing"

func TestPeerSettings(t *testing.T) {
	for _, tt := range []struct {
		d                           Durability
		aof, fsync, pgSync, pgFsync string
		innodb                      int
	}{
		{DurabilityFsync, "yes", "always", "on", "on", 1},
		{DurabilityWrite, "yes", "no", "on", "off", 2},
		{DurabilityNone, "no", "no", "off", "off", 0},
	} {
		aof, fsync := RedisAOF(tt.d)
		if aof != tt.aof || fsync != tt.fsync || PostgresSynchronousCommit(tt.d) != tt.pgSync || PostgresFsync(tt.d) != tt.pgFsync || InnoDBFlushLogAtTrxCommit(tt.d) != tt.innodb {
			t.Errorf("%s: redis %s/%s, postgres synchronous_commit=%s fsync=%s, innodb %d", tt.d, aof, fsync,
				PostgresSynchronousCommit(tt.d), PostgresFsync(tt.d), InnoDBFlushLogAtTrxCommit(tt.d))
		}
	}
}
