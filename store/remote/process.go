package remote

import (
	"context"
	"errors"
)

// PID returns the child's process id.
func (ch *Process) PID() int { return ch.cmd.Process.Pid }

// ServerPID returns the pid of the allot serve child this store started
// (store.ServerProcess). A store given an --addr did not start its server
// and cannot tell which process serves it.
func (s *Store) ServerPID(context.Context) (int, error) {
	if s.child == nil {
		return 0, errors.New("store/remote: the server at --addr was not started by the bench; its pid is unknown")
	}
	return s.child.PID(), nil
}
