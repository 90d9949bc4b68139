//go:build !linux

package main

import (
	"errors"
	"net"
)

type loop struct{ journal *journal }

func newLoop(*net.TCPListener) (*loop, error) {
	return nil, errors.New("respnull runs on Linux only (epoll)")
}

func (*loop) run() error { return nil }
func (*loop) close()     {}

type journal struct{}

func openJournal(string) (*journal, error) {
	return nil, errors.New("respnull runs on Linux only (epoll)")
}

func (*journal) close() error { return nil }
