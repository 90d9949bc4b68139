package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Holder is the node a shard's lease names: its id and the addresses it
// advertises.
type Holder struct {
	Node string `json:"node"`
	RESP string `json:"resp"`
	HTTP string `json:"http"`
}

// Inspector reads a shard's lease from outside the cluster (a bench, an
// operator's tool), without joining it.
type Inspector struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	names names
}

// Inspect connects to the NATS servers urls (comma-separated) for shard.
func Inspect(urls, shard string) (*Inspector, error) {
	n, err := namesOf(shard)
	if err != nil {
		return nil, err
	}
	nc, js, err := connect(urls, "allot inspector")
	if err != nil {
		return nil, err
	}
	return &Inspector{nc: nc, js: js, names: n}, nil
}

// Primary returns the lease's holder; found is false when nobody holds
// it (it lapsed, or the shard has no lease bucket yet).
func (in *Inspector) Primary(ctx context.Context) (h Holder, found bool, err error) {
	return readHolder(ctx, in.js, in.names)
}

// readHolder reads the lease of the shard named n.
func readHolder(ctx context.Context, js jetstream.JetStream, n names) (h Holder, found bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	kv, err := js.KeyValue(rctx, n.lease)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("cluster: the lease bucket %s: %w", n.lease, err)
	}
	e, err := kv.Get(rctx, leaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("cluster: read the lease: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		return h, false, fmt.Errorf("cluster: the lease holds %q: %w", e.Value(), err)
	}
	return h, true, nil
}

// DeleteShard removes the shard's stream, lease bucket and snapshots: for
// a shard made for one run (the bench's), once its nodes are stopped.
func (in *Inspector) DeleteShard(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var errs []error
	for _, err := range []error{
		in.js.DeleteStream(rctx, in.names.stream),
		in.js.DeleteKeyValue(rctx, in.names.lease),
		in.js.DeleteObjectStore(rctx, in.names.snaps),
	} {
		if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrBucketNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes the connection.
func (in *Inspector) Close() { in.nc.Close() }
