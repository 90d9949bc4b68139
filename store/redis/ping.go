package redis

import (
	"context"
	"fmt"

	"allot/store"
)

var _ store.Pinger = (*session)(nil)

// Ping sends PING on the session's connection.
func (s *session) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: ping: %w", err)
	}
	return nil
}
