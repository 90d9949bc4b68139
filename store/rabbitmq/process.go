package rabbitmq

import (
	"context"
	"fmt"
	"net"

	"allot/internal/procfs"
)

// ServerPID returns the RabbitMQ node's pid (store.ServerProcess): the
// Erlang VM (beam.smp) holding the listening socket of the port this store
// is connected to. AMQP does not tell a client the server's pid, so it is
// found from /proc; a server on another host gives an error.
func (s *Store) ServerPID(context.Context) (int, error) {
	addr, ok := s.conn.RemoteAddr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		return 0, fmt.Errorf("rabbitmq: the server at %v is not on this machine's loopback", s.conn.RemoteAddr())
	}
	pid, err := procfs.FS("/proc").ListenerPID(addr.Port)
	if err != nil {
		return 0, fmt.Errorf("rabbitmq: %w", err)
	}
	if err := procfs.CheckServer(pid, "beam"); err != nil {
		return 0, fmt.Errorf("rabbitmq: %w", err)
	}
	return pid, nil
}
