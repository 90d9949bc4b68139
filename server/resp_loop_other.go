//go:build !linux

package server

import (
	"errors"
	"net"
)

// The event loop is Linux's (epoll, resp_loop_linux.go); elsewhere the
// server serves a goroutine per connection, and these are never reached.

const loopAvailable = false

var errNoLoop = errors.New("server: the RESP event loop runs on Linux only")

type respLoop struct{}

func newRESPLoop(*Server) (*respLoop, error)               { return nil, errNoLoop }
func (*respLoop) close()                                   {}
func (*respLoop) run()                                     {}
func (*respLoop) signal()                                  {}
func (*respLoop) wait()                                    {}
func (*respLoop) add(*respConn)                            {}
func adoptFD(net.Conn) (int, error)                        { return -1, errNoLoop }
func newLoopConn(*Server, *respLoop, int, int64) *respConn { return nil }
func (*respConn) armNotify()                               {}
func shutdownFD(int)                                       {}
func writeFD(int, []byte) error                            { return errNoLoop }
func writeFDNow(int, []byte) (int, error)                  { return 0, errNoLoop }
