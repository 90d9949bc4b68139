package remote

import (
	"context"
	"errors"

	"allot/catalog"
	"allot/client"
	"allot/inventory"
	"allot/store"
)

// Session is one worker's connection. After a failed call (the connection
// broke or the context ended) the next call takes a fresh connection, so
// that one lost reply does not fail the rest of the run.
type Session struct {
	store  *Store
	client *client.Client // PoolSize 1: this session's connection
	conn   *client.Conn   // taken for the call in progress (connection), nil between calls
	depth  int
	// refusals counts the pipelines refused as "not primary" since the
	// last that went through.
	refusals int
	// OpCheckout gives holds and orders, one command each (checkout.go).
	store.OpCheckout
}

var _ store.Pipeliner = (*Session)(nil)

// connection takes the session's connection from its pool (of one) for
// one call; release gives it back when the call is done. It is never kept
// between calls: the pool closes a connection a call failed on (its
// replies out of step), and before it hands out one that sat idle it
// checks that the server did not close it, or send bytes nobody asked
// for, meanwhile (a restart, a node's new term). A call sent into such a
// connection would fail with an unknown outcome although the server never
// read it. Between calls in quick succession the pool skips the check
// (client.Client.Conn).
func (se *Session) connection(ctx context.Context) (*client.Conn, error) {
	se.release()
	cn, err := se.client.Conn(ctx)
	if err != nil {
		return nil, se.store.wrap(err)
	}
	se.conn = cn
	return cn, nil
}

// release gives the connection of the call that ended back to the pool.
func (se *Session) release() {
	if se.conn != nil {
		se.conn.Close()
		se.conn = nil
	}
}

// Capture takes n units of group g.
func (se *Session) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	return se.op(ctx, inventory.Capture(g, n), lines)
}

// Release adds n units back to row k.
func (se *Session) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	return se.op(ctx, inventory.Release(k, n), nil)
}

// op runs one op on the session's connection. A node of a cluster that is
// not the primary refuses a mutation naming the primary (never applied):
// the session moves there and sends it again, as client.Client.Do does;
// a further refusal (a failover under way) is followed after a growing
// pause, up to client.RetriesMax of them.
func (se *Session) op(ctx context.Context, op inventory.Op, lines []inventory.Line) (inventory.Result, error) {
	defer se.release()
	for hop := 0; ; hop++ {
		cn, err := se.connect(ctx)
		if err != nil {
			return inventory.Result{}, err
		}
		r, err := cn.Do(ctx, op, lines)
		if err == nil {
			return r, nil
		}
		addr, ok := client.NextPrimary(ctx, err, hop, se.client.Addr())
		if !ok {
			return r, se.store.wrap(err)
		}
		if addr != se.client.Addr() {
			if err := se.moveTo(addr); err != nil {
				return r, se.store.wrap(err)
			}
		}
	}
}

// connect returns the session's connection. A node that cannot be reached
// (the primary the session moved to died) is given up, after a growing
// pause, for the node the store was opened at, which names the next
// primary; up to client.RetriesMax attempts. So a failover costs each
// worker a few paced attempts, not a spin through refused connections.
func (se *Session) connect(ctx context.Context) (*client.Conn, error) {
	for attempt := 0; ; attempt++ {
		cn, err := se.connection(ctx)
		if err == nil || attempt >= client.RetriesMax || !errors.Is(err, store.ErrServerDown) || !client.WaitRetry(ctx, attempt) {
			return cn, err
		}
		if se.client.Addr() != se.store.addr {
			if err := se.moveTo(se.store.addr); err != nil {
				return nil, se.store.wrap(err)
			}
		}
	}
}

// moveTo makes the session's connection one to addr.
func (se *Session) moveTo(addr string) error {
	c, err := client.New(se.store.oneConn(addr))
	if err != nil {
		return err
	}
	se.release()
	se.client.Close()
	se.client = c
	return nil
}

// Pipeline runs ops in one round trip; see Pipeliner.
//
// A pipeline a node refuses as not primary fails (what it did is
// unknown, as for any failed pipeline), and the session's next call goes
// to the primary named: at once the first time, after a growing pause
// when refusals follow one another (a failover under way), so that a
// pipelined worker waits out the election instead of spinning.
func (se *Session) Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error {
	defer se.release()
	cn, err := se.connect(ctx)
	if err != nil {
		return err
	}
	if err := cn.Pipeline(ctx, ops, results); err != nil {
		// A refusal inside a longer pipeline leaves the ops' outcome
		// unknown (the error stays so), but still names the primary.
		if addr, ok := client.PrimaryNamed(err); ok {
			if se.refusals > 0 {
				client.WaitRetry(ctx, min(se.refusals-1, client.RetriesMax))
			}
			se.refusals++
			if addr != se.client.Addr() {
				se.moveTo(addr) // on failure the next call finds no connection and says so
			}
		}
		return se.store.wrap(err)
	}
	se.refusals = 0
	return nil
}

// PipelineDepth returns store.Config.Pipeline.
func (se *Session) PipelineDepth() int { return se.depth }

// Close closes the session's connection.
func (se *Session) Close() error {
	se.release()
	return se.client.Close()
}

var _ store.SearchSession = (*sharedSession)(nil)

// sharedSession sends its ops through the store's Batcher.
type sharedSession struct {
	store *Store
	store.OpCheckout
}

func (se *sharedSession) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	r, err := se.store.sh.do(ctx, inventory.Capture(g, n), lines)
	if err != nil {
		return r, se.store.wrap(err)
	}
	return r, nil
}

func (se *sharedSession) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	r, err := se.store.sh.do(ctx, inventory.Release(k, n), nil)
	if err != nil {
		return r, se.store.wrap(err)
	}
	return r, nil
}

// Search sends SEARCH through the store's Batcher.
func (se *sharedSession) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	b, _, err := se.store.sh.get()
	if err == nil {
		out, err = b.Search(ctx, q, out)
	}
	if err != nil {
		return out, se.store.wrap(err)
	}
	return out, nil
}

func (se *sharedSession) Close() error { return nil }
