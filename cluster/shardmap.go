package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"allot/inventory"
)

// The shard map: which shard holds a group. It is fixed when the cluster
// is made (`allot shards init`) and lives in a key-value bucket of its
// own; a cluster without one is a single shard (named by --shard,
// "main" by default) and every group is there.
const (
	shardMapBucket = "ALLOT_SHARDS"
	shardMapKey    = "map"
	// HashFNV1a names the map's hash: FNV-1a 64 of sku, condition and
	// source joined by NUL bytes, modulo the number of shards.
	HashFNV1a = "fnv1a64(sku\\0condition\\0source) mod n"
)

// ShardsMax bounds a map's shards.
const ShardsMax = 256

// ShardMap names the shards and says which one holds a group.
type ShardMap struct {
	Shards []string `json:"shards"`
	Hash   string   `json:"hash"`
}

// NewShardMap returns the map of n shards, named s0 .. s<n-1>.
func NewShardMap(n int) (ShardMap, error) {
	if n < 1 || n > ShardsMax {
		return ShardMap{}, fmt.Errorf("cluster: %d shards: want 1 to %d", n, ShardsMax)
	}
	m := ShardMap{Hash: HashFNV1a}
	for i := range n {
		m.Shards = append(m.Shards, fmt.Sprintf("s%d", i))
	}
	return m, nil
}

// Of returns the shard that holds group g.
func (m ShardMap) Of(g inventory.GroupKey) string {
	return m.Shards[m.index(g)]
}

// index is the position in m.Shards of the shard that holds g. It hashes
// the strings in place (hash/fnv's Write took a []byte of each, and its
// hash escaped: allocations on every op a node checks, opCheck).
func (m ShardMap) index(g inventory.GroupKey) int {
	h := fnvString(fnvOffset64, g.SKU)
	h = fnvString(h*fnvPrime64, g.Condition) // the NUL between: h ^= 0, h *= prime
	h = fnvString(h*fnvPrime64, g.Source)
	return int(h % uint64(len(m.Shards)))
}

// FNV-1a 64 (hash/fnv's, to the bit).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// opCheck returns the engine's check (engine.Config.CheckOp) of a node of
// shard: it refuses, as invalid, an op that names a group of another
// shard (a capture, release, stock, get or available; a hold or an order
// with any such line), and, on a shard other than CatalogShard, the
// catalog's ops (catalog.set, catalog.del, catalog.get, search). nil when
// every group and the catalog are shard's (a map of one shard, or none).
//
// The Router sends each op to its group's shard, but a client that talks
// to a node directly (redis-cli, an HTTP client, the Go client given one
// node's address) could apply any group there: a group stocked on two
// shards is two groups, each with part of the units, and the router reads
// and captures only one. The catalog the same: a record set on two shards
// was two records, and each shard's search saw its own part of the
// catalog. Refused before it is submitted, such an op binds no
// idempotency key and is journaled nowhere.
func (m ShardMap) opCheck(shard string) func(op *inventory.Op) string {
	if len(m.Shards) < 2 {
		return nil
	}
	me := slices.Index(m.Shards, shard)
	if me < 0 {
		return nil // openShard refuses such a node before it opens an engine
	}
	catalogElsewhere := "" // built once: the check allocates nothing per op
	if home := m.CatalogShard(); home != shard {
		catalogElsewhere = fmt.Sprintf("the catalog belongs to shard %s, not %s", home, shard)
	}
	return func(op *inventory.Op) string {
		switch op.Kind {
		case inventory.KindCatalogSet, inventory.KindCatalogDel, inventory.KindCatalogGet, inventory.KindSearch:
			return catalogElsewhere
		case inventory.KindCapture, inventory.KindRelease, inventory.KindStock, inventory.KindGet, inventory.KindAvailable:
			if g := op.Key.Group(); m.index(g) != me {
				return m.elsewhere(g, shard)
			}
		case inventory.KindHold, inventory.KindOrder:
			for _, l := range op.Lines {
				if m.index(l.Group) != me {
					return m.elsewhere(l.Group, shard)
				}
			}
		}
		return ""
	}
}

// elsewhere is the refusal of group g on a node of shard.
func (m ShardMap) elsewhere(g inventory.GroupKey, shard string) string {
	return fmt.Sprintf("group %s/%s/%s belongs to shard %s, not %s", g.SKU, g.Condition, g.Source, m.Of(g), shard)
}

