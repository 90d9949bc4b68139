package remote

import (
	"context"
	"fmt"

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
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	info, err := s.client.Hello(ctx)
	if err != nil {
		return nil, s.wrap(err)
	}
	setting, err := rowrecords.Check(opts, store.Durability(info["durability"]))
	if err != nil {
		return nil, err
	}
	openConn := func(ctx context.Context) (rowrecords.Ops, error) {
		cfg := s.clientCfg
		cfg.PoolSize = 1
		c, err := client.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("store/remote: %w", err)
		}
		o := &connOps{s: s, client: c}
		cn, err := o.conn(ctx) // connected now, idle in the pool until the first call
		if err != nil {
			c.Close()
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

// connOps is one connection, taken from its pool (of one) for each call
// and given back after it, as a Session's (Session.connection): the pool
// closes one a call failed on, and checks one that sat idle.
type connOps struct {
	s      *Store
	client *client.Client
}

// conn takes the connection for one call; the caller closes it after.
func (o *connOps) conn(ctx context.Context) (*client.Conn, error) {
	cn, err := o.client.Conn(ctx)
	if err != nil {
		return nil, o.s.wrap(err)
	}
	return cn, nil
}

func (o *connOps) Do(ctx context.Context, op inventory.Op) (inventory.Result, error) {
	cn, err := o.conn(ctx)
	if err != nil {
		return inventory.Result{}, err
	}
	defer cn.Close()
	r, err := cn.Do(ctx, op, nil)
	if err != nil {
		return r, o.s.wrap(err)
	}
	return r, nil
}

func (o *connOps) Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error {
	cn, err := o.conn(ctx)
	if err != nil {
		return err
	}
	defer cn.Close()
	if err := cn.Pipeline(ctx, ops, results); err != nil {
		return o.s.wrap(err)
	}
	return nil
}

func (o *connOps) Close() error { return o.client.Close() }
