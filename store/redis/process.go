package redis

import (
	"context"
	"fmt"
	"strconv"

	"allot/internal/procfs"
)

// ServerPID returns redis-server's pid (store.ServerProcess), from INFO
// server's process_id, checked against /proc: a server on another host
// is refused.
func (s *Store) ServerPID(ctx context.Context) (int, error) {
	info, err := s.client.Info(ctx, "server").Result()
	if err != nil {
		return 0, fmt.Errorf("redis: INFO server: %w", err)
	}
	pid, err := strconv.Atoi(infoField(info, "process_id"))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("redis: INFO server has no process_id")
	}
	if err := procfs.CheckServer(pid, "redis-server", "redis"); err != nil {
		return 0, fmt.Errorf("redis: %w", err)
	}
	return pid, nil
}
