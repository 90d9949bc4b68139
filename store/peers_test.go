package store

import "testing"

func TestPeerSettings(t *testing.T) {
	for _, tt := range []struct {
		d                  Durability
		aof, fsync, pgSync string
		innodb             int
	}{
		{DurabilityFsync, "yes", "always", "on", 1},
		{DurabilityWrite, "yes", "no", "off", 2},
		{DurabilityNone, "no", "no", "off", 0},
	} {
		aof, fsync := RedisAOF(tt.d)
		if aof != tt.aof || fsync != tt.fsync || PostgresSynchronousCommit(tt.d) != tt.pgSync || InnoDBFlushLogAtTrxCommit(tt.d) != tt.innodb {
			t.Errorf("%s: redis %s/%s, postgres %s, innodb %d", tt.d, aof, fsync, PostgresSynchronousCommit(tt.d), InnoDBFlushLogAtTrxCommit(tt.d))
		}
	}
}
