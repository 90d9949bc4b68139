package memory

import (
	"context"
	"os"
)

// ServerPID returns the bench's own pid (store.ServerProcess): the state
// machine runs in it, so the resource figures include the bench's own work.
func (s *Store) ServerPID(context.Context) (int, error) { return os.Getpid(), nil }
