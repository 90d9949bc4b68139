package cluster

import (
	"fmt"
	"regexp"
)

// shardNameRule: the shard name becomes part of stream and bucket names,
// which JetStream limits to these characters.
var shardNameRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// names are the JetStream resources of one shard.
type names struct {
	stream  string // the log
	subject string // the log's one subject
	lease   string // the lease's key-value bucket
	snaps   string // the snapshots' object store
}

// leaseKey is the lease's key in its bucket.
const leaseKey = "primary"

// snapshotObject is the stored snapshot's name in the object store.
const snapshotObject = "snapshot"

func namesOf(shard string) (names, error) {
	if !shardNameRule.MatchString(shard) {
		return names{}, fmt.Errorf("cluster: shard name %q: want 1 to 32 letters, digits, '_' or '-'", shard)
	}
	return names{
		stream:  "ALLOT_" + shard,
		subject: "allot." + shard + ".log",
		lease:   "ALLOT_" + shard + "_LEASE",
		snaps:   "ALLOT_" + shard + "_SNAP",
	}, nil
}
