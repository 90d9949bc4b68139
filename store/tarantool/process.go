package tarantool

import (
	"context"
	"fmt"

	gotarantool "github.com/tarantool/go-tarantool/v2"

	"allot/internal/procfs"
)

// ServerPID returns tarantool's pid (store.ServerProcess): box.info.pid,
// evaluated on the server (the bench's user may eval), checked against
// /proc: a server on another host is refused.
func (s *Store) ServerPID(ctx context.Context) (int, error) {
	var reply []int
	if err := s.conn.Do(gotarantool.NewEvalRequest("return box.info.pid").Context(ctx)).GetTyped(&reply); err != nil || len(reply) != 1 {
		return 0, fmt.Errorf("tarantool: box.info.pid: %v (reply %v)", err, reply)
	}
	if err := procfs.CheckServer(reply[0], "tarantool"); err != nil {
		return 0, fmt.Errorf("tarantool: %w", err)
	}
	return reply[0], nil
}
