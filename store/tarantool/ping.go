package tarantool

import (
	"context"
	"fmt"

	gotarantool "github.com/tarantool/go-tarantool/v2"

	"allot/store"
)

var _ store.Pinger = (*session)(nil)

// Ping sends an IPROTO ping on the shared connection, as the session's
// calls go.
func (s *session) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := s.conn.Do(gotarantool.NewPingRequest()).Get(); err != nil {
		return fmt.Errorf("tarantool: ping: %w", err)
	}
	return nil
}
