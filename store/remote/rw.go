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
// connection of its own.
func (s *Store) RWOpen(ctx context.Context, opts store.RWOptions) (store.RWSpace, error) {
	info, err := s.client.Hello(ctx)
	if err != nil {
		return nil, s.wrap(err)
	}
	setting, err := rowrecords.Check(opts, store.Durability(info["durability"]))
	if err != nil {
		return nil, err
	}
	open := func(ctx context.Context) (rowrecords.Ops, error) {
		cfg := s.clientCfg
		cfg.PoolSize = 1
		c, err := client.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("store/remote: %w", err)
		}
		o := &connOps{s: s, client: c}
		if _, err := o.conn(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return o, nil
	}
	admin, err := open(ctx)
	if err != nil {
		return nil, err
	}
	return rowrecords.NewSpace(setting, admin, open), nil
}

// connOps is one connection; after a failed call the next takes a fresh
// one.
type connOps struct {
	s      *Store
	client *client.Client
	cn     *client.Conn
}

func (o *connOps) conn(ctx context.Context) (*client.Conn, error) {
	if o.cn != nil && o.cn.Err() == nil {
		return o.cn, nil
	}
	if o.cn != nil {
		o.cn.Close()
		o.cn = nil
	}
	cn, err := o.client.Conn(ctx)
	if err != nil {
		return nil, o.s.wrap(err)
	}
	o.cn = cn
	return cn, nil
}

func (o *connOps) Do(ctx context.Context, op inventory.Op) (inventory.Result, error) {
	cn, err := o.conn(ctx)
	if err != nil {
		return inventory.Result{}, err
	}
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
	if err := cn.Pipeline(ctx, ops, results); err != nil {
		return o.s.wrap(err)
	}
	return nil
}

func (o *connOps) Close() error {
	if o.cn != nil {
		o.cn.Close()
	}
	return o.client.Close()
}
