package embedded

import (
	"context"
	"os"
)

// ServerPID returns the bench's own pid (store.ServerProcess): the engine
// runs in it, so the resource figures include the bench's own work too.
func (s *Store) ServerPID(context.Context) (int, error) { return os.Getpid(), nil }
