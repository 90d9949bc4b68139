package remote

import (
	"context"

	"allot/store"
)

var (
	_ store.Pinger = (*Session)(nil)
	_ store.Pinger = (*sharedSession)(nil)
)

// Ping sends PING on the session's connection.
func (se *Session) Ping(ctx context.Context) error {
	defer se.release()
	cn, err := se.connection(ctx)
	if err != nil {
		return err
	}
	if err := cn.Ping(ctx); err != nil {
		return se.store.wrap(err)
	}
	return nil
}

// Ping sends PING through the shared connection, batched with the other
// sessions' calls as their ops are.
func (se *sharedSession) Ping(ctx context.Context) error {
	b, _, err := se.store.sh.get()
	if err == nil {
		err = b.Ping(ctx)
	}
	if err != nil {
		return se.store.wrap(err)
	}
	return nil
}
