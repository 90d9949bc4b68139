package mysql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"allot/internal/procfs"
)

// ServerPID returns mariadbd's pid (store.ServerProcess), from the pid
// file the server names in @@pid_file (relative to @@datadir when not
// absolute). The file must be readable here and name a live mariadbd or
// mysqld: a server on another host has neither.
func (s *Store) ServerPID(ctx context.Context) (int, error) {
	var pidFile, dataDir string
	if err := s.db.QueryRowContext(ctx, `SELECT @@pid_file, @@datadir`).Scan(&pidFile, &dataDir); err != nil {
		return 0, fmt.Errorf("mysql: @@pid_file: %w", err)
	}
	if !filepath.IsAbs(pidFile) {
		pidFile = filepath.Join(dataDir, pidFile)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, fmt.Errorf("mysql: server pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("mysql: pid file %s holds %q, not a pid", pidFile, strings.TrimSpace(string(data)))
	}
	if err := procfs.CheckServer(pid, "mariadbd", "mysqld"); err != nil {
		return 0, fmt.Errorf("mysql: %w", err)
	}
	return pid, nil
}
