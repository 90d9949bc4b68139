package remote

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"allot/client"
	"allot/inventory"
	"allot/store"
	"allot/store/rowrecords"
)

var _ store.RWStore = (*Store)(nil)

// RWOpen keeps the records of workloads rw and kv as rows of the server,
// over RESP (package rowrecords says how each request maps onto the wire
// contract's commands: STOCK.GET, STOCK.SET, RELEASE). Each session has a
// connection of its own; allot-mux's sessions (Options.Shared) send
// through the store's shared connection instead, as its inventory
// sessions do and as the result's description says. Load and Records,
// untimed, have a connection of their own either way.
//
// On a cluster the space's calls go to the primary (recordsNode): the one
// the store's last Load found, else the one the first refusal names.
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	info, err := s.client.Hello(ctx)
	if err != nil {
		return nil, s.wrap(err)
	}
	setting, err := rowrecords.Check(opts, store.Durability(info["durability"]))
	if err != nil {
		return nil, err
	}
	node := &recordsNode{}
	node.set(s.sessionAddr())
	openConn := func(ctx context.Context) (rowrecords.Ops, error) {
		c, err := client.New(s.oneConn(node.get()))
		if err != nil {
			return nil, fmt.Errorf("store/remote: %w", err)
		}
		o := &connOps{s: s, node: node, client: c}
		cn, err := o.conn(ctx) // connected now, idle in the pool until the first call
		if err != nil {
			o.Close()
			return nil, err
		}
		cn.Close()
		return o, nil
	}
	admin, err := openConn(ctx)
	if err != nil {
		return nil, err
	}
	open := openConn
	if s.sh != nil {
		if _, _, err := s.sh.get(); err != nil {
			admin.Close()
			return nil, s.wrap(err)
		}
		open = func(context.Context) (rowrecords.Ops, error) { return &sharedOps{s: s}, nil }
	}
	return rowrecords.NewSpace(setting, admin, open), nil
}

// recordsNode is where the calls of a record space's connections go: the
// store's address, or the primary of a cluster that the store's last Load
// found or a "not primary" refusal named since. The space's admin and
// sessions share it, so that what one of them learns serves them all:
// every connection moves there before its next call. The read-back
// (Records) so reads at the primary the writes went to: a standby applies
// the log a moment behind it, and would miss the last acknowledged
// writes, which the checker would report lost.
type recordsNode struct{ addr atomic.Pointer[string] }

func (n *recordsNode) get() string     { return *n.addr.Load() }
func (n *recordsNode) set(addr string) { n.addr.Store(&addr) }

// connOps is one connection, taken from its pool (of one) for each call
// and given back after it, as a Session's (Session.connection): the pool
// closes one a call failed on, and checks one that sat idle. Its calls
// come one at a time (a session's; the admin's Load and Records).
type connOps struct {
	s      *Store
	node   *recordsNode
	client *client.Client // PoolSize 1, at node's address but while it moves
}

// conn takes the connection for one call, at the space's node (moving
// there first when the node changed); the caller closes it after.
func (o *connOps) conn(ctx context.Context) (*client.Conn, error) {
	if addr := o.node.get(); addr != o.client.Addr() {
		c, err := client.New(o.s.oneConn(addr))
		if err != nil {
			return nil, fmt.Errorf("store/remote: %w", err)
		}
		o.client.Close()
		o.client = c
	}
	cn, err := o.client.Conn(ctx)
	if err != nil {
		return nil, o.s.wrap(err)
	}
	return cn, nil
}

// Do runs op. A node of a cluster that is not the primary refuses a
// mutation naming the primary (never applied): the space moves there and
// op goes again, as Session.op does; a further refusal (a failover under
// way) is followed after a growing pause, up to client.RetriesMax hops.
func (o *connOps) Do(ctx context.Context, op inventory.Op) (inventory.Result, error) {
	for hop := 0; ; hop++ {
		cn, err := o.conn(ctx)
		if err != nil {
			return inventory.Result{}, err
		}
		r, err := cn.Do(ctx, op, nil)
		cn.Close()
		if err == nil {
			return r, nil
		}
		addr, ok := client.NextPrimary(ctx, err, hop, o.client.Addr())
		if !ok {
			return r, o.s.wrap(err)
		}
		o.node.set(addr)
	}
}

// Pipeline runs ops in one round trip. A pipeline a node refuses as "not
// primary" goes again to the primary named, as Do's op does, when its ops
// are sets and reads only (the records' pipelines: Load, Records,
// PipelineWrite, PipelineRead): a standby applied none of its sets, and
// were some applied (a primary that lost its lease within the pipeline),
// setting them again leaves every row at a value written to it. A
// pipeline of other ops fails (its outcome unknown, as any failed
// pipeline's), and the next call goes to the primary.
func (o *connOps) Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error {
	for hop := 0; ; hop++ {
		cn, err := o.conn(ctx)
		if err != nil {
			return err
		}
		err = cn.Pipeline(ctx, ops, results)
		cn.Close()
		if err == nil {
			return nil
		}
		refusal := err
		var pr *client.PipelineRefusal
		if errors.As(err, &pr) {
			refusal = pr.Refusal
		}
		if !setsAndReads(ops) {
			if addr, ok := client.PrimaryOf(refusal); ok {
				o.node.set(addr)
			}
			return o.s.wrap(err)
		}
		addr, ok := client.NextPrimary(ctx, refusal, hop, o.client.Addr())
		if !ok {
			return o.s.wrap(err)
		}
		o.node.set(addr)
	}
}

// setsAndReads reports whether every op of ops is a STOCK.SET or a
// STOCK.GET: ops that may go again.
func setsAndReads(ops []inventory.Op) bool {
	for i := range ops {
		if k := ops[i].Kind; k != inventory.KindStock && k != inventory.KindGet {
			return false
		}
	}
	return true
}

func (o *connOps) Close() error { return o.client.Close() }
