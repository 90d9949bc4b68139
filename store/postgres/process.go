package postgres

import (
	"context"
	"fmt"

	"allot/internal/procfs"
)

// ServerPID returns the postmaster's pid (store.ServerProcess): every
// backend is its child, so the bench measures the postmaster's process
// tree. The server does not report the postmaster's pid to a client that
// may not read its data directory, so it is the parent of this
// connection's backend (pg_backend_pid), read from /proc: which also
// proves the server runs on this machine.
func (s *Store) ServerPID(ctx context.Context) (int, error) {
	var backend int
	if err := s.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0, fmt.Errorf("postgres: pg_backend_pid: %w", err)
	}
	if err := procfs.CheckServer(backend, "postgres"); err != nil {
		return 0, fmt.Errorf("postgres: backend: %w", err)
	}
	st, err := procfs.FS("/proc").Stat(backend)
	if err != nil {
		return 0, fmt.Errorf("postgres: backend %d: %w", backend, err)
	}
	if err := procfs.CheckServer(st.PPID, "postgres"); err != nil {
		return 0, fmt.Errorf("postgres: postmaster: %w", err)
	}
	return st.PPID, nil
}
