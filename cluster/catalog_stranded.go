package cluster

import (
	"fmt"
	"strings"

	"allot/engine"
)

// A cluster of several shards keeps its catalog on the map's first shard
// (ShardMap.CatalogShard), and a node of another shard refuses the
// catalog's ops (ShardMap.opCheck). A cluster that ran a release from
// before may keep records that were set on another shard: they stay in
// that shard's state, replayed from its journal and log, and no node
// serves them. A node of such a shard says so with a warning when it
// opens its engine and when it takes over as primary: the shard, how
// many records, some of their SKUs, and what to do.
//
// Refusing to start was the other choice, and was rejected: every node of
// the shard holds the same records (the log replicated them), so every
// one would refuse, and the shard's stock would go offline for records
// that refusing cannot make reachable. Nor could an operator clear them
// with this release: CATALOG.DEL is refused there too, so the only way
// back would be to wipe the shard's data, stock and all. Serving, the
// shard loses nothing it had: those records were unreachable either way.

// strandedSKUsShown bounds the SKUs the warning names.
const strandedSKUsShown = 10

// reportStrandedCatalog warns, once for each count it finds, when e, a
// node's engine of a shard that is not the catalog's, holds catalog
// records; at reopens of the engine (a new term) and at takeovers the
// same count is not repeated. A failed read is logged and changes
// nothing: the engine's failure ends the term anyway.
func (n *node) reportStrandedCatalog(e *engine.Engine, when string) {
	m := n.log.shards
	if len(m.Shards) < 2 || m.CatalogShard() == n.cfg.Shard {
		return
	}
	recs, err := e.CatalogRecords()
	if err != nil {
		n.logger.Warn("cluster: could not count the catalog records kept on a shard that is not the catalog's", "when", when, "err", err)
		return
	}
	if len(recs) == 0 || len(recs) == n.strandedReported {
		return
	}
	n.strandedReported = len(recs)
	shown := recs[:min(len(recs), strandedSKUsShown)]
	skus := make([]string, 0, len(shown))
	for _, r := range shown {
		skus = append(skus, r.SKU)
	}
	n.logger.Warn(strandedCatalogMessage(n.cfg.Shard, m.CatalogShard(), len(recs)),
		"when", when, "catalog_records", len(recs), "catalog_shard", m.CatalogShard(), "skus", strings.Join(skus, ","))
}

// strandedCatalogMessage is the warning of a shard holding records of
// the catalog that lives on home.
func strandedCatalogMessage(shard, home string, records int) string {
	noun := "catalog records"
	if records == 1 {
		noun = "catalog record"
	}
	return fmt.Sprintf("cluster: shard %s holds %d %s that no node serves: the catalog lives on shard %s "+
		"and the nodes of %s refuse its ops (records set here by an earlier release). "+
		"Set them again on shard %s (from their source, or read from a copy of this node's data directory "+
		"served alone: allot serve --data COPY, without --cluster); shard %s serves its stock meanwhile",
		shard, records, noun, home, shard, home, shard)
}
