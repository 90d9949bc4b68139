package main

import (
	"fmt"
	"strings"
	"syscall"

	"allot/server"
)

// raiseFileLimit raises the soft file limit (RLIMIT_NOFILE) to the hard
// one when it is below need, and returns the soft limit then. Go raises
// it to one below the hard limit at start (since Go 1.19, package
// syscall), so this finds more only under a limit set after that
// (prlimit) or an older runtime.
func raiseFileLimit(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("reading the file limit (RLIMIT_NOFILE): %w", err)
	}
	if lim.Cur < need && lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	return lim.Cur, nil
}

// checkFileLimit refuses a configuration (validated) whose connections
// and reserve (server.Config.FilesNeeded) do not fit the file limit: a
// server past it fails accepts, snapshots and journal segment rotations
// with "too many open files", and a failed rotation stops the engine.
func checkFileLimit(cfg *server.Config, limit uint64) error {
	need := cfg.FilesNeeded()
	if limit >= need {
		return nil
	}
	var names []string
	for _, p := range []struct{ name, addr string }{{"RESP", cfg.RESPAddr}, {"HTTP", cfg.HTTPAddr}} {
		if p.addr != "" {
			names = append(names, p.name)
		}
	}
	protocols := uint64(len(names))
	fix := "lower --connections-max"
	if n := fittingConnectionsMax(cfg, limit); n > 0 {
		fix += fmt.Sprintf(" to at most %d", n)
	}
	return fmt.Errorf("the file limit (RLIMIT_NOFILE, ulimit -n) is %d, below the %d descriptors this server may hold: --connections-max %d for %s (%d) and %d for the journal, snapshots and change-stream followers; raise the limit (ulimit -n, LimitNOFILE= in a systemd unit) or %s",
		limit, need, cfg.ConnectionsMax, strings.Join(names, " and for "), protocols*uint64(cfg.ConnectionsMax), server.FilesReserve, fix)
}

// fittingConnectionsMax is the most connections per protocol served that
// fit limit with the reserve; 0 when none do.
func fittingConnectionsMax(cfg *server.Config, limit uint64) int {
	protocols := uint64(0)
	for _, addr := range []string{cfg.RESPAddr, cfg.HTTPAddr} {
		if addr != "" {
			protocols++
		}
	}
	if protocols == 0 || limit <= server.FilesReserve {
		return 0
	}
	return int((limit - server.FilesReserve) / protocols)
}