// CatalogShard returns the shard that keeps the catalog: the map's first.
//
// A catalog record is keyed by a SKU, and the map hashes groups: a SKU's
// groups are spread over the shards, so no group's shard is the record's.
// The whole catalog lives on one shard, where one ordered title index
// answers every search in O(log n + offset + limit); records hashed over
// the shards by SKU would make every search a merge of all the shards'
// answers, which neither a node nor the router does. Catalog writes are
// rare (loading, corrections), and the shard's standbys serve its reads.
func (m ShardMap) CatalogShard() string { return m.Shards[0] }

// Has reports whether shard is one of the map's.
func (m ShardMap) Has(shard string) bool { return slices.Contains(m.Shards, shard) }

func (m ShardMap) check() error {
	if m.Hash != HashFNV1a {
		return fmt.Errorf("cluster: the shard map uses hash %q; this release knows %q", m.Hash, HashFNV1a)
	}
	if len(m.Shards) < 1 || len(m.Shards) > ShardsMax {
		return fmt.Errorf("cluster: the shard map has %d shards: want 1 to %d", len(m.Shards), ShardsMax)
	}
	for i, s := range m.Shards {
		if _, err := namesOf(s); err != nil {
			return err
		}
		if slices.Contains(m.Shards[:i], s) {
			return fmt.Errorf("cluster: the shard map names shard %s twice", s)
		}
	}
	return nil
}

// CreateShardMap stores the map of n shards in the cluster at urls. A
// cluster that has the same map already is left as it is; one that has
// another is an error (the map is fixed once made: moving groups between
// shards is not supported).
func CreateShardMap(ctx context.Context, urls string, n int) (ShardMap, error) {
	m, err := NewShardMap(n)
	if err != nil {
		return m, err
	}
	nc, js, err := connect(urls, "allot shards")
	if err != nil {
		return m, err
	}
	defer nc.Close()
	var kv jetstream.KeyValue
	for {
		// A cluster just started has no JetStream quorum for a while.
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kv, err = js.CreateOrUpdateKeyValue(rctx, jetstream.KeyValueConfig{
			Bucket: shardMapBucket, History: 1, Storage: jetstream.FileStorage, Replicas: 3,
			Description: "allot shard map"})
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return m, fmt.Errorf("cluster: the shard map bucket %s: %w", shardMapBucket, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	b, _ := json.Marshal(m)
	if _, err := kv.Create(ctx, shardMapKey, b); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return m, fmt.Errorf("cluster: store the shard map: %w", err)
		}
		old, found, err := readShardMap(ctx, js)
		if err != nil {
			return m, err
		}
		if !found || !slices.Equal(old.Shards, m.Shards) {
			return old, fmt.Errorf("cluster: the cluster has a shard map of %d shards already (%v); it cannot change", len(old.Shards), old.Shards)
		}
		return old, nil
	}
	return m, nil
}

// ReadShardMap reads the map of the cluster at urls; found is false when
// it has none (a single shard).
func ReadShardMap(ctx context.Context, urls string) (m ShardMap, found bool, err error) {
	nc, js, err := connect(urls, "allot shards")
	if err != nil {
		return m, false, err
	}
	defer nc.Close()
	return readShardMap(ctx, js)
}

func readShardMap(ctx context.Context, js jetstream.JetStream) (m ShardMap, found bool, err error) {
	kv, err := js.KeyValue(ctx, shardMapBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("cluster: the shard map bucket %s: %w", shardMapBucket, err)
	}
	e, err := kv.Get(ctx, shardMapKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("cluster: read the shard map: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return m, false, fmt.Errorf("cluster: the shard map holds %q: %w", e.Value(), err)
	}
	return m, true, m.check()
}

// errNotInMap: a node was started for a shard the map does not name.
var errNotInMap = errors.New("cluster: shard not in the shard map")

// checkShard returns errNotInMap (wrapped, with the map's shards) when
// the cluster has a map that does not name shard, and the map otherwise
// (the zero map when there is none).
func checkShard(ctx context.Context, js jetstream.JetStream, shard string) (ShardMap, error) {
	m, found, err := readShardMap(ctx, js)
	if err != nil {
		return ShardMap{}, err
	}
	if found && !m.Has(shard) {
		return ShardMap{}, fmt.Errorf("%w: the cluster's shards are %v, not %s", errNotInMap, m.Shards, shard)
	}
	return m, nil
}
